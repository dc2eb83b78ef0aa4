//! Endpoint configuration: fragment size, send window, ACK timeout.

use crate::Span;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Size of one registered chunk of the MR pool, bytes (XRDMA registers memory in 4 MiB
/// chunks to keep the number of MRs, and so the NIC's MTT cache pressure, small).
pub const MR_CHUNK_BYTES: u64 = 4 << 20;

/// The largest [`Config::eager_limit`], bytes: one posted receive buffer never exceeds it.
pub const MAX_EAGER_LIMIT: u64 = 64 << 10;

/// The largest message an RC QP carries, bytes: 2^31 (IB Spec vol. 1 §9.4; `max_msg_sz`).
pub const MAX_MESSAGE_SIZE: u64 = 1 << 31;

/// The largest [`Config::recv_depth`] and [`Config::send_depth`].
pub const MAX_QUEUE_DEPTH: u32 = 1 << 16;

/// Configuration of an [`crate::Endpoint`]. All sizes in bytes, all durations in [`Span`] (ps).
///
/// It is also the `xrdma:` block of a scenario, read as is: keys are the fields in kebab-case
/// (`fragment-size`), sizes and durations take units ([`crate::units`]: `64KiB`, `10us`), a
/// key left out keeps its default below, and an unknown key is refused. The fields after
/// `receive_credits` are not scenario keys (`#[serde(skip_deserializing)]`): the runner or a
/// tool sets them. [`Config::validate`] checks the ranges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    default,
    rename_all(deserialize = "kebab-case"),
    deny_unknown_fields,
    expecting = "a mapping (the xrdma settings)"
)]
pub struct Config {
    /// Largest fragment payload, bytes; larger messages are split (default 64 KiB, XRDMA's
    /// flow-control unit). Range 1 B..=1 GiB; a scenario asks for at least 1 KiB and at most
    /// `max-window`.
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub fragment_size: u64,
    /// Largest message sent eagerly, bytes: a message of at most this many bytes travels as one
    /// SEND into a receive buffer the peer posted in advance; a larger one moves by rendezvous
    /// (request to send, the receiver's grant of a landing buffer, then RDMA WRITEs into it).
    /// Every posted receive buffer holds `eager_limit` bytes plus the 16-byte header
    /// (default 4 KiB, XRDMA's split between small and large buffers; at most
    /// [`MAX_EAGER_LIMIT`], 64 KiB).
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub eager_limit: u64,
    /// The most landing memory a receiver grants at once, bytes (default 1 GiB; at least 1
    /// byte): an RTS that would take the landing buffers in use past it waits until a message
    /// has landed and its buffer is free, and waiting connections are granted in turn. This
    /// bounds the memory a many-to-one burst pins at the receiver (receiver-driven admission);
    /// one grant is always allowed, so a message larger than the budget still goes, alone.
    /// Buffers of landed messages the application still holds as leases
    /// ([`crate::LocalMemory::lend`]) do not count: like a copy it kept, they are its memory,
    /// and an application that keeps messages never stalls the grants of later ones.
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub landing_budget: u64,
    /// Send window of a new connection, bytes of fragments in flight (default 64 KiB;
    /// `min_window <= initial_window <= max_window`).
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub initial_window: u64,
    /// The window never shrinks below this, bytes (default 4 KiB; at least 1 byte).
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub min_window: u64,
    /// The window never grows beyond this, bytes; also sizes the per-connection staging ring
    /// (default 256 KiB; at most 4 GiB).
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub max_window: u64,
    /// Multiplicative decrease on an ECN echo: `window ← β·window`, β ∈ [0.5, 0.8]
    /// (default 0.5; the XRDMA paper's range). Also the floor of one decrease on delay, which
    /// never takes more of the window than an ECN echo would (Swift's `max_mdf = 1 − β`).
    pub beta: f64,
    /// Additive increase of the window while the queueing delay is below the target:
    /// `alpha` fragments per RTT, or the factor `(1 + alpha)` per RTT while the window is
    /// below one fragment (Swift's `ai`, in fragments; see [`crate::window`]). Range (0, 1],
    /// default 0.125 (8 KiB per RTT with 64 KiB fragments).
    pub alpha: f64,
    /// Base target queueing delay (Swift's `base_target`): the window grows while the
    /// standing queueing delay stays below `target_delay` plus half the path's fixed delay
    /// plus one fragment's serialisation plus the flow scaling, and shrinks above it (default
    /// 10 µs; above 0; see [`crate::window`]).
    #[serde(deserialize_with = "crate::units::deserialize_span")]
    pub target_delay: Span,
    /// Extra target delay at the smallest window, falling to none at `max_window` (Swift's
    /// flow-based scaling range `fs_range`, SIGCOMM 2020 §3.5): many flows into one
    /// receiver each hold a small window and together queue more than one would. Zero turns
    /// it off. Default 10 µs, chosen here so the target doubles at `min_window` (the Swift
    /// paper publishes no value); a scenario asks for at most 1 s.
    #[serde(deserialize_with = "crate::units::deserialize_span")]
    pub flow_scaling_range: Span,
    /// A fragment not ACKed this long after it was posted fails its connection with
    /// [`crate::XrdmaError::AckTimeout`] and its buffers are reclaimed (default 1 s: above a
    /// NIC's whole retransmission budget, (retry count + 1) x local ACK timeout, so on a lossy
    /// fabric go-back-N gets to recover a lost tail before the middleware gives up; above 0).
    #[serde(deserialize_with = "crate::units::deserialize_span")]
    pub ack_timeout: Span,
    /// Delayed ACKs: on a connection in request/response (this side answered the frame
    /// before the last, Linux's `pingpong` mode), a receiver with nothing to send holds its
    /// cumulative ACK up to this long for a frame of its own to carry it (the next request
    /// carries the ACK of the last reply), instead of a zero-length ACK SEND at once. A
    /// one-way stream is ACKed at once, and so is a quarter of the receive depth unACKed. Zero (the default) ACKs at once, as TCP's `TCP_QUICKACK`; at most
    /// `ack-timeout / 4`. The delay is TCP's delayed ACK (RFC 1122 §4.2.3.2) with the
    /// middleware's own bound.
    #[serde(deserialize_with = "crate::units::deserialize_span")]
    pub ack_delay: Span,
    /// Whether the window adapts (grows with RTT, shrinks by β on ECN echoes). `false` keeps it
    /// at `initial_window` for the connection's life (RTTs are still measured), to compare a
    /// run with and without the middleware's own congestion reaction (default `true`).
    pub adaptive_window: bool,
    /// Deliver each fragment as it arrives ([`crate::Event::Fragment`]) instead of whole
    /// messages ([`crate::Event::Message`]): the receiver then holds no reassembly buffer, for
    /// applications that consume large messages as a stream (default `false`).
    pub deliver_fragments: bool,
    /// Receive WRs kept posted per QP (default 256; 2..=[`MAX_QUEUE_DEPTH`]). With
    /// [`Config::receive_credits`] a sender keeps at most half of them in flight, so it never
    /// causes an RNR NAK.
    pub recv_depth: u32,
    /// Whether a sender keeps its frames and fragments in flight within half the peer's
    /// receive depth, its receive credits (default `true`): data and ACKs together then never
    /// find the peer's receive queue empty. `false` lets a sender post past them (only the
    /// window and the send queue limit it), so a peer that stops reposting receives (a
    /// stalled host) runs out, and its NIC answers RNR NAKs that the requester retries
    /// (`rnr_retry`, `min_rnr_timer`): the setting that exercises RNR end to end.
    pub receive_credits: bool,
    /// The largest message, bytes (default and most 2 GiB, 2^31: the largest message an IB
    /// RC QP carries, IB Spec vol. 1 §9.4 and `ibv_port_attr.max_msg_sz` on ConnectX and
    /// Soft-RoCE; at least `eager_limit`). [`crate::Endpoint::send`] refuses a longer one, and
    /// a receiver fails a connection whose RTS announces one (before granting or registering
    /// anything). Not a scenario key.
    #[serde(skip_deserializing)]
    pub max_message_size: u64,
    /// Frames of at most this many bytes (header included) are posted inline
    /// (`IBV_SEND_INLINE`: the NIC takes the bytes from the WQE instead of reading registered
    /// memory); the QP is created with this `max_inline_data`. Default 220 bytes, a size
    /// ConnectX and Soft-RoCE (400) both accept and perftest's latency tests inline up to;
    /// 0 turns inlining off. Not a scenario key.
    #[serde(skip_deserializing)]
    pub inline_limit: u32,
    /// Rate of the link this endpoint's fragments leave on, bits/s, to add one fragment's
    /// serialisation to the target and take each RTT sample's own serialisation out of its
    /// queueing delay. The runner sets it (the simulator's host link rate; on a device, the
    /// port's active rate); `None` (the default) leaves both terms at 0. Not a scenario key.
    #[serde(skip_deserializing)]
    pub link_rate_bps: Option<u64>,
    /// Send queue depth per QP (default 512; 2..=[`MAX_QUEUE_DEPTH`]). Not a scenario key.
    #[serde(skip_deserializing)]
    pub send_depth: u32,
    /// Selective signalling: a connection asks for a send completion on at least every
    /// `signal_interval`-th consecutive send WR of its QP, besides the last WR of every burst
    /// and every ACK SEND, which are always signaled; the others complete silently and are
    /// retired by the next signaled completion (see [`crate::Endpoint::poll_op`]). 1 signals
    /// every WR. Range 1..=`send_depth / 2`, default 64: perftest's `--cq-mod` (default 100)
    /// signals every 100th WR of a 128-deep send queue (`--tx-depth`), which leaves most of
    /// the queue to silent WRs; 64 is an eighth of the default 512-deep queue (so WRs not
    /// yet retired hold at most 63 slots) and half the 128 frames the default receive
    /// credits let a connection keep in flight (so a full burst still asks for a completion
    /// midway). Not a scenario key.
    #[serde(skip_deserializing)]
    pub signal_interval: u32,
    /// First sequence number of each direction (default 0); tests set it near `u32::MAX` to
    /// exercise wrap-around. Not a scenario key.
    #[serde(skip_deserializing)]
    pub initial_seq: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fragment_size: 64 << 10,
            eager_limit: 4 << 10,
            inline_limit: 220,
            max_message_size: MAX_MESSAGE_SIZE,
            landing_budget: 1 << 30,
            initial_window: 64 << 10,
            min_window: 4 << 10,
            max_window: 256 << 10,
            beta: 0.5,
            alpha: 0.125,
            target_delay: Span::from_us(10),
            flow_scaling_range: Span::from_us(10),
            link_rate_bps: None,
            ack_timeout: Span::from_ms(1000),
            ack_delay: Span::ZERO,
            recv_depth: 256,
            receive_credits: true,
            send_depth: 512,
            signal_interval: 64,
            initial_seq: 0,
            adaptive_window: true,
            deliver_fragments: false,
        }
    }
}

