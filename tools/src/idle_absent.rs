//! `xrdma idle` in a build without the verbs backend: the same entry point, which says how to
//! build one (the tool measures hybrid polling on an RDMA device, and nothing else).

use anyhow::Result;
use std::process::ExitCode;

/// `xrdma idle`: needs the verbs backend.
///
/// # Errors
/// Always: this build has no verbs backend (the message names the build command).
pub fn cli(_seconds: f64, _timeout: xrdma::Span) -> Result<ExitCode> {
    xrdma_runner::request::Backend::Verbs.require()?;
    anyhow::bail!("this build has no verbs backend")
}
