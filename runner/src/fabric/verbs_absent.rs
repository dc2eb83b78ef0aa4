//! The verbs fabric in a build without the `verbs` feature: the names a caller of the real
//! one uses ([`super::verbs`] in a build with it), none of which can be made. Each
//! constructor fails with [`Backend::require`]'s message, which says how to build one, and
//! [`VerbsFabric`] and [`Device`] are uninhabited, so code written against them compiles in
//! every build and no caller needs a `cfg`.

use super::{Clocked, Fabric, FabricReport, Polling, PollingStats, SimFabric};
use crate::request::Backend;
use xrdma::{RcParams, Span, Time};
use xrdma_reports as rep;
use xrdma_scenario::VerbsSection;

/// Whether this build has the verbs backend: not this one.
pub const BUILT: bool = false;

/// An RDMA device: none can be opened in this build.
#[derive(Clone, Debug)]
pub enum Device {}

/// Hosts on one RDMA device: none can be made in this build.
pub enum VerbsFabric {}

/// The error of every constructor here: [`Backend::require`]'s, which names the build
/// command and the packages it needs.
fn absent<T>() -> anyhow::Result<T> {
    Backend::Verbs.require()?;
    anyhow::bail!("this build has no verbs backend")
}

/// Open the device the environment names.
///
/// # Errors
/// Always: this build has no verbs backend.
pub fn open_env_device() -> anyhow::Result<Device> {
    absent()
}

impl VerbsFabric {
    /// # Errors
    /// Always: this build has no verbs backend.
    pub fn new(_hosts: u32, _section: &VerbsSection) -> anyhow::Result<Self> {
        absent()
    }

    /// # Errors
    /// Always: this build has no verbs backend.
    pub fn with_rc(_hosts: u32, _section: &VerbsSection, _rc: RcParams) -> anyhow::Result<Self> {
        absent()
    }

    /// # Errors
    /// Always: this build has no verbs backend.
    pub fn for_tool(_hosts: u32, _timeout: Span) -> anyhow::Result<Self> {
        absent()
    }

    /// Never returns: no device exists to call it with.
    ///
    /// # Errors
    /// None can happen.
    pub fn with_device(device: &Device, _hosts: u32, _run_timeout: Span) -> anyhow::Result<Self> {
        match *device {}
    }

    /// Never called: no fabric exists.
    pub fn start_clock(&mut self) {
        match *self {}
    }

    /// Never called: no fabric exists.
    pub fn device(&self) -> &Device {
        match *self {}
    }

    /// Never called: no fabric exists.
    pub fn set_polling(&mut self, _polling: Polling) {
        match *self {}
    }

    /// Never called: no fabric exists.
    pub fn polling_stats(&self) -> Option<PollingStats> {
        match *self {}
    }
}

impl Clocked for VerbsFabric {
    fn backend(&self) -> rep::Backend {
        match *self {}
    }
    fn hosts(&self) -> u32 {
        match *self {}
    }
    fn now(&self) -> Time {
        match *self {}
    }
    fn advance(&mut self, _ready: &mut Vec<u32>, _settled: bool) -> bool {
        match *self {}
    }
    fn set_wake(&mut self, _h: u32, _at: Time) {
        match *self {}
    }
}

impl Fabric for VerbsFabric {
    type Host<'a> = <SimFabric as Fabric>::Host<'a>;

    fn host(&mut self, _h: u32) -> Self::Host<'_> {
        match *self {}
    }
}

impl FabricReport for VerbsFabric {
    fn network(&self) -> rep::NetworkCounters {
        match *self {}
    }
    fn sim_info(&self) -> Option<rep::SimInfo> {
        match *self {}
    }
    fn transport_info(&self) -> Option<rep::TransportInfo> {
        match *self {}
    }
    fn path(&self) -> rep::PathModel {
        match *self {}
    }
}
