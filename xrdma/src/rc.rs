//! RC QP attributes: the backend-neutral [`RcParams`] every backend applies to the QPs it
//! connects, and the InfiniBand encodings behind them.
//!
//! The values are the encoded QP attributes of `ibv_modify_qp(3)` (IB Spec vol. 1, release
//! 1.2.1, §11.2.4.2 "Modify Queue Pair" and the RC transport rules of §9.7), so a scenario names
//! one set of codes and the simulator and a real device interpret them the same way:
//!
//! | attribute | encoding | meaning |
//! |---|---|---|
//! | `local_ack_timeout` (`ibv_qp_attr.timeout`) | 5 bits | 4.096 µs · 2^code; 0 = no timeout ([`local_ack_timeout`]) |
//! | `retry_cnt` | 3 bits | retransmissions after a local ACK timeout before `IBV_WC_RETRY_EXC_ERR`; 7 is 7 |
//! | `rnr_retry` | 3 bits | resends after an RNR NAK before `IBV_WC_RNR_RETRY_EXC_ERR`; 7 = infinite (§9.7.5.2.8) |
//! | `min_rnr_timer` | 5 bits | the responder's minimum RNR NAK timer, Table 45 ([`rnr_timer`]): 0 = 655.36 ms, 1 = 10 µs, … 12 = 0.64 ms |
//! | `path_mtu` (`enum ibv_mtu`) | bytes here | 256, 512, 1024, 2048 or 4096 (`IBV_MTU_256` = 1 … `IBV_MTU_4096` = 5, [`path_mtu_code`]) |

use crate::Span;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

/// The RC QP attributes a backend applies when it connects a QP (INIT → RTR → RTS).
///
/// [`RcParams::default`] is the one set of defaults every backend uses when a scenario leaves
/// them out: local ACK timeout 12 (≈ 16.8 ms), retry count 7, RNR retry 7 (infinite), minimum
/// RNR timer 1 (10 µs), path MTU 4096 (the largest; each backend lowers it to its port's MTU).
/// These are the simulator's long-standing values, so its runs are unchanged; a device
/// configured with perftest's defaults instead (timeout 14 ≈ 67 ms, min RNR timer 12 =
/// 0.64 ms) gives up later after a loss and waits longer after an RNR NAK.
///
/// It is also a scenario's `rc:` block, read as is: keys are the fields in kebab-case
/// (`local-ack-timeout`), `path-mtu` is a size (`1KiB`, [`crate::units`]), a key left out keeps
/// its default, an unknown key is refused, and [`RcParams::validate`] checks the encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    default,
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (the RC QP attributes `{ local-ack-timeout, retry-cnt, rnr-retry, \
                 min-rnr-timer, path-mtu }`)"
)]
pub struct RcParams {
    /// Local ACK timeout, the 5-bit code (`ibv_qp_attr.timeout`, `ibv_modify_qp(3)`):
    /// a requester with unacknowledged packets and no progress for [`local_ack_timeout`] of it
    /// retransmits from its oldest unacknowledged PSN. Default 12 ≈ 16.8 ms: above the worst
    /// queueing delay of the simulated fabrics (a full 32 MiB buffer drains in 2.7 ms at
    /// 100 Gb/s, 16.8 ms at 16 Gb/s), so a deep queue alone does not trigger go-back-N, and
    /// short enough for a lost tail to be recovered soon.
    pub local_ack_timeout: u8,
    /// Transport retries (3 bits): the `retry_cnt + 1`-th local ACK timeout without progress
    /// fails the WR with `RetryExcErr`; unlike `rnr_retry`, 7 is not infinite. Default 7.
    pub retry_cnt: u8,
    /// RNR retries (3 bits): resends after RNR NAKs before `RnrRetryExcErr`; 7 means retry
    /// forever (IB Spec vol. 1 §9.7.5.2.8). Default 7.
    pub rnr_retry: u8,
    /// Minimum RNR NAK timer, the 5-bit code the QP advertises as a responder (IB Spec vol. 1
    /// Table 45, [`rnr_timer`]): how long a requester waits after an RNR NAK before resending.
    /// Default 1 = 10 µs, the shortest non-zero value, so an RNR costs little time.
    pub min_rnr_timer: u8,
    /// Path MTU, bytes: 256, 512, 1024, 2048 or 4096. A backend applies the smaller of this and
    /// its port's MTU (a device's active MTU; the simulator's `mtu`), and
    /// [`crate::Transport::rc_params`] reports what it applied. Default 4096: the port decides.
    #[serde(deserialize_with = "deserialize_path_mtu")]
    pub path_mtu: u32,
}

