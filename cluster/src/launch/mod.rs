//! Cluster launch: which rank this process is, how many there are, and where rank 0 is, from
//! the launchers' own environment, so a scenario runs under `srun` or `mpirun` with no
//! address written anywhere.
//!
//! # Where the rank comes from
//!
//! In this order of precedence (the first that applies wins):
//!
//! | source | rank | rank count | local rank | rank 0's host |
//! |---|---|---|---|---|
//! | command line | `--rank R` | the `verbs.ranks` block's length, else the hostfile's slots | the hostfile's slot on R's host | the block's addresses (no rendezvous), or as below when `--hostfile`/`--coordinator` is given |
//! | Slurm | `SLURM_PROCID` | `SLURM_NTASKS` (or `SLURM_NPROCS`) | `SLURM_LOCALID` | the first node of `SLURM_STEP_NODELIST`, else `SLURM_JOB_NODELIST` ([`hostlist`] syntax) |
//! | Open MPI | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | none given |
//! | PMI (MPICH, Intel MPI) | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID` (Hydra's) | none given |
//!
//! `--coordinator HOST[:PORT]`, then the variable `XRDMA_COORDINATOR`, override the node
//! list; where the launcher gives none, they or the first host of `--hostfile FILE` name rank
//! 0's host, and a run with none of them is refused, saying which to give. Rank 0 of a Slurm
//! step runs on the step's first node under the default block and cyclic distributions;
//! under `--distribution=arbitrary` give `--coordinator`.
//!
//! # Rendezvous
//!
//! Rank 0 listens on the coordinator's address (what its host name resolves to on rank 0's
//! node, not every interface) and port ([`DEFAULT_COORDINATOR_PORT`], 18515 as perftest's
//! default port, unless `HOST:PORT` says otherwise); every other rank connects to it (retrying
//! until the scenario's `verbs.run-timeout`), checks the same [`crate::bootstrap::Hello`] the
//! bootstrap does (tool, protocol, scenario name and file hash), proves with rank 0 that both
//! hold the job's secret ([`secret`]: an HMAC over the handshake, each way; a connection that
//! does not is refused, logged and dropped), and reports the address of its
//! bootstrap listener: the local address of the socket it reached rank 0 with (so the
//! interface that routes to rank 0 is chosen) and port [`bootstrap_port`] (coordinator port +
//! 1 + local rank, so several ranks share a node; an OS-assigned port when the launcher gives
//! no local rank). Rank 0 answers every rank with the whole table, and the bootstrap of
//! [`crate::rank`] then runs unchanged over it, as if a `verbs.ranks` block had listed those
//! addresses ([`mod@rendezvous`]). The frames are the bootstrap's own (`challenge`, `proof`,
//! `join`, `table`).
//!
//! # Hosts
//!
//! Without a `verbs.ranks` block the workload's hosts go to ranks by [`fn@assign`]'s rule (the
//! receiver alone on rank 0, the senders in blocks over the others), so the scenario file
//! is the simulator's, unchanged. With a block, its `hosts` lists are used and its addresses
//! give way to the rendezvous table: the launcher's addresses win.
//!
//! # No rdma_cm
//!
//! Address and GID resolution do not go through `rdma_cm`. The TCP bootstrap already carries
//! what an RC QP needs (QPN, PSN, GID; rkeys travel in xrdma's own frames) between ranks and
//! works on any device, Soft-RoCE included; connecting through `rdma_cm` would be a second
//! connection path beside it in the verbs backend (QPs created on a CM id, a CM event
//! channel to serve, its own timeouts). What it would buy is resolving the device, port and
//! GID index from an IP address (`rdma_resolve_addr`) instead of the backend's choice of the
//! first routable RoCE v2 GID (or `gid-index`, `XRDMA_VERBS_GID_INDEX`); that stays a reason to
//! add it for multi-port or multi-subnet hosts.

use std::collections::BTreeMap;

pub mod assign;
pub mod hostfile;
pub mod hostlist;
pub mod rendezvous;
mod resolve;
mod start;

/// The job's secret, shared with the bootstrap ([`crate::bootstrap::secret`]).
pub use crate::bootstrap::secret;

pub use crate::bootstrap::HANDSHAKE_LIMIT;
pub use assign::{assign, describe, layout, report_rank};
pub use hostfile::{HostSlots, Hostfile, HostfileError};
pub use rendezvous::{rendezvous, Refusal, Rendezvous, RendezvousError};
pub use resolve::{parse_coordinator, resolve, LaunchError};
pub use secret::{JobSecret, SecretError, SECRET_FILE_VAR, SECRET_VAR};
pub use start::{start, Started};

