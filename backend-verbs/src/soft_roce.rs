//! What the backend does differently on Soft-RoCE (`rdma_rxe`): the RC QP attributes it
//! applies there.
//!
//! ## Why rxe gets a longer local ACK timeout
//!
//! rxe is a NIC made of kernel code: its requester, responder and completer run as tasks on
//! the hosts' CPUs, its ACKs leave when the peer's kernel gets round to them, and its
//! retransmission timer ticks in jiffies (4 ms at Debian's `HZ=250`: codes 1 to 9, up to
//! 2.1 ms, are all one tick, which expires 0 to 4 ms after it is armed).
//! Two TCG guests on two shared host cores, each with its own rxe on a lossless wire, were
//! seen silent for up to 30 ms at a time, so with the default local ACK timeout (code 12,
//! 16.8 ms) the retransmission timer fired on data that had arrived: 24 172 request packets
//! went out for 10 294 distinct PSNs.
//!
//! Spurious retries are not harmless on rxe. In Linux 6.1 (Debian's 6.1.192 was measured)
//! a retry can overlap the ACKs still in flight for the WQE it resends: the completer then
//! takes the WQE's last ACK while the WQE is being resent (not "pending"), advances its PSN
//! past the WQE without completing it (`rxe_comp.c`, `COMPST_WRITE_SEND` →
//! `COMPST_UPDATE_COMP`), and the next retry (`req_retry` in `rxe_req.c`) starts from that
//! PSN with the WQE still first: it skips all of its packets and sends a zero-length RDMA
//! WRITE with its immediate data, later the whole WQE again, at PSNs past its own, already
//! given to the next WQE. The capture showed it (one QP, PSNs mod 1000): WQE 21 (immediate
//! 21) at 954–017, acknowledged; WQE 22 started at 018; then WRITE ONLY with immediate 21,
//! DMA length 0, at 018; then WQE 21 whole at 018–081. The responder, holding WQE 22 up to
//! 077, took 078–081 as the rest of WQE 22: WQE 21's last bytes written into WQE 22's
//! landing buffer, and a completion with immediate 21 (the core's `OutOfSequence`,
//! "fragment 21 arrived, expected 22"). Where the resent packets break the responder's
//! opcode sequence it answers with an Invalid Request NAK (syndrome 0x61, seen under netem)
//! and the sender's WR fails with `REM_INV_REQ_ERR` (reported as
//! [`xrdma::WcStatus::GeneralErr`]).
//!
//! A larger local ACK timeout does not fix rxe, but keeps its timer from firing on data
//! that is only late: the retries left are those a loss calls for (a sequence NAK, or a lost
//! tail), and they resend what the responder does not have, so no ACK for it is in flight.
//! [`MIN_LOCAL_ACK_TIMEOUT`] is 17 (4.096 µs · 2^17 ≈ 537 ms): about eighteen times the longest
//! silence seen, and still short enough that a lost tail is resent within a fraction of the
//! core's default ACK timeout. The runner raises the core's ACK timeout to the retry budget
//! this gives (`xrdma::RcParams::retry_budget`), so a connection is not failed while the
//! NIC still retries.

use xrdma::RcParams;

/// `ibv_device_attr.vendor_id` of Soft-RoCE: `RXE_VENDOR_ID` (`rxe_param.h`), the IBTA's
/// value for a vendor without an IEEE OUI.
pub const VENDOR_ID: u32 = 0x00FF_FFFF;

/// The shortest local ACK timeout code applied to an rxe QP (≈ 537 ms); see the module
/// docs.
pub const MIN_LOCAL_ACK_TIMEOUT: u8 = 17;

/// The RC attributes to apply on a device with `vendor_id` when `rc` is asked for: on
/// Soft-RoCE, the local ACK timeout raised to [`MIN_LOCAL_ACK_TIMEOUT`] (code 0, no timer,
/// stays 0); elsewhere `rc` unchanged.
pub fn rc_for_device(rc: RcParams, vendor_id: u32) -> RcParams {
    if vendor_id != VENDOR_ID || rc.local_ack_timeout == 0 {
        return rc;
    }
    RcParams {
        local_ack_timeout: rc.local_ack_timeout.max(MIN_LOCAL_ACK_TIMEOUT),
        ..rc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rxe_gets_at_least_the_minimum_local_ack_timeout() {
        let asked = RcParams {
            local_ack_timeout: 8,
            ..RcParams::default()
        };
        let applied = rc_for_device(asked, VENDOR_ID);
        assert_eq!(applied.local_ack_timeout, MIN_LOCAL_ACK_TIMEOUT);
        assert_eq!(
            RcParams {
                local_ack_timeout: 8,
                ..applied
            },
            asked,
            "only the timeout changes"
        );
        assert_eq!(
            rc_for_device(RcParams::default(), VENDOR_ID).local_ack_timeout,
            17
        );
        // Longer than the minimum, or no timer at all: as asked.
        for code in [0, 17, 20] {
            let rc = RcParams {
                local_ack_timeout: code,
                ..RcParams::default()
            };
            assert_eq!(rc_for_device(rc, VENDOR_ID), rc);
        }
    }

    #[test]
    fn other_devices_get_what_was_asked() {
        let rc = RcParams {
            local_ack_timeout: 8,
            ..RcParams::default()
        };
        // Mellanox's OUI (ConnectX).
        assert_eq!(rc_for_device(rc, 0x02c9), rc);
    }
}
