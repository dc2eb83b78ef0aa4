//! Simulation parameters, their defaults and validation.

use crate::config_error::SimConfigError;
use crate::dcqcn::DcqcnConfig;
use crate::faults::FaultConfig;
use crate::host_model::HostModel;
use crate::tcp::TcpSettings;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use xrdma::{RcParams, Span};

/// Extra bytes of the RDMA Extended Transport Header (RETH: VA 8 + R_Key 4 + DMA length 4),
/// carried by the first packet of an RDMA WRITE and by an RDMA READ request (IB Spec 9.3.3.3).
pub const RETH_BYTES: u32 = 16;
/// Extra bytes of the Immediate Data header (ImmDt, IB Spec 9.3.3.5).
pub const IMMDT_BYTES: u32 = 4;
/// Extra bytes of the ACK Extended Transport Header (AETH, IB Spec 9.3.3.6) on ACK/NAK
/// packets and on the first and last packet of an RDMA READ response.
pub const AETH_BYTES: u32 = 4;
/// Extra bytes of a RoCEv2 CNP beyond the base header: a 16-byte reserved payload
/// (RoCEv2 Annex A17.9.3).
pub const CNP_EXTRA_BYTES: u32 = 16;
/// Bytes a PFC PAUSE frame takes on the wire: a minimum 64-byte Ethernet frame plus 8 bytes of
/// preamble/SFD and 12 bytes of inter-frame gap (IEEE 802.1Qbb).
pub const PFC_FRAME_BYTES: u32 = 84;

/// RED-style ECN marking at the switch egress queues (DCQCN's Kmin/Kmax/Pmax, Zhu et al.,
/// SIGCOMM 2015, §3.1).
///
/// The marking probability for an egress queue of `q` bytes is 0 if `q ≤ kmin_bytes`,
/// `pmax·(q − kmin)/(kmax − kmin)` if `kmin < q ≤ kmax`, and 1 if `q > kmax`. A scenario writes
/// it as `sim.ecn` ([`EcnSpec`], whose defaults depend on the link rate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EcnConfig {
    /// Queue length (bytes) at or below which nothing is marked.
    pub kmin_bytes: u64,
    /// Queue length (bytes) above which everything is marked.
    pub kmax_bytes: u64,
    /// Marking probability at `kmax_bytes`, in (0, 1].
    pub pmax: f64,
}

impl EcnConfig {
    /// The default thresholds for a link of `link_rate_bps`, as in the HPCC artifact's DCQCN
    /// setup (Li et al., SIGCOMM 2019): Kmin = 100 KiB and Kmax = 400 KiB at 25 Gb/s, scaled
    /// by rate / 25 Gb/s and rounded down (at 100 Gb/s: 400 KiB / 1600 KiB), Pmax = 0.2.
    pub fn default_for_rate(link_rate_bps: u64) -> EcnConfig {
        let scale = |kib: u128| -> u64 {
            let bytes = kib * 1024 * u128::from(link_rate_bps)
                / u128::from(crate::dcqcn::DCQCN_REFERENCE_RATE_BPS);
            u64::try_from(bytes).unwrap_or(u64::MAX)
        };
        EcnConfig {
            kmin_bytes: scale(100),
            kmax_bytes: scale(400),
            pmax: 0.2,
        }
    }

    /// Check the thresholds.
    ///
    /// # Errors
    /// [`SimConfigError::Invalid`] for `pmax` outside (0, 1] (`ecn.pmax`), then for
    /// `kmin_bytes > kmax_bytes` (`ecn.kmin_bytes`).
    pub fn validate(&self) -> Result<(), SimConfigError> {
        check_pmax(self.pmax)?;
        if self.kmin_bytes > self.kmax_bytes {
            return Err(invalid(
                "ecn.kmin_bytes",
                format!(
                    "Kmin ({} bytes) is above Kmax ({} bytes): need kmin ≤ kmax",
                    self.kmin_bytes, self.kmax_bytes
                ),
            ));
        }
        Ok(())
    }
}

fn check_pmax(pmax: f64) -> Result<(), SimConfigError> {
    if !(pmax > 0.0 && pmax <= 1.0) {
        return Err(invalid("ecn.pmax", format!("{pmax} is outside (0, 1]")));
    }
    Ok(())
}

