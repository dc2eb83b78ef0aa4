//! The generic cases: each takes a [`Harness`], makes its pair, posts WRs, waits for the
//! completions and asserts what every backend must show. A case panics on the first
//! difference (it is a test body) and returns what it saw, so a backend's own test can run a
//! case and assert more (the simulator's exact times and packet counters).
//!
//! The cases stay at what RC verbs promise on any transport: completion statuses, opcodes,
//! `wr_id`s, lengths and immediate data, completion order, the bytes that land, the error
//! state and its flushes, reset and reuse, and the synchronous errors of the verbs calls.

mod data;
mod errors;

pub use data::*;
pub use errors::*;

use crate::harness::{Harness, Seen, Side};
use std::time::Duration;
use xrdma::{QpNum, RecvWr, SendWr, Transport};

/// How long a case waits for completions it expects: far more than any backend needs, a
/// Soft-RoCE guest on a loaded emulated CPU included.
pub const LIMIT: Duration = Duration::from_secs(20);

/// How long a case waits to see that no completion comes (a READ raises none at the
/// responder): long against a loopback round trip on a device (tens of µs).
pub const QUIET: Duration = Duration::from_millis(200);

/// What a case saw on each side, in the order it waited for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Completions of the requester, side A.
    pub a: Vec<Seen>,
    /// Completions of the responder, side B.
    pub b: Vec<Seen>,
}

impl Observed {
    fn record(&mut self, side: Side, seen: &[Seen]) {
        match side {
            Side::A => self.a.extend_from_slice(seen),
            Side::B => self.b.extend_from_slice(seen),
        }
    }
}

/// Wait for exactly `n` completions on `side` (within [`LIMIT`]) and record them in `obs`.
fn expect<H: Harness>(h: &mut H, obs: &mut Observed, side: Side, n: usize) -> Vec<Seen> {
    let got = h.wait(side, n, LIMIT);
    assert_eq!(
        got.len(),
        n,
        "{n} completions expected on {side:?} within {LIMIT:?}, got {got:?}"
    );
    obs.record(side, &got);
    got
}

/// Assert that no completion comes on `side` within [`QUIET`].
fn expect_none<H: Harness>(h: &mut H, side: Side) {
    let got = h.wait(side, 1, QUIET);
    assert!(
        got.is_empty(),
        "no completion expected on {side:?}, got {got:?}"
    );
}

fn post_send<H: Harness>(h: &mut H, side: Side, qp: QpNum, wr: &SendWr) {
    h.transport(side)
        .post_send(qp, wr)
        .unwrap_or_else(|e| panic!("post_send of WR {} on {side:?}: {e}", wr.wr_id));
}

fn post_recv<H: Harness>(h: &mut H, side: Side, qp: QpNum, wr: &RecvWr) {
    h.transport(side)
        .post_recv(qp, wr)
        .unwrap_or_else(|e| panic!("post_recv of WR {} on {side:?}: {e}", wr.wr_id));
}

/// One `#[test]` per generic case, on the harness `open` returns.
///
/// `open` is a path to a `fn(&str) -> Option<H>` given the case's name: `None` skips the
/// case (a backend that is absent on this machine prints `SKIP <case>: <reason>` and
/// returns `None`, and the test passes).
///
/// ```ignore
/// xrdma_conformance::suite!(my_backend::open_harness);
/// ```
#[macro_export]
macro_rules! suite {
    ($open:path) => {
        $crate::suite!(@cases $open;
            send_lands_in_the_posted_receive,
            an_unsignaled_send_completes_only_at_the_responder,
            unsignaled_wrs_are_retired_by_a_later_signaled_completion,
            write_with_imm_delivers_bytes_imm_and_length,
            a_zero_length_write_with_imm_needs_no_rkey,
            rdma_read_fetches_remote_bytes,
            a_read_then_a_write_complete_in_posting_order,
            rnr_retry_exceeded_at_the_first_nak,
            rnr_retry_exceeded_after_two_retries,
            an_error_flushes_every_later_wr,
            a_send_longer_than_the_receive_is_a_length_error,
            a_qp_reset_in_error_is_reconnected_and_carries_traffic,
            local_errors_are_refused_synchronously,
            local_memory_copies_ranges_and_refuses_what_lies_outside_an_mr,
        );
    };
    (@cases $open:path; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                if let Some(mut h) = $open(stringify!($case)) {
                    let _ = $crate::cases::$case(&mut h);
                }
            }
        )*
    };
}
