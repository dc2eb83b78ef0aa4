//! `xrdma bench`: the simulator's benchmark cases, each in its own process so its peak RSS is
//! its own.
//!
//! Cases (100 Gb/s links, 1 µs propagation, 1 KiB MTU, PFC on):
//! - `pfc-incast`: 256 hosts each RDMA WRITE 2 MiB to one receiver, no congestion control,
//!   MRs without payload bytes (the engine's own cost).
//! - `dcqcn-incast`: the same with ECN marking (Kmin/Kmax 400/1600 KB, Pmax 0.2) and DCQCN.
//! - `lossy-incast`: the same as `pfc-incast` without PFC: the switch drops on a full buffer
//!   and the NICs recover with go-back-N.
//! - `xrdma-incast`: the same 256 × 2 MiB as xrdma messages (64 KiB fragments, the adaptive
//!   window) with ECN and DCQCN, real bytes moved and digest-checked; the receiver takes
//!   fragments as they arrive (`deliver-fragments`), so it holds no reassembly buffers.
//! - `fattree-1024`: a k = 16 fat-tree (1024 hosts, 320 switches), every host WRITEs 16 ×
//!   64 KiB to the host half the fabric away (a permutation through the core), no payload.
//! - `fattree-16k` (not in the default set: about a minute): a k = 40 fat-tree (16 000 hosts,
//!   2000 switches), every host WRITEs one 64 KiB the same way.
//!
//! The raw-WRITE cases run their hosts through the runner's one turn loop
//! ([`xrdma_runner::drive::turns`]): each host polls its CQ when the simulator has a
//! completion for it, and sets no wake, so the loop adds no event to the engine's.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Instant;
use xrdma::{QpCaps, SendOpcode, SendWr, Sge, Time, Transport};
use xrdma_runner::drive::{turns, Clock, Hosts, Round};
use xrdma_runner::fabric::{Clocked, Fabric, FabricReport, SimFabric};
use xrdma_sim::{DcqcnConfig, EcnConfig, PfcConfig, SimConfig, Topology};

/// The case names, in the order `xrdma bench` runs them.
pub const CASES: [&str; 5] = [
    "pfc-incast",
    "dcqcn-incast",
    "lossy-incast",
    "xrdma-incast",
    "fattree-1024",
];

/// What one case measured.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchFigures {
    /// The case name.
    pub case: String,
    /// Simulated events.
    pub events: u64,
    /// Wall time of the event loop (setup excluded), seconds.
    pub wall_seconds: f64,
    /// Simulated time of the last completion.
    pub last_completion: Time,
    /// Peak resident set of the process, bytes (`VmHWM`), if readable.
    pub peak_rss_bytes: Option<u64>,
    /// Packets dropped.
    pub drops: u64,
    /// PFC XOFF frames sent.
    pub pfc_xoff: u64,
}

impl BenchFigures {
    /// One line: `case events wall ev/s rss completion drops xoff`.
    pub fn line(&self) -> String {
        let rss = self.peak_rss_bytes.map_or_else(
            || "-".into(),
            |b| format!("{:.1}", b as f64 / (1 << 20) as f64),
        );
        format!(
            "{:<14} {:>12} {:>9.3} {:>10.2} {:>10} {:>14} {:>6} {:>8}",
            self.case,
            self.events,
            self.wall_seconds,
            self.events as f64 / self.wall_seconds.max(1e-9) / 1e6,
            rss,
            self.last_completion.to_string(),
            self.drops,
            self.pfc_xoff
        )
    }

    /// The header matching [`BenchFigures::line`].
    pub fn header() -> String {
        format!(
            "{:<14} {:>12} {:>9} {:>10} {:>10} {:>14} {:>6} {:>8}",
            "case", "events", "wall s", "M ev/s", "RSS MiB", "last done", "drops", "XOFF"
        )
    }
}

fn base_config(hosts: u32) -> SimConfig {
    SimConfig {
        hosts,
        pfc: Some(PfcConfig::default()),
        carry_payload: false,
        ..SimConfig::default()
    }
}

fn ecn_100g() -> EcnConfig {
    EcnConfig {
        kmin_bytes: 400 << 10,
        kmax_bytes: 1600 << 10,
        pmax: 0.2,
    }
}

/// Post `msgs` RDMA WRITEs of `bytes` from each `(src, dst)` pair, run to the end, and
/// return the figures.
fn raw_flows(
    case: &str,
    cfg: SimConfig,
    pairs: &[(u32, u32)],
    bytes: u32,
    msgs: u32,
) -> Result<BenchFigures> {
    let mut fabric = SimFabric::new(cfg)?;
    let hosts = fabric.hosts();
    let dst_mr: Vec<_> = (0..hosts)
        .map(|h| fabric.host(h).register_memory(u64::from(bytes)))
        .collect::<Result<_, _>>()?;
    for &(s, d) in pairs {
        let caps = QpCaps {
            max_send_wr: msgs.max(1),
            ..QpCaps::default()
        };
        let qa = fabric.host(s).create_qp(caps)?;
        let qb = fabric.host(d).create_qp(QpCaps::default())?;
        fabric.host(s).connect_qp(qa.qpn, &qb)?;
        fabric.host(d).connect_qp(qb.qpn, &qa)?;
        let src = fabric.host(s).register_memory(u64::from(bytes))?;
        let dst = dst_mr[d as usize];
        for m in 0..msgs {
            let wr = SendWr {
                wr_id: u64::from(m),
                opcode: SendOpcode::RdmaWrite,
                sge: Sge {
                    addr: src.addr,
                    len: bytes,
                    lkey: src.lkey,
                },
                imm: 0,
                remote_addr: dst.addr,
                rkey: dst.rkey,
                signaled: true,
            };
            fabric.host(s).post_send(qa.qpn, &wr)?;
        }
    }
    let start = Instant::now();
    let mut flows = RawFlows {
        wcs: Vec::new(),
        last: Time::ZERO,
        done: 0,
        failed: None,
    };
    turns(&mut fabric, Clock::EveryRound, &mut flows);
    let wall_seconds = start.elapsed().as_secs_f64();
    if let Some(status) = flows.failed {
        bail!("{case}: a WRITE completed with {status:?}");
    }
    let want = pairs.len() as u64 * u64::from(msgs);
    if flows.done != want {
        bail!("{case}: {} of {want} WRITEs completed", flows.done);
    }
    let net = fabric.network();
    Ok(BenchFigures {
        case: case.into(),
        events: fabric.sim_info().map_or(0, |i| i.events),
        wall_seconds,
        last_completion: flows.last,
        peak_rss_bytes: peak_rss(),
        drops: net.drops.unwrap_or(0),
        pfc_xoff: net.pfc_xoff.unwrap_or(0),
    })
}

