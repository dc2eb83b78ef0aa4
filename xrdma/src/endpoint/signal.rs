//! Selective signalling: which send WRs ask for a completion, and the order [`Endpoint::poll_op`]
//! hands the WRs out in.
//!
//! A send WR that succeeds unsignaled raises no completion; the next signaled WR of its QP
//! retires it (queues complete in order, and the core takes a send completion's tag as
//! implying every older one's). A connection's send WRs are therefore unsignaled except:
//!
//! - **every [`crate::Config::signal_interval`]-th** consecutive one, so the completions of
//!   a long burst keep the send queue's books (`sq_outstanding`) current;
//! - **the last one of each burst**: when the connection has nothing more to post (its queue
//!   is empty, or the window, the receive credits, the staging ring or the send queue stops
//!   it), its last WR asks for a completion, so no WR waits for a later one that may never
//!   come; in particular the WR that fills the send queue is signaled, and no send queue is
//!   ever left holding only unsignaled WRs;
//! - **every ACK SEND**: an ACK is the last WR of its burst (ACKs go after the data), and its
//!   completion is what a close (`maybe_closed`) and an idle probe wait for.
//!
//! Nothing else waits for a send completion: the staging ring and the window are freed by the
//! peer's ACK, never by a send completion, so no data WR is needed promptly otherwise.
//!
//! Whether a WR ends its burst is known only at its connection's next turn in the round
//! robin (`tx_ready`), so each produced WR waits in the outbox until it is decided: when its
//! connection produces the next one (mid-burst), or leaves the round robin (burst end). The
//! outbox hands WRs out strictly in the order they were produced, so the transport sees the
//! same WRs in the same order as when each was handed out at once; only `signaled` differs.
//! Ops other than send WRs are produced after everything in the outbox, so when one is waiting
//! the undecided WR at the outbox's front is decided signaled and goes first.

use super::{Endpoint, Op};
use crate::error::ConnId;
use crate::{QpNum, SendWr};
use std::collections::VecDeque;

/// A produced send WR not yet handed out.
struct Entry {
    conn: ConnId,
    qpn: QpNum,
    wr: SendWr,
    /// Whether `wr.signaled` is final.
    decided: bool,
    /// `false` once its connection has failed: it is dropped, not posted.
    live: bool,
}

/// The produced send WRs not yet handed out, oldest first.
#[derive(Default)]
pub(super) struct Outbox {
    entries: VecDeque<Entry>,
    /// The number of entries ever popped: entry `i` (counted from the first ever pushed) is
    /// `entries[i - popped]`.
    popped: u64,
}

impl Outbox {
    fn push(&mut self, conn: ConnId, qpn: QpNum, wr: SendWr) -> u64 {
        self.entries.push_back(Entry {
            conn,
            qpn,
            wr,
            decided: false,
            live: true,
        });
        self.popped + self.entries.len() as u64 - 1
    }

    fn decide(&mut self, at: u64, signaled: bool) {
        if let Some(e) = at
            .checked_sub(self.popped)
            .and_then(|i| self.entries.get_mut(i as usize))
        {
            e.wr.signaled = signaled;
            e.decided = true;
        }
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drop the dead entries at the front; then the front, if it is decided.
    fn pop_decided(&mut self) -> Option<Op> {
        while let Some(e) = self.entries.front() {
            if e.live && !e.decided {
                return None;
            }
            let e = self.entries.pop_front()?;
            self.popped += 1;
            if e.live {
                return Some(Op::PostSend {
                    qpn: e.qpn,
                    wr: e.wr,
                });
            }
        }
        None
    }
}

impl Endpoint {
    /// Book `op`, just produced by `conn`'s turn, in the outbox (or hand it out as it is, if it
    /// is not a send WR): the WR `conn` produced before it is now known not to end its burst;
    /// `more` says whether `conn` stays in the round robin (else `op` ends its burst).
    pub(super) fn produced(&mut self, conn: ConnId, op: Op, more: bool) -> Option<Op> {
        let Op::PostSend { qpn, wr } = op else {
            return Some(op);
        };
        let interval = self.cfg.signal_interval;
        let c = &mut self.conns[conn];
        if let Some(at) = c.held.take() {
            let signaled = c.unsignaled_run + 1 >= interval;
            c.unsignaled_run = if signaled { 0 } else { c.unsignaled_run + 1 };
            self.outbox.decide(at, signaled);
        }
        let at = self.outbox.push(conn, qpn, wr);
        if more {
            self.conns[conn].held = Some(at);
        } else {
            self.end_burst(conn, Some(at));
        }
        None
    }

    /// `conn`'s burst ends: its last WR (`at`, else the one it holds undecided) is signaled.
    pub(super) fn end_burst(&mut self, conn: ConnId, at: Option<u64>) {
        let c = &mut self.conns[conn];
        if let Some(at) = at.or(c.held.take()) {
            c.unsignaled_run = 0;
            self.outbox.decide(at, true);
        }
    }

    /// `conn` failed: the WRs it produced that were not handed out are dropped.
    pub(super) fn drop_unposted(&mut self, conn: ConnId) {
        self.conns[conn].held = None;
        for e in self.outbox.entries.iter_mut().filter(|e| e.conn == conn) {
            e.live = false;
        }
    }

    /// The next send WR the outbox may hand out: the front once decided; with `force`, the
    /// front decided now as the end of its connection's burst.
    pub(super) fn pop_outbox(&mut self, force: bool) -> Option<Op> {
        if let Some(op) = self.outbox.pop_decided() {
            return Some(op);
        }
        if !force {
            return None;
        }
        let conn = self.outbox.entries.front()?.conn;
        self.end_burst(conn, None);
        self.outbox.pop_decided()
    }

    /// Whether produced send WRs wait in the outbox.
    #[inline]
    pub(super) fn outbox_waiting(&self) -> bool {
        !self.outbox.is_empty()
    }
}
