//! The `sim:` block: the simulated network (read by the simulator backend only).

use crate::capture_section::{check_capture, RawCapture};
use crate::check::{field_error, under, FieldError};
use crate::dcqcn_section::{check_dcqcn, DcqcnSection, RawDcqcn};
use crate::faults_section::{check_faults, FaultsSection, RawFaults};
use crate::host_section::{check_host, RawHost};
use crate::topology_section::{check_topology, RawTopology, TopologySection};
use crate::units::{Rate, Size, Span};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};

/// The simulated network: one switch, every host on its own full-duplex link.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSection {
    /// Seed of the simulator's random streams. Default 1.
    pub seed: u64,
    /// Rate of every link, bits per second. Default 100 Gb/s; > 0.
    pub link_rate_bps: u64,
    /// One-way propagation delay of every link. Default 1 µs.
    pub link_delay: xrdma::Span,
    /// RoCE payload bytes a simulated port carries per packet (what a device reports as its
    /// active MTU). Packets carry the smaller of this and `rc.path-mtu`. Default 1024; > 0.
    pub mtu: u32,
    /// Wire overhead per packet, bytes. Default 82: preamble/SFD 8 + Ethernet 14 + IPv4 20 +
    /// UDP 8 + BTH 12 + ICRC 4 + FCS 4 + inter-frame gap 12 (RoCEv2, IBTA Annex A17).
    pub header_bytes: u32,
    /// The switch's shared buffer, bytes. Default 32 MiB; ≥ one packet (`mtu + header_bytes`).
    pub switch_buffer_bytes: u64,
    /// ECN marking at the switch; `None` (block absent) = no marking.
    pub ecn: Option<EcnSection>,
    /// PFC at the switch; `None` (block absent, or `pfc:` with no value) = off. `pfc: {}` = on
    /// with the simulator's computed thresholds.
    pub pfc: Option<PfcSection>,
    /// At most one CNP per QP per this interval at the receiver (DCQCN NP). Default 50 µs
    /// (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015).
    pub cnp_interval: xrdma::Span,
    /// DCQCN rate control at every NIC; `None` (block absent) = none, `dcqcn: {}` = on with the
    /// defaults.
    pub dcqcn: Option<DcqcnSection>,
    /// The fabric's shape. Default: every host on one switch.
    pub topology: TopologySection,
    /// Interval at which the simulator samples queues, per-sender throughput and congestion
    /// counters (`sample-interval: 10us`, or `off`); `None` = off. Default
    /// [`DEFAULT_SAMPLE_INTERVAL`]; > 0.
    pub sample_interval: Option<xrdma::Span>,
    /// Injected faults (`faults:`, see [`FaultsSection`]); default none.
    pub faults: FaultsSection,
    /// The host model (`host:`, a profile name or `{ profile, <cost>: <time> }`, see
    /// [`xrdma_sim::HostModel`]); default the simulator's, the ideal host that costs nothing.
    pub host: xrdma_sim::HostModel,
    /// Packet capture of chosen hosts' links (`capture: { hosts, max-packets, from, until }`,
    /// times on the simulated clock); `None` (block absent) = none.
    pub capture: Option<xrdma_sim::CaptureConfig>,
}

/// Default `sim.sample-interval`: 10 µs, a 100 Gb/s link carries 125 000 bytes (about 113
/// packets of a 1 KiB MTU) in it, so one interval's throughput resolves better than 1 %.
pub const DEFAULT_SAMPLE_INTERVAL: xrdma::Span = xrdma::Span::from_us(10);

impl Default for SimSection {
    fn default() -> Self {
        // The simulator's own defaults, so a scenario that leaves a key out gets what a
        // program configuring the simulator directly would get (one source of each value).
        let d = xrdma_sim::SimConfig::default();
        SimSection {
            seed: d.seed,
            link_rate_bps: d.link_rate_bps,
            link_delay: d.link_delay,
            mtu: d.mtu,
            header_bytes: d.header_bytes,
            switch_buffer_bytes: d.switch_buffer_bytes,
            ecn: None,
            pfc: None,
            cnp_interval: d.cnp_interval,
            dcqcn: None,
            topology: TopologySection::Star,
            sample_interval: Some(DEFAULT_SAMPLE_INTERVAL),
            faults: FaultsSection::default(),
            host: d.host,
            capture: None,
        }
    }
}