/// The hosts of a raw-WRITE case: each polls its CQ when the simulator says it is ready, and
/// the run stops at the first failed WRITE (no host application, no wake of its own).
struct RawFlows {
    wcs: Vec<xrdma::WorkCompletion>,
    last: Time,
    done: u64,
    failed: Option<xrdma::WcStatus>,
}

impl Hosts<SimFabric> for RawFlows {
    fn turn(&mut self, fabric: &mut SimFabric, h: u32, now: Time, _settled: bool) -> Option<Time> {
        self.wcs.clear();
        let n = fabric.host(h).poll_cq(&mut self.wcs, usize::MAX);
        if n > 0 {
            self.done += n as u64;
            self.last = now;
        }
        if let Some(bad) = self
            .wcs
            .iter()
            .find(|w| w.status != xrdma::WcStatus::Success)
        {
            self.failed.get_or_insert(bad.status);
        }
        None
    }

    fn after_round(&mut self, _fabric: &mut SimFabric, _now: Time) -> Round {
        if self.failed.is_some() {
            Round::Stop
        } else {
            Round::Go
        }
    }
}

const XRDMA_INCAST: &str = "name: bench-xrdma-incast
xrdma:
  deliver-fragments: true
workload:
  incast:
    senders: 256
    receiver: 0
    messages:
      - { size: 2MiB, count: 1 }
sim:
  ecn: { kmin: 400KB, kmax: 1600KB, pmax: 0.2 }
  pfc: {}
  dcqcn: {}
";

/// Run one case in this process.
///
/// # Errors
/// An unknown case, or a case whose run failed (a WRITE or message did not complete).
pub fn run_case(case: &str) -> Result<BenchFigures> {
    let incast: Vec<(u32, u32)> = (1..=256).map(|s| (s, 0)).collect();
    match case {
        "pfc-incast" => raw_flows(case, base_config(257), &incast, 2 << 20, 1),
        "dcqcn-incast" => {
            let cfg = SimConfig {
                ecn: Some(ecn_100g()),
                dcqcn: Some(DcqcnConfig::default()),
                ..base_config(257)
            };
            raw_flows(case, cfg, &incast, 2 << 20, 1)
        }
        "lossy-incast" => {
            let cfg = SimConfig {
                pfc: None,
                ..base_config(257)
            };
            raw_flows(case, cfg, &incast, 2 << 20, 1)
        }
        "fattree-1024" => {
            let n = 1024;
            let cfg = SimConfig {
                topology: Topology::FatTree {
                    k: 16,
                    hosts_per_edge: None,
                },
                ..base_config(n)
            };
            let pairs: Vec<(u32, u32)> = (0..n).map(|h| (h, (h + n / 2) % n)).collect();
            raw_flows(case, cfg, &pairs, 64 << 10, 16)
        }
        "fattree-16k" => {
            let n = 16_000;
            let cfg = SimConfig {
                topology: Topology::FatTree {
                    k: 40,
                    hosts_per_edge: None,
                },
                ..base_config(n)
            };
            let pairs: Vec<(u32, u32)> = (0..n).map(|h| (h, (h + n / 2) % n)).collect();
            raw_flows(case, cfg, &pairs, 64 << 10, 1)
        }
        "xrdma-incast" => {
            let sc = xrdma_scenario::parse(XRDMA_INCAST, Path::new("bench:xrdma-incast"))?;
            let r = xrdma_runner::request::run_sim(&sc)?;
            if r.delivery.delivered != 256 {
                bail!(
                    "{case}: {} of 256 messages delivered intact",
                    r.delivery.delivered
                );
            }
            let last = r
                .messages
                .iter()
                .filter_map(|m| m.completed_ps)
                .max()
                .unwrap_or(0);
            let sim = r
                .sim
                .as_ref()
                .context("the simulator reports its statistics")?;
            Ok(BenchFigures {
                case: case.into(),
                events: sim.events,
                wall_seconds: r.wall_clock.wall_seconds,
                last_completion: Time::from_ps(last),
                peak_rss_bytes: peak_rss(),
                drops: r.network.drops.context("the simulator counts drops")?,
                pfc_xoff: r
                    .network
                    .pfc_xoff
                    .context("the simulator counts PFC pauses")?,
            })
        }
        other => bail!(
            "unknown bench case `{other}`; the cases are {}, and, not part of the default set, \
             `fattree-16k` and `window` (the send-window table)",
            CASES.join(", ")
        ),
    }
}

/// `VmHWM` of this process from `/proc/self/status`, bytes.
pub fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
