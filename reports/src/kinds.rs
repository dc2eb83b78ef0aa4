//! The closed sets a result names: the workload kind and the backend.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What a run's hosts did (the scenario's `workload:` key); serialised as written in a
/// scenario (`incast`, `open-loop`, `echo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// N-to-1: every sender sends the same message list to one receiver, all at once.
    Incast,
    /// N-to-1 Poisson arrivals at a given rate per sender.
    OpenLoop,
    /// Closed-loop request/response between clients and one server.
    Echo,
}

impl WorkloadKind {
    /// The name as written in a scenario and a result.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Incast => "incast",
            WorkloadKind::OpenLoop => "open-loop",
            WorkloadKind::Echo => "echo",
        }
    }

    /// Whether the workload's message count and bytes are drawn from the seed (open-loop
    /// arrivals, echo request sizes), so two seeds of one file differ in shape; an incast's
    /// shape is fixed by its file.
    pub fn shape_depends_on_seed(self) -> bool {
        match self {
            WorkloadKind::Incast => false,
            WorkloadKind::OpenLoop | WorkloadKind::Echo => true,
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What executed a run; serialised as `sim` or `verbs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// The packet-level simulator (`backend-sim`).
    Sim,
    /// An RDMA device through ibverbs (`backend-verbs`): Soft-RoCE or a hardware NIC.
    Verbs,
    /// Kernel TCP sockets between the hosts of one process, over loopback: the TCP baseline
    /// on a real machine, no RDMA device.
    Sockets,
}

impl Backend {
    /// The name as a result writes it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Verbs => "verbs",
            Backend::Sockets => "sockets",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The message stack every host of a run ran the workload over (a scenario's `stack:`).
/// Workloads and reports are the same for each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "one of `xrdma`, `tcp`, `dctcp`")]
pub enum Stack {
    /// xrdma over RC QPs (the default).
    #[default]
    Xrdma,
    /// Messages over kernel TCP sockets, NewReno's loss reaction (RFC 5681, RFC 6582).
    Tcp,
    /// Messages over kernel TCP sockets with DCTCP's reaction to ECN marks (RFC 8257).
    Dctcp,
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Stack {
    type Err = String;
    /// A stack by its name (`xrdma`, `tcp`, `dctcp`).
    fn from_str(s: &str) -> Result<Stack, String> {
        [Stack::Xrdma, Stack::Tcp, Stack::Dctcp]
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| "expected `xrdma`, `tcp` or `dctcp`".to_string())
    }
}

impl Stack {
    /// Every stack, in the order help texts list them.
    pub const ALL: [Stack; 3] = [Stack::Xrdma, Stack::Tcp, Stack::Dctcp];

    /// The stack's name, as a scenario writes it.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Xrdma => "xrdma",
            Stack::Tcp => "tcp",
            Stack::Dctcp => "dctcp",
        }
    }

    /// Whether the stack is TCP (either reaction).
    pub fn is_tcp(self) -> bool {
        self != Stack::Xrdma
    }
}
