//! The `sim:` block: the simulated network (read by the simulator backend only).

use crate::capture_section::{check_capture, RawCapture};
use crate::check::{field_error, under, FieldError};
use crate::faults_section::{check_faults, HostFaults, RawFaults};
use crate::host_section::{check_host, RawHost};
use crate::units::{Rate, Size, Span};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use xrdma_sim::{
    DcqcnConfig, EcnConfig, EcnSpec, FaultConfig, PfcConfig, SimConfigError, Topology,
};

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
    /// ECN marking at the switch (`ecn: { kmin, kmax, pmax }`, read as [`EcnSpec`], keys left
    /// out scaled to `link-rate`); `None` (block absent) = no marking.
    pub ecn: Option<EcnConfig>,
    /// PFC at the switch (`pfc: { xoff, xon, headroom }`); `None` (block absent, or `pfc:` with
    /// no value) = off. `pfc: {}` = on with the simulator's computed thresholds.
    pub pfc: Option<PfcConfig>,
    /// At most one CNP per QP per this interval at the receiver (DCQCN NP). Default 50 µs
    /// (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015).
    pub cnp_interval: xrdma::Span,
    /// DCQCN rate control at every NIC (read as [`DcqcnConfig`], whose docs give the keys and
    /// defaults); `None` (block absent) = none, `dcqcn: {}` = on with the defaults.
    pub dcqcn: Option<DcqcnConfig>,
    /// The fabric's shape (`topology: { star | leaf-spine | fat-tree: ... }`, see
    /// [`Topology`]). Default: every host on one switch.
    pub topology: Topology,
    /// Interval at which the simulator samples queues, per-sender throughput and congestion
    /// counters (`sample-interval: 10us`, or `off`); `None` = off. Default
    /// [`DEFAULT_SAMPLE_INTERVAL`]; > 0.
    pub sample_interval: Option<xrdma::Span>,
    /// Injected network faults (`faults: { loss, corrupt, link-down }`, see [`FaultConfig`]);
    /// default none.
    pub faults: FaultConfig,
    /// Injected host faults (`faults: { stop-reposting, slow-receiver }`, see [`HostFaults`]);
    /// default none.
    pub host_faults: HostFaults,
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
            ecn: d.ecn,
            pfc: d.pfc,
            cnp_interval: d.cnp_interval,
            dcqcn: d.dcqcn,
            topology: d.topology,
            sample_interval: Some(DEFAULT_SAMPLE_INTERVAL),
            faults: d.faults,
            host_faults: HostFaults::default(),
            host: d.host,
            capture: None,
        }
    }
}

impl SimSection {
    /// The scenario key of a simulator field named in a [`SimConfigError`]: `pfc.headroom_bytes`
    /// is `sim.pfc.headroom`, `dcqcn.min_rate_bps` is `sim.dcqcn.min-rate`, `topology.k` is
    /// `sim.topology.fat-tree.k`, `rc.retry_cnt` is `rc.retry-cnt`, `hosts` is the workload's
    /// sender count.
    pub fn scenario_key(&self, field: &str) -> Vec<String> {
        if field == "hosts" {
            return vec!["workload".into(), "incast".into(), "senders".into()];
        }
        if let Some(rc) = field.strip_prefix("rc.") {
            return vec!["rc".into(), rc.replace('_', "-")];
        }
        let mut key = vec!["sim".to_string()];
        for (i, f) in field.split('.').enumerate() {
            key.push(
                f.trim_end_matches("_bytes")
                    .trim_end_matches("_bps")
                    .replace('_', "-"),
            );
            if i == 0 && f == "topology" {
                let kind = match self.topology {
                    Topology::Star => "star",
                    Topology::LeafSpine { .. } => "leaf-spine",
                    Topology::FatTree { .. } => "fat-tree",
                };
                key.push(kind.into());
            }
        }
        key
    }
}

/// A simulator type's refusal, blamed on the `sim:` key it names ([`SimSection::scenario_key`]).
fn sim_error(e: SimConfigError) -> FieldError {
    let SimConfigError::Invalid { field, reason } = e;
    let key = SimSection::default().scenario_key(field);
    FieldError::at(key.get(1..).unwrap_or_default(), reason)
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
    ecn: Option<EcnSpec>,
    pfc: Option<PfcConfig>,
    cnp_interval: Option<Span>,
    dcqcn: Option<DcqcnConfig>,
    /// The RC attributes that moved to the `rc:` block ([`MOVED_TO_RC`]): read only to say so.
    min_rnr_timer: Option<IgnoredAny>,
    rnr_retry: Option<IgnoredAny>,
    local_ack_timeout: Option<IgnoredAny>,
    retry_cnt: Option<IgnoredAny>,
    topology: Option<Topology>,
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
    if let Some(pfc) = &raw.pfc {
        pfc.validate().map_err(sim_error)?;
    }
    let (faults, host_faults) = raw
        .faults
        .map(check_faults)
        .transpose()
        .map_err(under("faults"))?
        .unwrap_or_default();
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
    let ecn = raw
        .ecn
        .map(|e| e.resolve(link_rate_bps))
        .transpose()
        .map_err(sim_error)?;
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
        pfc: raw.pfc,
        cnp_interval: raw.cnp_interval.map_or(d.cnp_interval, |t| t.0),
        dcqcn: raw.dcqcn,
        topology: raw.topology.unwrap_or_default(),
        sample_interval: raw.sample_interval.map_or(d.sample_interval, |s| s.0),
        faults,
        host_faults,
        host: host.unwrap_or(d.host),
        capture,
    })
}

/// The longest `link-delay` accepted: 1 s, a million times a datacenter link's and still far
/// from overflowing the simulator's u64-picosecond clock (about 213 days) in any run.
pub const MAX_LINK_DELAY: xrdma::Span = xrdma::Span::from_ms(1000);