/// ECN marking as a scenario writes it (`sim.ecn: { kmin, kmax, pmax }`, sizes with units):
/// a key left out takes [`EcnConfig::default_for_rate`] for the link rate, which
/// [`EcnSpec::resolve`] applies once the rate is known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (ECN thresholds `{ kmin, kmax, pmax }`)"
)]
pub struct EcnSpec {
    /// Kmin, bytes; `None` = the default for the link rate.
    #[serde(default, deserialize_with = "xrdma::units::deserialize_opt_size")]
    pub kmin: Option<u64>,
    /// Kmax, bytes; `None` = the default for the link rate.
    #[serde(default, deserialize_with = "xrdma::units::deserialize_opt_size")]
    pub kmax: Option<u64>,
    /// Marking probability at Kmax, in (0, 1]; `None` = 0.2.
    #[serde(default)]
    pub pmax: Option<f64>,
}

impl EcnSpec {
    /// The thresholds on a link of `link_rate_bps`: the keys given, the rest
    /// [`EcnConfig::default_for_rate`].
    ///
    /// # Errors
    /// As [`EcnConfig::validate`]; when Kmin > Kmax and one of them is a default, the error is
    /// about the whole block (`ecn`) and says which value is the default.
    pub fn resolve(&self, link_rate_bps: u64) -> Result<EcnConfig, SimConfigError> {
        let d = EcnConfig::default_for_rate(link_rate_bps);
        let ecn = EcnConfig {
            kmin_bytes: self.kmin.unwrap_or(d.kmin_bytes),
            kmax_bytes: self.kmax.unwrap_or(d.kmax_bytes),
            pmax: self.pmax.unwrap_or(d.pmax),
        };
        if ecn.kmin_bytes > ecn.kmax_bytes && (self.kmin.is_none() || self.kmax.is_none()) {
            check_pmax(ecn.pmax)?;
            let default = " (default for the link rate)";
            let (min, max) = match self.kmin {
                None => (default, ""),
                Some(_) => ("", default),
            };
            return Err(invalid(
                "ecn",
                format!(
                    "Kmin{min} = {} bytes is above Kmax{max} = {} bytes: need kmin ≤ kmax",
                    ecn.kmin_bytes, ecn.kmax_bytes
                ),
            ));
        }
        ecn.validate()?;
        Ok(ecn)
    }
}

/// Priority flow control (IEEE 802.1Qbb) on one priority. `None` fields take defaults derived
/// from the link (see [`SimConfig::pfc_thresholds`]). A scenario writes it as
/// `sim.pfc: { xoff, xon, headroom }` (sizes with units; `pfc: {}` = every threshold computed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (PFC thresholds `{ xoff, xon, headroom }`)"
)]
pub struct PfcConfig {
    /// Per-ingress-port buffered bytes above which the switch sends XOFF (PAUSE); > 0.
    #[serde(
        default,
        rename = "xoff",
        deserialize_with = "xrdma::units::deserialize_opt_size"
    )]
    pub xoff_bytes: Option<u64>,
    /// Per-ingress-port buffered bytes at or below which the switch sends XON (RESUME);
    /// ≤ `xoff_bytes`.
    #[serde(
        default,
        rename = "xon",
        deserialize_with = "xrdma::units::deserialize_opt_size"
    )]
    pub xon_bytes: Option<u64>,
    /// Per-port headroom (bytes) reserved for what still arrives after XOFF.
    #[serde(
        default,
        rename = "headroom",
        deserialize_with = "xrdma::units::deserialize_opt_size"
    )]
    pub headroom_bytes: Option<u64>,
}

impl PfcConfig {
    /// Check the thresholds given (the computed ones are checked by
    /// [`SimConfig::pfc_thresholds`]).
    ///
    /// # Errors
    /// [`SimConfigError::Invalid`] for an XOFF of 0 (`pfc.xoff_bytes`) or an XON above the
    /// XOFF (`pfc.xon_bytes`).
    pub fn validate(&self) -> Result<(), SimConfigError> {
        if self.xoff_bytes == Some(0) {
            return Err(invalid("pfc.xoff_bytes", "must be at least 1 byte".into()));
        }
        if let (Some(xoff), Some(xon)) = (self.xoff_bytes, self.xon_bytes) {
            if xon > xoff {
                return Err(invalid(
                    "pfc.xon_bytes",
                    format!("XON ({xon} bytes) is above XOFF ({xoff} bytes): need xon ≤ xoff"),
                ));
            }
        }
        Ok(())
    }
}