/// RED-style ECN marking on the egress queue length q (bytes): probability 0 for q ≤ Kmin,
/// rising linearly to Pmax at Kmax, 1 above Kmax.
///
/// Defaults, as in the HPCC artifact's DCQCN setup (Li et al., SIGCOMM 2019): Kmin 100 KiB and
/// Kmax 400 KiB at 25 Gb/s, scaled by link rate / 25 Gb/s (at 100 Gb/s: 400 KiB / 1600 KiB),
/// Pmax 0.2.
#[derive(Clone, Debug, PartialEq)]
pub struct EcnSection {
    /// Kmin, bytes; ≤ Kmax.
    pub kmin_bytes: u64,
    /// Kmax, bytes.
    pub kmax_bytes: u64,
    /// Marking probability at Kmax, within (0, 1].
    pub pmax: f64,
}

impl EcnSection {
    /// The default thresholds for a link of `link_rate_bps`:
    /// Kmin = 100 KiB × rate / 25 Gb/s, Kmax = 400 KiB × rate / 25 Gb/s (rounded down),
    /// Pmax = 0.2.
    pub fn default_for_rate(link_rate_bps: u64) -> EcnSection {
        let d = xrdma_sim::EcnConfig::default_for_rate(link_rate_bps);
        EcnSection {
            kmin_bytes: d.kmin_bytes,
            kmax_bytes: d.kmax_bytes,
            pmax: d.pmax,
        }
    }
}

/// PFC thresholds per ingress port, bytes. A value left out is computed by the simulator from
/// the buffer, port count, link rate and delay (see the simulator's `PfcConfig`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PfcSection {
    /// Send PAUSE (XOFF) upstream when the bytes buffered from one ingress port exceed this;
    /// > 0.
    pub xoff_bytes: Option<u64>,
    /// Send RESUME (XON) when they fall to this or below; ≤ `xoff_bytes`.
    pub xon_bytes: Option<u64>,
    /// Buffer kept per ingress port for the bytes still arriving after XOFF.
    pub headroom_bytes: Option<u64>,
}

/// The `sim:` mapping as written.
/// The RC QP attributes `sim:` no longer takes (they moved to the top-level `rc:` block), in
/// the order [`RawSim`] reads them: a scenario that still writes one gets a pointer to `rc:`,
/// and an unknown key's list of expected keys does not offer them.
pub(crate) const MOVED_TO_RC: [&str; 4] = [
    "min-rnr-timer",
    "rnr-retry",
    "local-ack-timeout",
    "retry-cnt",
];

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (the simulated network)"
)]
pub(crate) struct RawSim {
    seed: Option<u64>,
    link_rate: Option<Rate>,
    link_delay: Option<Span>,
    mtu: Option<Size>,
    header_bytes: Option<Size>,
    switch_buffer: Option<Size>,
    ecn: Option<RawEcn>,
    pfc: Option<RawPfc>,
    cnp_interval: Option<Span>,
    dcqcn: Option<RawDcqcn>,
    /// The RC attributes that moved to the `rc:` block ([`MOVED_TO_RC`]): read only to say so.
    min_rnr_timer: Option<IgnoredAny>,
    rnr_retry: Option<IgnoredAny>,
    local_ack_timeout: Option<IgnoredAny>,
    retry_cnt: Option<IgnoredAny>,
    topology: Option<RawTopology>,
    sample_interval: Option<SampleInterval>,
    faults: Option<RawFaults>,
    host: Option<RawHost>,
    capture: Option<RawCapture>,
}

/// The shortest `sample-interval` accepted: 1 µs, about ten 1 KiB packets at 100 Gb/s, so a bin
/// holds several packets and its rate is a rate.
pub const MIN_SAMPLE_INTERVAL: xrdma::Span = xrdma::Span::from_us(1);

/// `sample-interval`: a time span of at least [`MIN_SAMPLE_INTERVAL`], or `off`.
struct SampleInterval(Option<xrdma::Span>);

struct SampleIntervalVisitor;

