//! The path model of a run: what the ideal FCT of a message (and so its slowdown) needs, and
//! the bound T* of an incast through it ([`IdealCompletion`]).

use serde::{Deserialize, Serialize};

/// The unloaded path between a sender and the receiving host, as the backend states it.
///
/// Every run has one; a backend that cannot state a figure leaves it `null` (the verbs
/// backend does not know the base RTT, for one), and then no slowdown is computed. T*
/// ([`IdealCompletion`]) is derived from it for an incast only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PathModel {
    /// Round trip of a header-only packet and its ACK on idle links, ps.
    pub base_rtt_ps: Option<u64>,
    /// Bottleneck link rate B, bits per second.
    pub bottleneck_bps: Option<u64>,
    /// Per-packet wire overhead, bytes.
    pub header_bytes: Option<u64>,
    /// Payload bytes per packet (the path MTU).
    pub mtu_bytes: Option<u64>,
}

impl PathModel {
    /// T* of `total_bytes` through this path ([`IdealCompletion::incast`]); `None` when a
    /// figure is unknown or T* does not fit.
    pub fn ideal(&self, total_bytes: u64) -> Option<IdealCompletion> {
        IdealCompletion::incast(
            total_bytes,
            self.header_bytes?,
            self.mtu_bytes?,
            self.bottleneck_bps?,
            self.base_rtt_ps?,
        )
    }

    /// The payload ceiling of the bottleneck, bits per second: `B × MTU / (MTU + header)`,
    /// the most payload a link of rate B carries in full packets (92.6 Gb/s for RoCE's
    /// 1024-byte MTU and 82-byte headers at 100 Gb/s); `None` when a figure is unknown.
    pub fn payload_ceiling_bps(&self) -> Option<f64> {
        let (b, mtu, hdr) = (self.bottleneck_bps?, self.mtu_bytes?, self.header_bytes?);
        (mtu > 0).then(|| b as f64 * mtu as f64 / (mtu + hdr) as f64)
    }

    /// The path of an ideal completion (how a result of schema version 2, which had no path
    /// model, states it).
    pub fn of_ideal(i: &IdealCompletion) -> Self {
        PathModel {
            base_rtt_ps: Some(i.base_rtt_ps),
            bottleneck_bps: Some(i.bottleneck_bps),
            header_bytes: Some(i.header_bytes),
            mtu_bytes: Some(i.mtu_bytes),
        }
    }
}

/// Analytical lower bound T* on the completion of an N-to-1 incast:
///
/// `T* = N·S·(1 + header/MTU) / B + base RTT`
///
/// with N senders of S payload bytes each (`total_bytes = N·S`), per-packet wire overhead
/// `header` bytes, `MTU` payload bytes per packet and bottleneck rate B bits per second. A
/// simulated completion below T* indicates a bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IdealCompletion {
    /// T*, ps.
    pub t_star_ps: u64,
    /// Unloaded round-trip time added to the serialization bound, ps.
    pub base_rtt_ps: u64,
    /// Bottleneck link rate B, bits per second.
    pub bottleneck_bps: u64,
    /// Per-packet wire overhead, bytes.
    pub header_bytes: u64,
    /// Payload bytes per packet.
    pub mtu_bytes: u64,
    /// Total payload through the bottleneck, N·S bytes.
    pub total_bytes: u64,
}

impl IdealCompletion {
    /// Computes T* with the formula `total·(1 + header/mtu)·8 / B + base RTT`, in exact
    /// integer arithmetic rounded up to the next picosecond.
    ///
    /// `total_bytes` is N·S. Returns `None` when `mtu_bytes` or `bottleneck_bps` is 0 or the
    /// result does not fit in `u64` picoseconds.
    ///
    /// When S is a multiple of the MTU, `total·(1 + header/mtu)` is exactly the number of bytes
    /// the bottleneck must serialize; otherwise the last packet of each message is short and
    /// the formula's overhead is a slight underestimate, so T* remains a lower bound.
    pub fn incast(
        total_bytes: u64,
        header_bytes: u64,
        mtu_bytes: u64,
        bottleneck_bps: u64,
        base_rtt_ps: u64,
    ) -> Option<Self> {
        if mtu_bytes == 0 || bottleneck_bps == 0 {
            return None;
        }
        // t [ps] = total·(mtu+header)·8·1e12 / (mtu·B); u128 holds 2^64·2^64 products.
        let num = u128::from(total_bytes)
            .checked_mul(u128::from(mtu_bytes) + u128::from(header_bytes))?
            .checked_mul(8 * 1_000_000_000_000)?;
        let den = u128::from(mtu_bytes) * u128::from(bottleneck_bps);
        let serialization = num.div_ceil(den);
        let t_star = serialization.checked_add(u128::from(base_rtt_ps))?;
        Some(Self {
            t_star_ps: u64::try_from(t_star).ok()?,
            base_rtt_ps,
            bottleneck_bps,
            header_bytes,
            mtu_bytes,
            total_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_ceiling_takes_each_packets_header_off_the_link_rate() {
        let path = |mtu, hdr| PathModel {
            base_rtt_ps: None,
            bottleneck_bps: Some(100_000_000_000),
            header_bytes: Some(hdr),
            mtu_bytes: Some(mtu),
        };
        // RoCE on the main job: 1024-byte MTU, 82-byte headers.
        let roce = path(1024, 82).payload_ceiling_bps().expect("stated");
        assert!((roce / 1e9 - 92.586).abs() < 1e-3, "{roce}");
        // TCP: 1448-byte MSS, 90 bytes of headers.
        let tcp = path(1448, 90).payload_ceiling_bps().expect("stated");
        assert!((tcp / 1e9 - 94.148).abs() < 1e-3, "{tcp}");
        assert_eq!(path(0, 82).payload_ceiling_bps(), None);
        assert_eq!(PathModel::default().payload_ceiling_bps(), None);
    }
}