/// The resolved PFC thresholds in bytes (per ingress port).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcThresholds {
    /// XOFF threshold (bytes): PAUSE when a port's ingress bytes exceed it.
    pub xoff_bytes: u64,
    /// XON threshold (bytes): RESUME when a paused port's ingress bytes fall to it or below.
    pub xon_bytes: u64,
    /// Headroom per port (bytes).
    pub headroom_bytes: u64,
}

/// Parameters of a simulation: `hosts` hosts with one NIC each, on the output-queued
/// switches of `topology` (by default one switch, host `i` on switch port `i`).
///
/// A scenario's `sim:` block is read by the scenario crate, whose sub-blocks deserialize
/// straight into the field types ([`EcnSpec`], [`PfcConfig`], [`DcqcnConfig`], [`Topology`],
/// and the link faults of [`FaultConfig`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Number of hosts (= switch ports in a star). Default 2.
    pub hosts: u32,
    /// Rate of every link direction, bits per second. Default 100 Gb/s.
    pub link_rate_bps: u64,
    /// One-way propagation delay of every link. Default 1 µs.
    pub link_delay: Span,
    /// RoCE payload bytes a port carries per packet (what a device reports as its active
    /// MTU); packets carry [`SimConfig::path_mtu`]. Default 1024.
    pub mtu: u32,
    /// Per-packet wire overhead of a RoCEv2 data packet, bytes. Default 82 = 8 preamble/SFD +
    /// 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC + 4 FCS + 12 inter-frame gap.
    pub header_bytes: u32,
    /// Shared switch buffer, bytes. Default 32 MiB.
    pub switch_buffer_bytes: u64,
    /// ECN marking; `None` disables marking. Default `None`.
    pub ecn: Option<EcnConfig>,
    /// PFC; `None` makes the switch drop on buffer overflow. Default `None`.
    pub pfc: Option<PfcConfig>,
    /// Seed of every random stream (switch ECN decisions, initial PSNs). Default 1.
    pub seed: u64,
    /// Minimum time between two CNPs for one QP (DCQCN notification point). Default 50 µs
    /// (Zhu et al., SIGCOMM 2015, §3.2).
    pub cnp_interval: Span,
    /// The responder ACKs every `ack_every` packets (and always a message's last packet).
    /// Default 1.
    pub ack_every: u32,
    /// DCQCN reaction point on every QP; `None` = no rate control (every QP may send at line
    /// rate). Default `None`.
    pub dcqcn: Option<DcqcnConfig>,
    /// The RC QP attributes every QP is connected with: local ACK timeout and retry count
    /// (go-back-N after a timeout without progress, `RetryExcErr` after `retry_cnt` retries),
    /// RNR retry and minimum RNR timer (how long a requester waits after an RNR NAK), and the
    /// path MTU, of which the smaller of it and `mtu` is applied ([`SimConfig::path_mtu`]).
    /// Default [`RcParams::default`].
    pub rc: RcParams,
    /// Whether MRs hold real bytes. `false` makes MRs bookkeeping only: nothing is allocated,
    /// reads return zeros, writes and DMA copies are skipped (for large benchmarks). Default
    /// `true`.
    pub carry_payload: bool,
    /// Network shape. Default [`Topology::Star`]; for the others `hosts` must equal
    /// [`Topology::host_count`].
    pub topology: Topology,
    /// Injected link faults (loss, corruption, link down/up; see [`FaultConfig`]). Default:
    /// none, and then the run is exactly as without this field.
    pub faults: FaultConfig,
    /// What posting, doorbells, DMA, completions, polling and the application cost at each
    /// host (see [`HostModel`]; a named profile from [`crate::profiles`]). Default: the ideal
    /// host, every cost zero, and then the run is exactly as without this field.
    pub host: HostModel,
    /// The hosts' kernel TCP, for sockets ([`crate::HostTransport::tcp_write`]). Default:
    /// Linux's ([`TcpSettings`]).
    pub tcp: TcpSettings,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            hosts: 2,
            link_rate_bps: 100_000_000_000,
            link_delay: Span::from_us(1),
            mtu: 1024,
            header_bytes: 82,
            switch_buffer_bytes: 32 << 20,
            ecn: None,
            pfc: None,
            seed: 1,
            cnp_interval: Span::from_us(50),
            ack_every: 1,
            dcqcn: None,
            rc: RcParams::default(),
            carry_payload: true,
            topology: Topology::Star,
            faults: FaultConfig::default(),
            host: HostModel::IDEAL,
            tcp: TcpSettings::default(),
        }
    }
}