/// For serde: a path MTU written as a size (`1KiB`, `4096`), bytes; one past `u32` is refused
/// as no path MTU (the value's encoding is [`RcParams::validate`]'s to check).
fn deserialize_path_mtu<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let not_a_path_mtu =
        |b: u64| format!("{b} bytes is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)");
    let bytes = crate::units::deserialize_size_at_most(d, u64::from(u32::MAX), not_a_path_mtu)?;
    u32::try_from(bytes).map_err(|_| D::Error::custom(not_a_path_mtu(bytes)))
}

impl Default for RcParams {
    fn default() -> Self {
        RcParams {
            local_ack_timeout: 12,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            path_mtu: 4096,
        }
    }
}

/// An [`RcParams`] field outside its encoding.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("invalid RC QP attribute `{field}`: {reason}")]
pub struct RcParamsError {
    /// The field, as a scenario spells it (`local-ack-timeout`, `retry-cnt`, `rnr-retry`,
    /// `min-rnr-timer`, `path-mtu`).
    pub field: &'static str,
    /// What is wrong, with the value.
    pub reason: String,
}

/// The path MTUs InfiniBand defines, bytes (`enum ibv_mtu` of `<infiniband/verbs.h>`).
pub const PATH_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

impl RcParams {
    /// Check every field against its encoding.
    ///
    /// # Errors
    /// [`RcParamsError`] naming the first field out of range: `local-ack-timeout` or
    /// `min-rnr-timer` above 31, `retry-cnt` or `rnr-retry` above 7, `path-mtu` not one of
    /// [`PATH_MTUS`].
    pub fn validate(&self) -> Result<(), RcParamsError> {
        let err = |field, reason: String| Err(RcParamsError { field, reason });
        if self.local_ack_timeout > 31 {
            return err(
                "local-ack-timeout",
                format!("{} is not a 5-bit code (0..=31)", self.local_ack_timeout),
            );
        }
        if self.retry_cnt > 7 {
            return err(
                "retry-cnt",
                format!("{} is above 7 (a 3-bit count)", self.retry_cnt),
            );
        }
        if self.rnr_retry > 7 {
            return err(
                "rnr-retry",
                format!(
                    "{} is above 7 (a 3-bit count; 7 means infinite)",
                    self.rnr_retry
                ),
            );
        }
        if self.min_rnr_timer > 31 {
            return err(
                "min-rnr-timer",
                format!("{} is not a 5-bit code (0..=31)", self.min_rnr_timer),
            );
        }
        if path_mtu_code(self.path_mtu).is_none() {
            return err(
                "path-mtu",
                format!(
                    "{} bytes is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)",
                    self.path_mtu
                ),
            );
        }
        Ok(())
    }

    /// These attributes with the path MTU lowered to `port_mtu` bytes where that is smaller:
    /// what a backend whose port carries `port_mtu` bytes per packet applies.
    pub fn with_port_mtu(self, port_mtu: u32) -> RcParams {
        RcParams {
            path_mtu: self.path_mtu.min(port_mtu),
            ..self
        }
    }

    /// The local ACK timeout as a span ([`local_ack_timeout`]); [`Span::MAX`] for code 0.
    pub fn ack_timeout(&self) -> Span {
        local_ack_timeout(self.local_ack_timeout)
    }

    /// How long a requester with these attributes may go without an ACK before it fails
    /// the WR with `RetryExcErr`: `retry_cnt + 1` local ACK timeouts (the first, then one per
    /// retry, `ibv_modify_qp(3)`), e.g. 8 × 16.8 ms ≈ 134 ms for the defaults. `None`
    /// for code 0: without a timer the requester never gives up on its own.
    pub fn retry_budget(&self) -> Option<Span> {
        match self.local_ack_timeout & 0x1F {
            0 => None,
            _ => {
                let tries = u64::from(self.retry_cnt & 0x7) + 1;
                Some(Span::from_ps(
                    self.ack_timeout().as_ps().saturating_mul(tries),
                ))
            }
        }
    }

