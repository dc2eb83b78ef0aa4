//! Where a sent message's time went, as the sender sees it: the instants the core stamps on
//! every message (accepted, at the head of its connection's queue, granted, last piece
//! posted, ACKed), handed to the application with [`crate::Event::Sent`]. The `trace` tool
//! cuts a message's completion time at these instants into stages that add up exactly.

use crate::{MsgId, Time};
use serde::{Deserialize, Serialize};

/// The sender's instants of one message, all on the endpoint's clock, in order
/// `accepted ≤ head ≤ max(head, granted) ≤ last_post ≤ acked`.
/// Serialised with the instants in ps (`accepted-ps`, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SendTiming {
    /// [`crate::Endpoint::send`] accepted it.
    #[serde(rename = "accepted-ps")]
    pub accepted: Time,
    /// It reached the head of its connection's queue (every message ahead of it wholly
    /// posted); a message coalesced behind the head into one eager frame counts as at the
    /// head when the frame is posted.
    #[serde(rename = "head-ps")]
    pub head: Time,
    /// Its landing buffer's grant (the CTS) arrived: rendezvous messages only. It may come
    /// before `head` (the RTS goes out ahead of the data).
    #[serde(rename = "granted-ps")]
    pub granted: Option<Time>,
    /// Its last frame or fragment was posted.
    #[serde(rename = "last-post-ps")]
    pub last_post: Time,
    /// The ACK that covers its last piece arrived: its buffers are free.
    #[serde(rename = "acked-ps")]
    pub acked: Time,
}

impl SendTiming {
    /// When the message could post its data: at the head and, for rendezvous, granted.
    pub fn ready(&self) -> Time {
        self.granted.map_or(self.head, |g| g.max(self.head))
    }
}

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

/// The messages an in-flight frame or fragment completes when it is ACKed, with their stamps.
pub(super) enum Completes {
    /// None: a control frame, or a fragment before a message's last.
    Nothing,
    /// One message: its last fragment, or an eager frame of one message.
    One((MsgId, Stamps)),
    /// A coalesced eager frame's messages, in the order they were queued.
    Batch(Box<[(MsgId, Stamps)]>),
}

impl Completes {
    /// The messages, with their stamps.
    pub(super) fn messages(&self) -> &[(MsgId, Stamps)] {
        match self {
            Completes::Nothing => &[],
            Completes::One(m) => std::slice::from_ref(m),
            Completes::Batch(m) => m,
        }
    }
}