fn invalid(field: &'static str, reason: String) -> SimConfigError {
    SimConfigError::Invalid { field, reason }
}

/// Largest accepted MTU (bytes); jumbo RoCE paths stop at 4096, this leaves room.
const MAX_MTU: u32 = 65_536;
/// Largest accepted host count.
const MAX_HOSTS: u32 = 1 << 20;

impl SimConfig {
    /// Payload bytes per data packet: the smaller of the port's `mtu` and `rc.path_mtu`, as a
    /// device applies the smaller of its active MTU and the QP's path MTU.
    pub fn path_mtu(&self) -> u32 {
        self.mtu.min(self.rc.path_mtu)
    }

    /// The RC attributes as applied: `rc` with the path MTU of [`SimConfig::path_mtu`].
    pub fn rc_applied(&self) -> RcParams {
        self.rc.with_port_mtu(self.mtu)
    }

    /// Largest wire size of a data packet in bytes: `mtu + header_bytes + RETH + ImmDt`.
    pub fn max_packet_wire_bytes(&self) -> u64 {
        self.mtu as u64 + self.header_bytes as u64 + (RETH_BYTES + IMMDT_BYTES) as u64
    }

    /// Bytes a link carries during `link_delay`: `ceil(link_delay · link_rate_bps / 8)`
    /// (bandwidth-delay product of one direction).
    pub fn link_bdp_bytes(&self) -> u64 {
        self.bdp_bytes_at(self.link_rate_bps)
    }

    /// Bytes a link at `rate_bps` carries during `link_delay`, rounded up.
    fn bdp_bytes_at(&self, rate_bps: u64) -> u64 {
        let bits = self.link_delay.as_ps() as u128 * rate_bps as u128;
        let bytes = bits.div_ceil(8 * 1_000_000_000_000u128);
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }

    /// Base round-trip time of one MTU-sized packet between two idle hosts, store-and-forward:
    /// `4·link_delay + 2·ser(mtu + header_bytes) + 2·ser(header_bytes + 4)`, where `ser(b)` is
    /// `b·8/link_rate_bps` (the data packet crosses two links, its ACK (with a 4-byte AETH) two
    /// links back). This is the base RTT of the incast bound T*.
    pub fn base_rtt(&self) -> Span {
        let data = Span::serialization((self.mtu + self.header_bytes) as u64, self.link_rate_bps);
        let ack = Span::serialization((self.header_bytes + AETH_BYTES) as u64, self.link_rate_bps);
        self.link_delay * 4 + data + data + ack + ack
    }

    /// The PFC headroom a port whose fastest link runs at `link_rate_bps` needs, bytes:
    /// `2·bdp + 3·max_packet + 84`, what can still arrive after its XOFF (see
    /// [`SimConfig::pfc_thresholds`], from IEEE 802.1Qbb Annex O's delay budget).
    pub fn pfc_headroom_needed_at(&self, link_rate_bps: u64) -> u64 {
        2 * self.bdp_bytes_at(link_rate_bps)
            + 3 * self.max_packet_wire_bytes()
            + PFC_FRAME_BYTES as u64
    }

    /// The largest PFC headroom any switch port of the topology needs
    /// ([`SimConfig::pfc_headroom_needed_at`] at the fastest link of each kind of switch).
    pub fn pfc_headroom_needed(&self) -> u64 {
        if self.topology == Topology::Star {
            return self.pfc_headroom_needed_at(self.link_rate_bps);
        }
        self.topology
            .switch_kinds(self.hosts, self.link_rate_bps)
            .iter()
            .map(|k| self.pfc_headroom_needed_at(k.max_rate_bps))
            .max()
            .unwrap_or(0)
    }