    /// The minimum RNR NAK timer as a span ([`rnr_timer`]).
    pub fn rnr_timer(&self) -> Span {
        rnr_timer(self.min_rnr_timer)
    }

    /// Whether RNR NAKs are retried forever (`rnr_retry` 7).
    pub fn rnr_retry_infinite(&self) -> bool {
        self.rnr_retry == 7
    }
}

/// The `enum ibv_mtu` code of a path MTU of `bytes` (256 → 1, 512 → 2, 1024 → 3, 2048 → 4,
/// 4096 → 5); `None` for any other size.
pub fn path_mtu_code(bytes: u32) -> Option<u8> {
    PATH_MTUS
        .iter()
        .position(|&m| m == bytes)
        .map(|i| i as u8 + 1)
}

/// The path MTU in bytes of an `enum ibv_mtu` code (1 → 256 … 5 → 4096); `None` otherwise.
pub fn path_mtu_bytes(code: u32) -> Option<u32> {
    let i = usize::try_from(code.checked_sub(1)?).ok()?;
    PATH_MTUS.get(i).copied()
}

/// Minimum RNR NAK timer values of IB Spec vol. 1 (release 1.2.1) §9.7.5.2.8, Table 45, in
/// units of 10 µs, indexed by the 5-bit code. Code 0 is the largest value, 655.36 ms.
const RNR_TIMER_10US: [u32; 32] = [
    65_536, // 0: 655.36 ms
    1,      // 1: 0.01 ms
    2,      // 2: 0.02 ms
    3,      // 3: 0.03 ms
    4,      // 4: 0.04 ms
    6,      // 5: 0.06 ms
    8,      // 6: 0.08 ms
    12,     // 7: 0.12 ms
    16,     // 8: 0.16 ms
    24,     // 9: 0.24 ms
    32,     // 10: 0.32 ms
    48,     // 11: 0.48 ms
    64,     // 12: 0.64 ms
    96,     // 13: 0.96 ms
    128,    // 14: 1.28 ms
    192,    // 15: 1.92 ms
    256,    // 16: 2.56 ms
    384,    // 17: 3.84 ms
    512,    // 18: 5.12 ms
    768,    // 19: 7.68 ms
    1_024,  // 20: 10.24 ms
    1_536,  // 21: 15.36 ms
    2_048,  // 22: 20.48 ms
    3_072,  // 23: 30.72 ms
    4_096,  // 24: 40.96 ms
    6_144,  // 25: 61.44 ms
    8_192,  // 26: 81.92 ms
    12_288, // 27: 122.88 ms
    16_384, // 28: 163.84 ms
    24_576, // 29: 245.76 ms
    32_768, // 30: 327.68 ms
    49_152, // 31: 491.52 ms
];

/// The minimum RNR NAK timer for a 5-bit `code` (IB Spec vol. 1 Table 45): 0 → 655.36 ms,
/// 1 → 10 µs, 2 → 20 µs, …, 12 → 640 µs, …, 31 → 491.52 ms. Only the low 5 bits of `code`
/// are used.
pub fn rnr_timer(code: u8) -> Span {
    Span::from_us(10 * RNR_TIMER_10US[(code & 0x1F) as usize] as u64)
}