/// Rank 0's coordinator port when `HOST` names none: 18515, perftest's default port.
pub const DEFAULT_COORDINATOR_PORT: u16 = 18515;

/// The variable that names rank 0's host (`HOST[:PORT]`) when `--coordinator` does not.
pub const COORDINATOR_VAR: &str = "XRDMA_COORDINATOR";

/// Every variable [`resolve`] reads: what [`vars_from_env`] copies.
pub const VARIABLES: &[&str] = &[
    COORDINATOR_VAR,
    "SLURM_PROCID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_LOCALID",
    "SLURM_STEP_NODELIST",
    "SLURM_JOB_NODELIST",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
];

/// Launcher variables by name (what [`resolve`] reads; tests build their own).
pub type Vars = BTreeMap<String, String>;

/// The [`VARIABLES`] this process has (those that are valid UTF-8).
pub fn vars_from_env() -> Vars {
    VARIABLES
        .iter()
        .filter_map(|&k| Some((k.to_string(), std::env::var(k).ok()?)))
        .collect()
}

/// What the command line says about the launch.
#[derive(Clone, Debug, Default)]
pub struct LaunchArgs {
    /// `--rank R`.
    pub rank: Option<u32>,
    /// `--hostfile FILE`, parsed.
    pub hostfile: Option<Hostfile>,
    /// `--coordinator HOST[:PORT]`, as written.
    pub coordinator: Option<String>,
}

/// Who said which rank this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `--rank`.
    CommandLine,
    /// Slurm's `SLURM_PROCID`.
    Slurm,
    /// Open MPI's `OMPI_COMM_WORLD_RANK`.
    OpenMpi,
    /// PMI's `PMI_RANK`.
    Pmi,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::CommandLine => "--rank",
            Source::Slurm => "Slurm",
            Source::OpenMpi => "Open MPI",
            Source::Pmi => "PMI",
        })
    }
}

/// Rank 0's coordinator: where the other ranks reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coordinator {
    /// Host name or address, as given (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Where it came from (`--coordinator`, `XRDMA_COORDINATOR`, `SLURM_JOB_NODELIST`,
    /// `the hostfile`), for messages.
    pub from: &'static str,
}

impl std::fmt::Display for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// How the ranks find each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peers {
    /// The scenario's `verbs.ranks` addresses, as written (`--rank` alone).
    Scenario,
    /// A rendezvous at rank 0's coordinator.
    Rendezvous(Coordinator),
}

/// This process's place in a multi-process run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// This rank, below `size`.
    pub rank: u32,
    /// Ranks in all, ≥ 1.
    pub size: u32,
    /// Its index among the ranks on its node, when the launcher says.
    pub local_rank: Option<u32>,
    /// Who said.
    pub source: Source,
    /// How the ranks find each other.
    pub peers: Peers,
}

impl Launch {
    /// The port this rank's bootstrap listener binds ([`bootstrap_port`]); 0 with
    /// [`Peers::Scenario`] (the block gives it).
    pub fn bootstrap_port(&self) -> u16 {
        match &self.peers {
            Peers::Scenario => 0,
            Peers::Rendezvous(c) => bootstrap_port(c.port, self.local_rank),
        }
    }

    /// One line: `rank 3 of 9 (Slurm, local rank 0; coordinator node01:18515)`.
    pub fn summary(&self) -> String {
        let local = self
            .local_rank
            .map_or(String::new(), |l| format!(", local rank {l}"));
        let peers = match &self.peers {
            Peers::Scenario => "addresses from verbs.ranks".to_string(),
            Peers::Rendezvous(c) => format!("coordinator {c} from {}", c.from),
        };
        format!(
            "rank {} of {} ({}{local}; {peers})",
            self.rank, self.size, self.source
        )
    }
}

/// The port a rank's bootstrap listener binds: `coordinator + 1 + local`, so the ranks of
/// one node never collide with each other or with rank 0's coordinator; 0 (the OS picks)
/// when the local rank is unknown or the sum passes 65535.
pub fn bootstrap_port(coordinator: u16, local_rank: Option<u32>) -> u16 {
    local_rank
        .and_then(|l| u16::try_from(l).ok())
        .and_then(|l| coordinator.checked_add(1)?.checked_add(l))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
