//! Which message stack a scenario's workload runs over (`stack:`), and the kernel TCP settings
//! (`tcp:`) the TCP stacks use.

use serde::Deserialize;

/// The message stack every host runs the workload over (`stack:`). Workloads and reports
/// are the same for each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
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

impl Stack {
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