impl serde::de::Visitor<'_> for SampleIntervalVisitor {
    type Value = SampleInterval;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a time span of at least 1us such as `10us`, or `off`")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SampleInterval, E> {
        if v.trim() == "off" {
            return Ok(SampleInterval(None));
        }
        let t = crate::units::parse_time(v).map_err(E::custom)?;
        if t < MIN_SAMPLE_INTERVAL {
            return Err(E::custom(format!(
                "{t} is below {MIN_SAMPLE_INTERVAL}: a shorter bin than one MTU packet's \
                 serialization shows whole packets as rate spikes (write `off` to turn \
                 sampling off)"
            )));
        }
        Ok(SampleInterval(Some(t)))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<SampleInterval, E> {
        // YAML 1.1 readers may hand `off` over as a boolean.
        if v {
            Err(E::custom("expected a time span such as `10us`, or `off`"))
        } else {
            Ok(SampleInterval(None))
        }
    }
}

impl<'de> Deserialize<'de> for SampleInterval {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SampleIntervalVisitor)
    }
}

/// The keys an `ecn` mapping gave, checked on their own.
struct GivenEcn {
    kmin: Option<u64>,
    kmax: Option<u64>,
    pmax: Option<f64>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (ECN thresholds `{ kmin, kmax, pmax }`)"
)]
struct RawEcn {
    kmin: Option<Size>,
    kmax: Option<Size>,
    pmax: Option<f64>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (PFC thresholds `{ xoff, xon, headroom }`)"
)]
struct RawPfc {
    xoff: Option<Size>,
    xon: Option<Size>,
    headroom: Option<Size>,
}

fn to_u32(key: &'static str, bytes: u64) -> Result<u32, FieldError> {
    u32::try_from(bytes).map_err(|_| {
        field_error(
            key,
            format!("{bytes} bytes is too large: at most {} bytes", u32::MAX),
        )
    })
}

/// Checks the `sim:` block: its sub-blocks, then the link, packet and buffer sizes and the
/// ECN thresholds against the link rate.
pub(crate) fn check_sim(raw: RawSim) -> Result<SimSection, FieldError> {
    let given_ecn = raw
        .ecn
        .map(check_raw_ecn)
        .transpose()
        .map_err(under("ecn"))?;
    let pfc = raw.pfc.map(check_pfc).transpose().map_err(under("pfc"))?;
    let dcqcn = raw
        .dcqcn
        .map(check_dcqcn)
        .transpose()
        .map_err(under("dcqcn"))?;
    let topology = raw
        .topology
        .map(check_topology)
        .transpose()
        .map_err(under("topology"))?;
    let faults = raw
        .faults
        .map(check_faults)
        .transpose()
        .map_err(under("faults"))?;
    let host = raw
        .host
        .map(check_host)
        .transpose()
        .map_err(under("host"))?;
    let capture = raw
        .capture
        .map(check_capture)
        .transpose()
        .map_err(under("capture"))?;
    let given = [
        raw.min_rnr_timer.is_some(),
        raw.rnr_retry.is_some(),
        raw.local_ack_timeout.is_some(),
        raw.retry_cnt.is_some(),
    ];
    if let Some((key, _)) = MOVED_TO_RC.iter().zip(given).find(|(_, given)| *given) {
        return Err(field_error(
            key,
            format!(
                "the RC QP attributes moved out of `sim:` to the top-level `rc:` block, which \
                 the simulator and the verbs backend both apply: write `rc: {{ {key}: ... }}`"
            ),
        ));
    }
    let d = SimSection::default();
    let link_rate_bps = raw.link_rate.map_or(d.link_rate_bps, |r| r.0);
    if link_rate_bps == 0 {
        return Err(field_error("link-rate", "must be above 0 bps"));
    }
    let mtu = match raw.mtu {
        Some(m) => to_u32("mtu", m.0)?,
        None => d.mtu,
    };
    if mtu == 0 {
        return Err(field_error("mtu", "must be at least 1 byte"));
    }
    let header_bytes = match raw.header_bytes {
        Some(h) => to_u32("header-bytes", h.0)?,
        None => d.header_bytes,
    };
    let switch_buffer_bytes = raw.switch_buffer.map_or(d.switch_buffer_bytes, |b| b.0);
    let packet = u64::from(mtu) + u64::from(header_bytes);
    if switch_buffer_bytes < packet {
        return Err(FieldError::new(
            vec!["switch-buffer", "mtu"],
            format!(
                "{switch_buffer_bytes} bytes cannot hold one packet of mtu + header-bytes = \
                 {packet} bytes"
            ),
        ));
    }
    let ecn = match given_ecn {
        Some(e) => Some(check_ecn(e, link_rate_bps)?),
        None => None,
    };
    let link_delay = raw.link_delay.map_or(d.link_delay, |t| t.0);
    if link_delay > MAX_LINK_DELAY {
        return Err(field_error(
            "link-delay",
            format!(
                "{link_delay} is above the {MAX_LINK_DELAY} a link may delay a packet (the \
                 simulator's clock, u64 picoseconds, must not overflow in the run)"
            ),
        ));
    }
    Ok(SimSection {
        seed: raw.seed.unwrap_or(d.seed),
        link_rate_bps,
        link_delay,
        mtu,
        header_bytes,
        switch_buffer_bytes,
        ecn,
        pfc,
        cnp_interval: raw.cnp_interval.map_or(d.cnp_interval, |t| t.0),
        dcqcn,
        topology: topology.unwrap_or_default(),
        sample_interval: raw.sample_interval.map_or(d.sample_interval, |s| s.0),
        faults: faults.unwrap_or_default(),
        host: host.unwrap_or(d.host),
        capture,
    })
}