/// The local ACK timeout for a 5-bit `code` (the Local ACK Timeout QP attribute of IB Spec
/// vol. 1, verbs `timeout` in `ibv_modify_qp(3)`): 4.096 µs · 2^code for codes 1..=31; code 0
/// means no timeout ([`Span::MAX`]). Only the low 5 bits of `code` are used.
pub fn local_ack_timeout(code: u8) -> Span {
    match code & 0x1F {
        0 => Span::MAX,
        c => Span::from_ns(4_096 << c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_budget_is_one_timeout_per_try() {
        assert_eq!(
            RcParams::default().retry_budget(),
            Some(Span::from_ns(8 * 16_777_216))
        );
        let rc = RcParams {
            local_ack_timeout: 17,
            retry_cnt: 3,
            ..RcParams::default()
        };
        assert_eq!(rc.retry_budget(), Some(Span::from_ns(4 * 536_870_912)));
        let never = RcParams {
            local_ack_timeout: 0,
            ..RcParams::default()
        };
        assert_eq!(never.retry_budget(), None);
    }

    #[test]
    fn ack_timeout_doubles_per_code() {
        // 4.096 µs · 2^8 = 1_048.576 µs; 4.096 µs · 2 = 8.192 µs; 2^12 · 4.096 µs = 16.78 ms.
        assert_eq!(local_ack_timeout(8), Span::from_ns(1_048_576));
        assert_eq!(local_ack_timeout(1), Span::from_ns(8_192));
        assert_eq!(local_ack_timeout(0), Span::MAX);
        assert_eq!(RcParams::default().ack_timeout(), Span::from_ns(16_777_216));
    }

    #[test]
    fn rnr_timer_follows_table_45() {
        assert_eq!(rnr_timer(0), Span::from_us(655_360));
        assert_eq!(rnr_timer(1), Span::from_us(10));
        assert_eq!(rnr_timer(12), Span::from_us(640));
        assert_eq!(rnr_timer(31), Span::from_us(491_520));
        assert_eq!(RcParams::default().rnr_timer(), Span::from_us(10));
    }

    #[test]
    fn path_mtu_codes_are_ibv_mtu() {
        for (bytes, code) in [(256, 1), (512, 2), (1024, 3), (2048, 4), (4096, 5)] {
            assert_eq!(path_mtu_code(bytes), Some(code));
            assert_eq!(path_mtu_bytes(u32::from(code)), Some(bytes));
        }
        assert_eq!(path_mtu_code(1500), None);
        assert_eq!(path_mtu_bytes(0), None);
        assert_eq!(path_mtu_bytes(6), None);
        let p = RcParams::default();
        assert_eq!(p.with_port_mtu(1024).path_mtu, 1024);
        assert_eq!(p.with_port_mtu(9000).path_mtu, 4096);
    }

    #[test]
    fn scenario_keys_are_kebab_case_and_the_path_mtu_a_size() {
        let rc: RcParams =
            serde_json::from_str(r#"{ "retry-cnt": 3, "path-mtu": "1KiB" }"#).expect("reads");
        let want = RcParams {
            retry_cnt: 3,
            path_mtu: 1024,
            ..RcParams::default()
        };
        assert_eq!(rc, want);
        let e = serde_json::from_str::<RcParams>(r#"{ "timeout": 14 }"#)
            .expect_err("not a key")
            .to_string();
        assert!(
            e.starts_with(
                "unknown field `timeout`, expected one of `local-ack-timeout`, `retry-cnt`, \
                 `rnr-retry`, `min-rnr-timer`, `path-mtu`"
            ),
            "{e}"
        );
        let e = serde_json::from_str::<RcParams>(r#"{ "path-mtu": "4GiB" }"#)
            .expect_err("above u32")
            .to_string();
        assert!(
            e.starts_with("4294967296 bytes is not an InfiniBand path MTU"),
            "{e}"
        );
    }

    #[test]
    fn validate_names_the_field_out_of_its_encoding() {
        RcParams::default().validate().unwrap();
        let field = |p: RcParams| p.validate().unwrap_err().field;
        let d = RcParams::default();
        assert_eq!(
            field(RcParams {
                local_ack_timeout: 32,
                ..d
            }),
            "local-ack-timeout"
        );
        assert_eq!(field(RcParams { retry_cnt: 8, ..d }), "retry-cnt");
        assert_eq!(field(RcParams { rnr_retry: 8, ..d }), "rnr-retry");
        assert_eq!(
            field(RcParams {
                min_rnr_timer: 32,
                ..d
            }),
            "min-rnr-timer"
        );
        assert_eq!(
            field(RcParams {
                path_mtu: 1000,
                ..d
            }),
            "path-mtu"
        );
    }
}
