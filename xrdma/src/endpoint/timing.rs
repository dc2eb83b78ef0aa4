//! Where a sent message's time went, as the sender sees it: the instants the core stamps on
//! every message (accepted, at the head of its connection's queue, granted, last piece
//! posted, ACKed), handed to the application with [`crate::Event::Sent`] as a [`SendTiming`]. The `trace` tool
//! cuts a message's completion time at these instants into stages that add up exactly.

use crate::{SendTiming, Time};

/// The instants a queued message has been stamped with so far.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stamps {
    pub(super) accepted: Time,
    pub(super) head: Option<Time>,
    pub(super) granted: Option<Time>,
}

impl Stamps {
    /// A message accepted at `now`, at the head already when its queue was empty.
    pub(super) fn accepted(now: Time, at_head: bool) -> Stamps {
        Stamps {
            accepted: now,
            head: at_head.then_some(now),
            granted: None,
        }
    }

    /// The stamps as the message's last piece is posted at `now`.
    pub(super) fn posted(mut self, now: Time) -> Stamps {
        self.head.get_or_insert(now);
        self
    }

    /// The whole timing, the last piece posted at `last_post` and ACKed at `acked`.
    pub(super) fn done(self, last_post: Time, acked: Time) -> SendTiming {
        SendTiming {
            accepted: self.accepted,
            head: self.head.unwrap_or(last_post),
            granted: self.granted,
            last_post,
            acked,
        }
    }
}