    /// The PFC thresholds in force, `Ok(None)` when PFC is off.
    ///
    /// Defaults (per port, bytes): `headroom = 2·bdp + 3·max_packet + 84`, the most a port's
    /// ingress count can exceed XOFF by (IEEE 802.1Qbb Annex O's delay budget, without the
    /// interface and higher-layer delays the model does not have): the packet that crossed
    /// XOFF (up to one `max_packet_wire_bytes` above it), then everything the peer can still
    /// put on the wire: one maximum packet the switch port may be sending ahead of the PAUSE,
    /// the PAUSE frame's serialization (84), its propagation (`bdp`), one maximum packet the
    /// peer has just started, and the bytes in flight towards the switch (`bdp`), where `bdp`
    /// is [`SimConfig::link_bdp_bytes`] at the port's link rate;
    /// `xoff = switch_buffer_bytes/hosts − headroom`; `xon = xoff − 2·(mtu + header_bytes)`
    /// (saturating at 0). More than two packets must arrive between an XON and the next
    /// XOFF, while an XON waits at most one maximum packet, so a pending XON has always left
    /// before the next XOFF is queued. Every port can therefore hold `xoff + headroom` at
    /// once without overflowing the buffer: the fabric is lossless whatever the traffic.
    ///
    /// For a multi-switch [`Topology`] every kind of switch is checked with its own port
    /// count and fastest link (see [`SimConfig::pfc_thresholds_for`]), and the thresholds of
    /// the first kind (leaf, edge) are returned.
    ///
    /// # Errors
    /// [`SimConfigError::Invalid`] when the static per-port reservation
    /// `hosts·(xoff + headroom)` exceeds `switch_buffer_bytes`, when `xon > xoff`, or when
    /// `xoff` is 0; for a multi-switch topology the reason names the kind of switch.
    pub fn pfc_thresholds(&self) -> Result<Option<PfcThresholds>, SimConfigError> {
        if self.topology == Topology::Star {
            return self.pfc_thresholds_for(self.hosts as u64, self.link_rate_bps);
        }
        let mut first = None;
        for k in self.topology.switch_kinds(self.hosts, self.link_rate_bps) {
            let t = self
                .pfc_thresholds_for(k.ports, k.max_rate_bps)
                .map_err(|e| match e {
                    SimConfigError::Invalid { field, reason } => SimConfigError::Invalid {
                        field,
                        reason: format!("{} switches ({} ports): {reason}", k.name, k.ports),
                    },
                })?;
            first = first.or(Some(t));
        }
        Ok(first.flatten())
    }

    /// The PFC thresholds of one switch with `ports` ports whose fastest link runs at
    /// `link_rate_bps`; `Ok(None)` when PFC is off. Same rules as
    /// [`SimConfig::pfc_thresholds`] with `hosts` replaced by `ports` and the bandwidth-delay
    /// product taken at `link_rate_bps`.
    ///
    /// # Errors
    /// As [`SimConfig::pfc_thresholds`].
    pub fn pfc_thresholds_for(
        &self,
        ports: u64,
        link_rate_bps: u64,
    ) -> Result<Option<PfcThresholds>, SimConfigError> {
        let Some(pfc) = self.pfc else { return Ok(None) };
        let ports = ports.max(1);
        let headroom = pfc
            .headroom_bytes
            .unwrap_or_else(|| self.pfc_headroom_needed_at(link_rate_bps));
        let per_port = self.switch_buffer_bytes / ports;
        let xoff = match pfc.xoff_bytes {
            Some(x) => x,
            None => per_port.checked_sub(headroom).ok_or_else(|| {
                invalid(
                    "pfc.headroom_bytes",
                    format!(
                        "headroom {headroom} B per port does not fit in the per-port share \
                         {per_port} B of a {} B buffer over {ports} ports",
                        self.switch_buffer_bytes
                    ),
                )
            })?,
        };
        if xoff == 0 {
            return Err(invalid(
                "pfc.xoff_bytes",
                format!(
                    "XOFF threshold is 0 B (per-port share {per_port} B, headroom {headroom} B)"
                ),
            ));
        }
        let need = xoff.saturating_add(headroom).saturating_mul(ports);
        if need > self.switch_buffer_bytes {
            return Err(invalid(
                "pfc",
                format!(
                    "{ports} ports × (xoff {xoff} B + headroom {headroom} B) = {need} B exceeds \
                     the {} B switch buffer (switch-buffer)",
                    self.switch_buffer_bytes
                ),
            ));
        }
        let xon = pfc.xon_bytes.unwrap_or_else(|| {
            xoff.saturating_sub(2 * (self.mtu as u64 + self.header_bytes as u64))
        });
        if xon > xoff {
            return Err(invalid(
                "pfc.xon_bytes",
                format!("XON {xon} B is above XOFF {xoff} B"),
            ));
        }
        Ok(Some(PfcThresholds {
            xoff_bytes: xoff,
            xon_bytes: xon,
            headroom_bytes: headroom,
        }))
    }

