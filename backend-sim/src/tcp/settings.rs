//! The hosts' kernel TCP settings, as a scenario's `tcp:` block sets them ([`TcpSettings`]).

use super::TcpConfig;
use serde::{Deserialize, Serialize};
use xrdma::units;
use xrdma::Span;

/// Wire bytes a TCP segment carries besides its payload: 8 preamble/SFD + 14 Ethernet + 20
/// IPv4 + 20 TCP + 12 TCP timestamp option (RFC 7323, on by default in Linux) + 4 FCS + 12
/// inter-frame gap.
pub const TCP_HEADER_BYTES: u32 = 90;

/// `tcp.mss` as a size; one above 64 KiB is refused here (its range is checked with the
/// others, [`TcpSettings`]'s check, but a `u32` must hold it first).
fn deserialize_mss<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let bytes =
        units::deserialize_size_at_most(d, 65_536, |b| format!("{b} B is outside 64 B – 64 KiB"))?;
    Ok(u32::try_from(bytes).unwrap_or(u32::MAX))
}

/// The kernel TCP of every simulated host (`tcp:` in a scenario; used when the scenario's
/// `stack` is `tcp` or `dctcp`). Every default is Linux's, except where a data-centre value
/// is named.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct TcpSettings {
    /// Payload bytes per full segment, written as a size (`1448`, `1448B`, `8KiB`). Default
    /// 1448: a 1500-byte Ethernet MTU less 20 IPv4, 20 TCP and 12 timestamp-option bytes.
    #[serde(deserialize_with = "deserialize_mss")]
    pub mss: u32,
    /// Initial congestion window, segments. Default 10 (RFC 6928; Linux `TCP_INIT_CWND`).
    pub init_cwnd: u32,
    /// Lower bound of the retransmission timeout. Default 200 ms (Linux `TCP_RTO_MIN`);
    /// data centres lower it to 1–5 ms (`ip route … rto_min`), which is what ends incast
    /// collapse (Vasudevan et al., SIGCOMM 2009).
    #[serde(deserialize_with = "units::deserialize_span")]
    pub rto_min: Span,
    /// Retransmission timeout before the first RTT sample. Default 1 s (RFC 6298 §2.1).
    #[serde(deserialize_with = "units::deserialize_span")]
    pub rto_initial: Span,
    /// Upper bound of the backed-off retransmission timeout. Default 120 s (Linux
    /// `TCP_RTO_MAX`).
    #[serde(deserialize_with = "units::deserialize_span")]
    pub rto_max: Span,
    /// Delayed-ACK timer; `0s` ACKs every segment at once. Default 40 ms (Linux
    /// `TCP_DELACK_MIN`).
    #[serde(deserialize_with = "units::deserialize_span")]
    pub delayed_ack: Span,
    /// A receiver ACKs at least every this many full segments. Default 2 (RFC 1122
    /// §4.2.3.2, RFC 5681 §4.2).
    pub ack_every: u32,
    /// Receive buffer, bytes: the largest advertised window. Default 6 MiB (the third value
    /// of Linux's `net.ipv4.tcp_rmem`).
    #[serde(deserialize_with = "units::deserialize_size")]
    pub rcv_buf: u64,
    /// Send buffer, bytes: unsent and unacknowledged data a socket holds. Default 4 MiB (the
    /// third value of Linux's `net.ipv4.tcp_wmem`).
    #[serde(deserialize_with = "units::deserialize_size")]
    pub snd_buf: u64,
    /// DCTCP's gain g for its estimate α of the marked fraction. Default 1/16 (RFC 8257
    /// §4.2; Linux `dctcp_shift_g` = 4).
    pub dctcp_g: f64,
}

impl Default for TcpSettings {
    fn default() -> Self {
        TcpSettings {
            mss: 1448,
            init_cwnd: 10,
            rto_min: Span::from_ms(200),
            rto_initial: Span::from_ms(1000),
            rto_max: Span::from_ms(120_000),
            delayed_ack: Span::from_ms(40),
            ack_every: 2,
            rcv_buf: 6 << 20,
            snd_buf: 4 << 20,
            dctcp_g: 1.0 / 16.0,
        }
    }
}

impl TcpSettings {
    /// A connection's configuration under these settings, DCTCP's reaction to ECN on or off.
    pub(crate) fn config(&self, dctcp: bool) -> TcpConfig {
        TcpConfig {
            mss: self.mss,
            init_cwnd: self.init_cwnd,
            rto_min: self.rto_min,
            rto_initial: self.rto_initial,
            rto_max: self.rto_max,
            delayed_ack: self.delayed_ack,
            ack_every: self.ack_every,
            rcv_buf: self.rcv_buf,
            snd_buf: self.snd_buf,
            dctcp,
            dctcp_g: self.dctcp_g,
        }
    }

    /// Check the settings.
    ///
    /// # Errors
    /// The first bad field's name and why: an MSS outside 64 B – 64 KiB, an initial window or
    /// `ack-every` of zero, a buffer below one MSS, `rto-min` or `rto-initial` of zero or
    /// above `rto-max`, a gain outside (0, 1].
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(64..=65_536).contains(&self.mss) {
            return Err(("tcp.mss", format!("{} is outside 64 B – 64 KiB", self.mss)));
        }
        for (field, v) in [
            ("tcp.init-cwnd", u64::from(self.init_cwnd)),
            ("tcp.ack-every", u64::from(self.ack_every)),
        ] {
            if v == 0 {
                return Err((field, "must be at least 1".into()));
            }
        }
        // A buffer below one segment leaves the connection sending a byte at a time, for
        // simulated hours.
        for (field, v) in [("tcp.rcv-buf", self.rcv_buf), ("tcp.snd-buf", self.snd_buf)] {
            if v < u64::from(self.mss) {
                return Err((
                    field,
                    format!("{v} B is below one segment (tcp.mss = {} B)", self.mss),
                ));
            }
        }
        if self.rto_min > self.rto_max || self.rto_min == Span::ZERO {
            return Err((
                "tcp.rto-min",
                format!(
                    "{} must be above 0 and at most rto-max ({})",
                    self.rto_min, self.rto_max
                ),
            ));
        }
        if self.rto_initial == Span::ZERO || self.rto_initial > self.rto_max {
            return Err((
                "tcp.rto-initial",
                format!(
                    "{} must be above 0 and at most rto-max ({}): a zero timeout never waits",
                    self.rto_initial, self.rto_max
                ),
            ));
        }
        if !(self.dctcp_g > 0.0 && self.dctcp_g <= 1.0) {
            return Err(("tcp.dctcp-g", format!("{} is outside (0, 1]", self.dctcp_g)));
        }
        Ok(())
    }
}
