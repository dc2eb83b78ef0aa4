//! How a real-time fabric's turn loop waits for its hosts ([`Polling`]): the verbs fabric
//! busy-polls, or follows XRDMA's hybrid loop (`xrdma_verbs::hybrid`).

use std::time::Duration;

/// How the verbs fabric's loop waits ([`crate::fabric::VerbsFabric::set_polling`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polling {
    /// Every host polls its CQ on every round: the lowest latency, one core per loop.
    Busy,
    /// XRDMA's hybrid loop: busy-poll while completions or posts move, and once nothing has
    /// moved for `spin`, block on the hosts' completion channels until a completion, the
    /// earliest host wake, or `max_block`. A host keeps the loop spinning by asking for a
    /// turn now (a wake at or before the round's time).
    Hybrid {
        /// How long the loop spins without activity before it blocks.
        spin: Duration,
        /// The longest single block.
        max_block: Duration,
    },
}

impl Polling {
    /// The hybrid loop with XRDMA's defaults: spin 100 µs (several RTTs of a hardware RoCE
    /// NIC, so a request/response exchange never sleeps in between), block at most 100 ms.
    pub const HYBRID: Polling = Polling::Hybrid {
        spin: Duration::from_micros(100),
        max_block: Duration::from_millis(100),
    };
}

/// What the hybrid loop did ([`crate::fabric::VerbsFabric::polling_stats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PollingStats {
    /// Rounds of turns the loop ran.
    pub rounds: u64,
    /// Times it blocked on the completion channels.
    pub blocks: u64,
    /// Blocks a completion ended (the rest timed out).
    pub wakeups: u64,
    /// Why it went back to busy polling for good (arming a CQ or `ppoll` failed), if it did.
    pub failed: Option<String>,
}