/// The longest `link-delay` accepted: 1 s, a million times a datacenter link's and still far
/// from overflowing the simulator's u64-picosecond clock (about 213 days) in any run.
pub const MAX_LINK_DELAY: xrdma::Span = xrdma::Span::from_ms(1000);

/// Checks what the `ecn` mapping itself says; defaults are filled in by [`check_sim`], which
/// knows the link rate.
fn check_raw_ecn(raw: RawEcn) -> Result<GivenEcn, FieldError> {
    let given = GivenEcn {
        kmin: raw.kmin.map(|v| v.0),
        kmax: raw.kmax.map(|v| v.0),
        pmax: raw.pmax,
    };
    if let Some(pmax) = given.pmax {
        if !(pmax > 0.0 && pmax <= 1.0) {
            return Err(field_error("pmax", format!("{pmax} is outside (0, 1]")));
        }
    }
    if let (Some(kmin), Some(kmax)) = (given.kmin, given.kmax) {
        if kmin > kmax {
            return Err(FieldError::new(
                vec!["kmin", "kmax"],
                format!("Kmin ({kmin} bytes) is above Kmax ({kmax} bytes): need kmin ≤ kmax"),
            ));
        }
    }
    Ok(given)
}

/// Fills the ECN defaults for `link_rate_bps` and checks Kmin ≤ Kmax once more (one of them may
/// be a default).
fn check_ecn(given: GivenEcn, link_rate_bps: u64) -> Result<EcnSection, FieldError> {
    let d = EcnSection::default_for_rate(link_rate_bps);
    let ecn = EcnSection {
        kmin_bytes: given.kmin.unwrap_or(d.kmin_bytes),
        kmax_bytes: given.kmax.unwrap_or(d.kmax_bytes),
        pmax: given.pmax.unwrap_or(d.pmax),
    };
    if ecn.kmin_bytes > ecn.kmax_bytes {
        let which = if given.kmin.is_none() {
            "Kmin (default for the link rate)"
        } else {
            "Kmin"
        };
        let which_max = if given.kmax.is_none() {
            "Kmax (default for the link rate)"
        } else {
            "Kmax"
        };
        return Err(field_error(
            "ecn",
            format!(
                "{which} = {} bytes is above {which_max} = {} bytes: need kmin ≤ kmax",
                ecn.kmin_bytes, ecn.kmax_bytes
            ),
        ));
    }
    Ok(ecn)
}

fn check_pfc(raw: RawPfc) -> Result<PfcSection, FieldError> {
    let s = PfcSection {
        xoff_bytes: raw.xoff.map(|v| v.0),
        xon_bytes: raw.xon.map(|v| v.0),
        headroom_bytes: raw.headroom.map(|v| v.0),
    };
    if s.xoff_bytes == Some(0) {
        return Err(field_error("xoff", "must be at least 1 byte"));
    }
    if let (Some(xoff), Some(xon)) = (s.xoff_bytes, s.xon_bytes) {
        if xon > xoff {
            return Err(FieldError::new(
                vec!["xon", "xoff"],
                format!("XON ({xon} bytes) is above XOFF ({xoff} bytes): need xon ≤ xoff"),
            ));
        }
    }
    Ok(s)
}
