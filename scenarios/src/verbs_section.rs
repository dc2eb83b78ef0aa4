//! The `verbs:` block: where the real-RDMA backend runs (the simulator ignores it).
//!
//! ```yaml
//! verbs:
//!   device: rxe0        # as ibv_devices names it; default: the first device
//!   port: 1             # default 1
//!   gid-index: 1        # default: a routable RoCE v2 GID (IPv4-mapped, else IPv6 ULA/global)
//!   run-timeout: 60s    # wall-clock limit of one run; default 60 s
//!   ranks:              # optional: run the scenario as several processes
//!     - { address: "10.0.0.1:18515", hosts: [0] }        # rank 0: the receiver
//!     - { address: "10.0.0.2:18515", hosts: [1, 2, 3] }  # rank 1: three senders
//! ```
//!
//! `ranks` splits the workload's hosts over processes (`xrdma run --backend verbs FILE --rank
//! R` runs rank R). Each rank lists the scenario hosts it runs and the `IP:port` its TCP
//! bootstrap listener binds to; the ranks exchange QP addresses there. Every
//! workload host belongs to exactly one rank. Without `ranks` the whole scenario runs in one
//! process.

use crate::check::{check_items, field_error, under, FieldError};
use crate::units::Span;
use serde::Deserialize;
use std::net::SocketAddr;

/// Device, port and GID of the real-RDMA backend, its run limit, and how the hosts are split
/// over processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsSection {
    /// Device name (`rxe0`, `mlx5_0`); `None`: the first device.
    pub device: Option<String>,
    /// Port number (1-based); `None`: 1.
    pub port: Option<u8>,
    /// GID index (any non-empty entry, link-local included); `None`: the backend chooses a
    /// RoCE v2 GID with an IPv4-mapped address, else a unique-local or global IPv6 one.
    pub gid_index: Option<u32>,
    /// Wall-clock limit of one run; messages not finished by then are reported missing.
    pub run_timeout: xrdma::Span,
    /// The processes the scenario runs as, in rank order (rank = position); empty: one
    /// process runs every host.
    pub ranks: Vec<RankSpec>,
}

impl Default for VerbsSection {
    fn default() -> Self {
        VerbsSection {
            device: None,
            port: None,
            gid_index: None,
            run_timeout: xrdma::Span::from_ms(60_000),
            ranks: Vec::new(),
        }
    }
}

impl VerbsSection {
    /// The rank that runs scenario host `host` (`None`: no rank lists it, or no `ranks`).
    pub fn rank_of(&self, host: u32) -> Option<u32> {
        self.ranks
            .iter()
            .position(|r| r.hosts.contains(&host))
            .map(|p| p as u32)
    }

    /// Check `ranks` against a workload of `hosts` hosts (indices `0..hosts`): every host in
    /// exactly one rank (uniqueness is already checked while parsing), and no rank listing a
    /// host the workload does not have. No `ranks`: nothing to check.
    ///
    /// # Errors
    /// A message naming the first host that is missing or out of range.
    pub fn check_hosts(&self, hosts: u32) -> Result<(), String> {
        if self.ranks.is_empty() {
            return Ok(());
        }
        for (r, spec) in self.ranks.iter().enumerate() {
            if let Some(h) = spec.hosts.iter().find(|&&h| h >= hosts) {
                return Err(format!(
                    "rank {r} lists host {h}, but the workload has hosts 0..={}",
                    hosts.saturating_sub(1)
                ));
            }
        }
        if let Some(h) = (0..hosts).find(|&h| self.rank_of(h).is_none()) {
            return Err(format!(
                "workload host {h} is in no rank; every host 0..={} must be in exactly one",
                hosts.saturating_sub(1)
            ));
        }
        Ok(())
    }
}

/// One process of a multi-process run: its bootstrap address and the hosts it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSpec {
    /// Where this rank's TCP bootstrap listener binds and where the other ranks reach it
    /// (`IP:port`, IPv4 or `[IPv6]:port`).
    pub address: SocketAddr,
    /// The scenario hosts this rank runs, non-empty, in the order written.
    pub hosts: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a rank `{ address, hosts }`)"
)]
struct RawRank {
    address: String,
    hosts: Vec<u32>,
}

fn check_rank(raw: RawRank) -> Result<RankSpec, FieldError> {
    let address = raw.address.trim().parse::<SocketAddr>().map_err(|_| {
        field_error(
            "address",
            format!(
                "{:?} is not an `IP:port` address (e.g. \"10.0.0.1:18515\")",
                raw.address
            ),
        )
    })?;
    if address.port() == 0 {
        return Err(field_error(
            "address",
            format!("{address}: port 0 is not a port a peer can connect to"),
        ));
    }
    if raw.hosts.is_empty() {
        return Err(field_error("hosts", "a rank runs at least one host"));
    }
    let mut seen = raw.hosts.clone();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
        return Err(field_error(
            "hosts",
            format!("host {} is listed twice", w[0]),
        ));
    }
    Ok(RankSpec {
        address,
        hosts: raw.hosts,
    })
}

/// The `verbs:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (the RDMA device `{ device, port, gid-index, run-timeout, ranks }`)"
)]
pub(crate) struct RawVerbs {
    device: Option<String>,
    port: Option<u8>,
    gid_index: Option<u32>,
    run_timeout: Option<Span>,
    #[serde(default)]
    ranks: Vec<RawRank>,
}

/// Checks the `verbs:` block: the device, the port, the run timeout and the ranks (each on
/// its own, then that no two share a host or an address).
pub(crate) fn check_verbs(raw: RawVerbs) -> Result<VerbsSection, FieldError> {
    let ranks = check_items(raw.ranks, check_rank).map_err(under("ranks"))?;
    if raw.port == Some(0) {
        return Err(field_error("port", "ports are numbered from 1"));
    }
    if raw.device.as_deref().is_some_and(|d| d.trim().is_empty()) {
        return Err(field_error("device", "must not be empty"));
    }
    let d = VerbsSection::default();
    let run_timeout = raw.run_timeout.map_or(d.run_timeout, |t| t.0);
    if run_timeout == xrdma::Span::ZERO {
        return Err(field_error("run-timeout", "must be greater than 0"));
    }
    for (i, a) in ranks.iter().enumerate() {
        for (j, b) in ranks.iter().enumerate().skip(i + 1) {
            if let Some(h) = b.hosts.iter().find(|h| a.hosts.contains(h)) {
                return Err(field_error(
                    "ranks",
                    format!("host {h} is in rank {i} and rank {j}; a host runs in one rank"),
                ));
            }
            if a.address == b.address {
                return Err(field_error(
                    "ranks",
                    format!("ranks {i} and {j} both listen on {}", a.address),
                ));
            }
        }
    }
    Ok(VerbsSection {
        device: raw.device,
        port: raw.port,
        gid_index: raw.gid_index,
        run_timeout,
        ranks,
    })
}