    /// Check every field.
    ///
    /// # Errors
    /// [`SimConfigError::Invalid`] naming the first offending field: `hosts` 0 or above 2^20,
    /// `link_rate_bps` 0, `mtu` 0 or above 65536, `switch_buffer_bytes` 0, `ack_every` 0,
    /// RC attributes outside their encodings (`rc.*`, [`RcParams::validate`]), DCQCN
    /// parameters ([`DcqcnConfig::validate`]), ECN thresholds ([`EcnConfig::validate`]), PFC
    /// thresholds given out of order ([`PfcConfig::validate`]), a topology with bad parameters
    /// or a host count other than its own (`topology.*`, `hosts`), PFC thresholds that do not
    /// fit some switch (see [`SimConfig::pfc_thresholds`]), injected faults out of range or on
    /// hosts that do not exist (`faults.*`), and a host cost above [`crate::MAX_COST`]
    /// (`host`).
    pub fn validate(&self) -> Result<(), SimConfigError> {
        // The topology first: a bad radix or count also makes the host count meaningless.
        if self.topology != Topology::Star {
            self.topology.validate(self.hosts)?;
        }
        if self.hosts == 0 || self.hosts > MAX_HOSTS {
            return Err(invalid(
                "hosts",
                format!("{} is not in 1..={MAX_HOSTS}", self.hosts),
            ));
        }
        if let Err(e) = self.host.validate() {
            return Err(invalid("host", e.to_string()));
        }
        if let Err((field, reason)) = self.faults.check(self.hosts) {
            return Err(invalid(field, reason));
        }
        if let Err((field, reason)) = self.tcp.validate() {
            return Err(invalid(field, reason));
        }
        if self.link_rate_bps == 0 {
            return Err(invalid("link_rate_bps", "must be positive".into()));
        }
        if self.mtu == 0 || self.mtu > MAX_MTU {
            return Err(invalid(
                "mtu",
                format!("{} is not in 1..={MAX_MTU}", self.mtu),
            ));
        }
        if self.switch_buffer_bytes == 0 {
            return Err(invalid("switch_buffer_bytes", "must be positive".into()));
        }
        if self.ack_every == 0 {
            return Err(invalid("ack_every", "must be at least 1".into()));
        }
        if let Err(e) = self.rc.validate() {
            let field = match e.field {
                "local-ack-timeout" => "rc.local_ack_timeout",
                "retry-cnt" => "rc.retry_cnt",
                "rnr-retry" => "rc.rnr_retry",
                "min-rnr-timer" => "rc.min_rnr_timer",
                _ => "rc.path_mtu",
            };
            return Err(invalid(field, e.reason));
        }
        if let Some(d) = &self.dcqcn {
            d.validate(self.link_rate_bps)?;
        }
        if let Some(ecn) = &self.ecn {
            ecn.validate()?;
        }
        if let Some(pfc) = &self.pfc {
            pfc.validate()?;
        }
        if self.topology == Topology::Star {
            self.topology.validate(self.hosts)?;
        }
        self.pfc_thresholds()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_base_rtt_matches_formula() {
        let c = SimConfig::default();
        c.validate().unwrap();
        // 4·1 µs + 2·(1106 B · 80 ps/B) + 2·(86 B · 80 ps/B) = 4_000_000 + 176_960 + 13_760.
        assert_eq!(c.base_rtt(), Span::from_ps(4_190_720));
        // 1 µs at 100 Gb/s = 1e-6 · 1e11 / 8 = 12_500 B.
        assert_eq!(c.link_bdp_bytes(), 12_500);
    }

    #[test]
    fn rejects_bad_fields() {
        let field = |c: SimConfig| match c.validate() {
            Err(SimConfigError::Invalid { field, .. }) => field,
            Ok(()) => "ok",
        };
        assert_eq!(
            field(SimConfig {
                mtu: 0,
                ..Default::default()
            }),
            "mtu"
        );
        assert_eq!(
            field(SimConfig {
                link_rate_bps: 0,
                ..Default::default()
            }),
            "link_rate_bps"
        );
        assert_eq!(
            field(SimConfig {
                hosts: 0,
                ..Default::default()
            }),
            "hosts"
        );
        let ecn = |kmin, kmax, pmax| SimConfig {
            ecn: Some(EcnConfig {
                kmin_bytes: kmin,
                kmax_bytes: kmax,
                pmax,
            }),
            ..Default::default()
        };
        assert_eq!(field(ecn(400, 100, 0.2)), "ecn.kmin_bytes");
        assert_eq!(field(ecn(100, 400, 0.0)), "ecn.pmax");
        assert_eq!(field(ecn(100, 400, 1.5)), "ecn.pmax");
        assert_eq!(field(ecn(100, 400, f64::NAN)), "ecn.pmax");
        assert_eq!(field(ecn(100, 400, 1.0)), "ok");
    }

    #[test]
    fn ecn_keys_left_out_scale_with_the_link_rate() {
        let reason = |r: Result<EcnConfig, SimConfigError>| match r {
            Err(SimConfigError::Invalid { field, reason }) => (field, reason),
            Ok(e) => panic!("{e:?}"),
        };
        // 40 Gb/s: 100 KiB · 1.6 = 163_840 B, 400 KiB · 1.6 = 655_360 B.
        let spec = EcnSpec {
            pmax: Some(0.5),
            ..EcnSpec::default()
        };
        assert_eq!(
            spec.resolve(40_000_000_000).unwrap(),
            EcnConfig {
                kmin_bytes: 163_840,
                kmax_bytes: 655_360,
                pmax: 0.5
            }
        );
        // Kmin above the default Kmax at 100 Gb/s (1_638_400 B): the block is blamed.
        let kmin = EcnSpec {
            kmin: Some(2 << 20),
            ..EcnSpec::default()
        };
        let (field, why) = reason(kmin.resolve(100_000_000_000));
        assert_eq!(field, "ecn");
        assert!(
            why.contains("Kmax (default for the link rate) = 1638400"),
            "{why}"
        );
        // Both given: the key.
        let both = EcnSpec {
            kmin: Some(2),
            kmax: Some(1),
            pmax: None,
        };
        assert_eq!(reason(both.resolve(100_000_000_000)).0, "ecn.kmin_bytes");
    }

    #[test]
    fn pfc_thresholds_given_are_checked_on_their_own() {
        let pfc = |xoff, xon| PfcConfig {
            xoff_bytes: xoff,
            xon_bytes: xon,
            headroom_bytes: None,
        };
        let field = |p: PfcConfig| match p.validate() {
            Err(SimConfigError::Invalid { field, .. }) => field,
            Ok(()) => "ok",
        };
        assert_eq!(field(pfc(Some(0), None)), "pfc.xoff_bytes");
        assert_eq!(field(pfc(Some(10), Some(20))), "pfc.xon_bytes");
        assert_eq!(field(pfc(Some(20), Some(10))), "ok");
        assert_eq!(field(pfc(None, Some(10))), "ok");
    }

    #[test]
    fn pfc_defaults_and_headroom_that_cannot_fit() {
        // 4 ports, 1 MiB: headroom = 2·12_500 + 3·(1024+82+20) + 84 = 28_462;
        // xoff = 1_048_576/4 − 28_462 = 233_682; xon = xoff − 2·1106 = 231_470.
        let c = SimConfig {
            hosts: 4,
            switch_buffer_bytes: 1 << 20,
            pfc: Some(PfcConfig::default()),
            ..Default::default()
        };
        let t = c.pfc_thresholds().unwrap().unwrap();
        assert_eq!(t.headroom_bytes, 28_462);
        assert_eq!(t.xoff_bytes, 233_682);
        assert_eq!(t.xon_bytes, 231_470);
        // 256 ports × 28_462 B headroom = 7.286 MB > 4 MiB: the headroom cannot fit.
        let c = SimConfig {
            hosts: 256,
            switch_buffer_bytes: 4 << 20,
            pfc: Some(PfcConfig::default()),
            ..Default::default()
        };
        assert!(matches!(
            c.validate(),
            Err(SimConfigError::Invalid {
                field: "pfc.headroom_bytes",
                ..
            })
        ));
        // Explicit xoff too large for the static reservation: 2 × (600_000 + 28_462) > 1 MiB.
        let c = SimConfig {
            switch_buffer_bytes: 1 << 20,
            pfc: Some(PfcConfig {
                xoff_bytes: Some(600_000),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(matches!(
            c.validate(),
            Err(SimConfigError::Invalid { field: "pfc", .. })
        ));
    }
}