/// A configuration value out of range; names the field.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("xrdma.{field}: {reason}")]
pub struct ConfigError {
    /// The field, as the scenario spells it (kebab-case): the one to blame first.
    pub field: &'static str,
    /// The other field the reason compares `field` with (`min-window` when `initial-window`
    /// is below it), to blame where `field` is not written; `None` for a range of one field.
    pub also: Option<&'static str>,
    /// What is wrong and what is allowed.
    pub reason: String,
}

/// `n` bytes in words: "1 byte", "4096 bytes".
fn byte_count(n: u64) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}

impl Config {
    /// Check every field's range.
    ///
    /// # Errors
    /// The first field out of range, with the allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, reason: String| {
            Err(ConfigError {
                field,
                also: None,
                reason,
            })
        };
        if self.eager_limit > MAX_EAGER_LIMIT {
            return err(
                "eager-limit",
                format!(
                    "{} bytes is above the largest receive buffer of 64 KiB ({MAX_EAGER_LIMIT} \
                     bytes)",
                    self.eager_limit
                ),
            );
        }
        if self.landing_budget == 0 {
            return err("landing-budget", "must be at least 1 byte".into());
        }
        if self.min_window == 0 {
            return err("min-window", "must be at least 1 byte".into());
        }
        // initial-window is the value that must sit between the bounds: it is blamed first.
        let out_of_order = |bound, word, other| {
            Err(ConfigError {
                field: "initial-window",
                also: Some(bound),
                reason: format!(
                    "initial-window ({}) is {word} {bound} ({}): need min-window ≤ \
                     initial-window ≤ max-window",
                    byte_count(self.initial_window),
                    byte_count(other)
                ),
            })
        };
        if self.initial_window < self.min_window {
            return out_of_order("min-window", "below", self.min_window);
        }
        if self.initial_window > self.max_window {
            return out_of_order("max-window", "above", self.max_window);
        }
        if !(0.5..=0.8).contains(&self.beta) {
            return err("beta", format!("{} is outside [0.5, 0.8]", self.beta));
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return err("alpha", format!("{} is outside (0, 1]", self.alpha));
        }
        if self.target_delay == Span::ZERO {
            return err("target-delay", "must be above 0".into());
        }
        if self.ack_timeout == Span::ZERO {
            return err("ack-timeout", "must be above 0".into());
        }
        if self.ack_delay.as_ps() > self.ack_timeout.as_ps() / 4 {
            return err(
                "ack-delay",
                format!(
                    "{} is above a quarter of ack-timeout ({})",
                    self.ack_delay, self.ack_timeout
                ),
            );
        }
        if self.fragment_size == 0 || self.fragment_size > (1 << 30) {
            return err(
                "fragment-size",
                format!("{} is outside 1 B..=1 GiB", self.fragment_size),
            );
        }
        if self.max_window > (1 << 32) {
            return err(
                "max-window",
                format!("{} bytes exceeds 4 GiB (4294967296 bytes)", self.max_window),
            );
        }
        if self.link_rate_bps == Some(0) {
            return err("link-rate", "must be greater than 0 bit/s".into());
        }
        if !(self.eager_limit..=MAX_MESSAGE_SIZE).contains(&self.max_message_size) {
            return err(
                "max-message-size",
                format!(
                    "{} bytes is outside [eager-limit ({}), 2 GiB ({MAX_MESSAGE_SIZE})]",
                    self.max_message_size, self.eager_limit
                ),
            );
        }
        // Completions are matched to WRs by a 24-bit tag per queue (see the endpoint), so a
        // queue holds far fewer than 2^24 WRs; real NICs allow at most tens of thousands.
        if !(2..=MAX_QUEUE_DEPTH).contains(&self.recv_depth) {
            return err(
                "recv-depth",
                format!("{} is outside 2..={MAX_QUEUE_DEPTH}", self.recv_depth),
            );
        }
        if !(2..=MAX_QUEUE_DEPTH).contains(&self.send_depth) {
            return err(
                "send-depth",
                format!("{} is outside 2..={MAX_QUEUE_DEPTH}", self.send_depth),
            );
        }
        // The transport frees an unsignaled WR's slot only when a later signaled one of its
        // queue completes: at most half the queue waits for that.
        if !(1..=self.send_depth / 2).contains(&self.signal_interval) {
            return err(
                "signal-interval",
                format!(
                    "{} is outside 1..=send-depth / 2 ({})",
                    self.signal_interval,
                    self.send_depth / 2
                ),
            );
        }
        Ok(())
    }

    /// Bytes of the per-connection staging ring the sender copies frames and fragments into
    /// before posting them: `max_window + fragment_size + HEADER_LEN`, so a full window fits
    /// even when the ring wastes its tail before wrapping.
    pub fn ring_bytes(&self) -> u64 {
        self.max_window + self.fragment_size + crate::fragment::HEADER_LEN as u64
    }

    /// Bytes of one posted receive buffer: the header plus the larger of `eager_limit` and the
    /// largest control frame body (a CTS with [`crate::fragment::MAX_BATCH`] grants, 320 bytes),
    /// rounded up to 64 bytes (a cache line) so buffers do not share lines.
    pub fn recv_slot_bytes(&self) -> u64 {
        let body = self
            .eager_limit
            .max(crate::fragment::CONTROL_BODY_MAX as u64);
        (crate::fragment::HEADER_LEN as u64 + body).div_ceil(64) * 64
    }

    /// Bytes of a connection's receive buffers: `recv_depth` × [`Config::recv_slot_bytes`].
    pub fn recv_buffer_bytes(&self) -> u64 {
        u64::from(self.recv_depth) * self.recv_slot_bytes()
    }

    /// The QP capacities a connection asks for: `send_depth` send WRs, `recv_depth` receive
    /// WRs, `inline_limit` bytes of inline data. The QP cache serves a QP only to a connection
    /// asking for the same capacities.
    pub fn qp_caps(&self) -> crate::QpCaps {
        crate::QpCaps {
            max_send_wr: self.send_depth,
            max_recv_wr: self.recv_depth,
            max_inline_data: self.inline_limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(Config::default().validate(), Ok(()));
    }

    #[test]
    fn beta_outside_range_is_rejected() {
        let c = Config {
            beta: 0.9,
            ..Config::default()
        };
        assert_eq!(c.validate().map_err(|e| e.field), Err("beta"));
        let c = Config {
            beta: 0.49,
            ..Config::default()
        };
        assert_eq!(c.validate().map_err(|e| e.field), Err("beta"));
    }

    #[test]
    fn signal_interval_is_within_half_the_send_queue() {
        for (send_depth, signal_interval, ok) in [
            (512, 256, true),
            (512, 257, false),
            (2, 1, true),
            (8, 0, false),
        ] {
            let c = Config {
                send_depth,
                signal_interval,
                ..Config::default()
            };
            let r = c.validate().map_err(|e| e.field);
            assert_eq!(r.is_ok(), ok, "{send_depth} {signal_interval}");
            if !ok {
                assert_eq!(r, Err("signal-interval"));
            }
        }
    }

    #[test]
    fn scenario_keys_are_kebab_case_with_units() {
        let c: Config = serde_json::from_str(
            r#"{ "fragment-size": "32KiB", "max-window": 1048576, "target-delay": "5us",
                 "beta": 0.6, "receive-credits": false }"#,
        )
        .expect("reads");
        let want = Config {
            fragment_size: 32 << 10,
            max_window: 1 << 20,
            target_delay: Span::from_us(5),
            beta: 0.6,
            receive_credits: false,
            ..Config::default()
        };
        assert_eq!(c, want);
        // The keys a scenario may write, in this order; the runner's and tools' fields are
        // not among them.
        let e = serde_json::from_str::<Config>(r#"{ "link-rate-bps": 1 }"#)
            .expect_err("not a key")
            .to_string();
        assert!(
            e.starts_with(
                "unknown field `link-rate-bps`, expected one of `fragment-size`, \
                 `eager-limit`, `landing-budget`, `initial-window`, `min-window`, \
                 `max-window`, `beta`, `alpha`, `target-delay`, `flow-scaling-range`, \
                 `ack-timeout`, `ack-delay`, `adaptive-window`, `deliver-fragments`, `recv-depth`, \
                 `receive-credits`"
            ),
            "{e}"
        );
        // A span needs its unit; a size must be whole bytes.
        assert!(serde_json::from_str::<Config>(r#"{ "ack-timeout": 5 }"#).is_err());
        assert!(serde_json::from_str::<Config>(r#"{ "min-window": "1.5B" }"#).is_err());
    }

    #[test]
    fn window_order_is_checked() {
        let c = Config {
            initial_window: 1 << 20,
            max_window: 1 << 19,
            ..Config::default()
        };
        assert_eq!(c.validate().map_err(|e| e.field), Err("initial-window"));
    }
}
