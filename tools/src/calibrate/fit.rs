//! `xrdma calibrate fit`: a host profile fitted to a device's ping and bw figures, with the
//! simulator in the loop.
//!
//! # Method
//!
//! Four free parameters, each over a group of the base profile's costs
//! ([`xrdma_sim::HostModel`]); the base's split *within* a group is kept:
//!
//! | parameter | what it sets |
//! |---|---|
//! | `latency-scale` | multiplies every per-WR, per-poll and per-turn cost ([`LATENCY_COSTS`]: post-send-wr, doorbell, post-recv-wr, poll-call, poll-cqe, turn, and the NIC latencies wqe-fetch, payload-read, rx-dma-write, cqe-write) |
//! | `app-scale` | multiplies the per-message costs ([`APP_COSTS`]: app-recv-message, app-send-message) |
//! | `nic-tx-packet` | the transmit engine's time per packet, absolute |
//! | `nic-tx-byte` | the transmit engine's time per payload byte, absolute |
//!
//! Those four cover every cost of the model, so nothing is kept from the base but the
//! ratios inside the two scaled groups. Each observation is simulated with the tools' own
//! code on the tools' simulator fabric ([`crate::sim_fabric`]: two hosts, one switch,
//! 100 Gb/s links of 1 µs, 1 KiB MTU, the network of the shipped scenarios): the median half
//! round trip of `xrdma ping` at each measured size, and the throughput of `xrdma bw` at
//! each measured size. The residual of an observation is its relative error in time: for a
//! ping (sim − device) / device of the half round trip, for a stream the same of its time
//! per byte (device / sim − 1 of the throughputs), both about linear in every cost. The fit
//! minimises their sum of squares by Levenberg–Marquardt: the Jacobian by forward
//! differences of the simulator (in coordinates where each parameter's scale is 1, a step
//! of 1 % of the parameter and at least 5·10⁻⁴), the damping λ·diag(JᵀJ) added to JᵀJ (Marquardt's scaling),
//! parameters kept ≥ 0. It starts from the base profile with all four parameters scaled by
//! the device's slowdown against it on the first observation. The damping starts at 10⁻²,
//! is divided by 3 after a step that lowers the sum and multiplied by 4 after one that does
//! not (at most 12 tries per iteration); the search stops after
//! [`FitOptions::max_iterations`], when no try lowers the sum, or when a step gains less
//! than 10⁻¹² of it. Sources: K. Levenberg, "A method for the solution of certain
//! non-linear problems in least squares", Quarterly of Applied Mathematics 2(2), 1944;
//! D. W. Marquardt, "An algorithm for least-squares estimation of nonlinear parameters",
//! SIAM Journal on Applied Mathematics 11(2), 1963.
//!
//! Why these observations identify the four: bw of 64 B messages (coalesced into few SENDs)
//! is bound by the per-message costs once they pass about 1 µs; bw of 64 KiB by the
//! per-packet and per-byte engine time of full packets; ping at 64 B by every cost on the
//! path; ping at 1000 B against 64 B (one packet each, with xrdma's 16-byte header; the
//! 80-byte frame is posted inline and skips `payload-read`, the 1016-byte one pays it, a
//! cost tied to the latency scale) by the per-byte time; ping at 4 KiB (five packets) by the
//! per-packet time. (A 1 KiB ping takes two packets and moves the two engine times together,
//! as a full-packet stream does.) What they cannot tell apart is kept from the base: the CPU
//! costs against the NIC latencies (a ping pays both once per hop, and a stream overlaps the
//! NIC latencies with other work), so the two share one scale.
//!
//! The simulator is deterministic and so is the search (a fixed start, a fixed order of
//! evaluation), so the same measurements and base give the same profile, bit for bit.

use super::measure::{self, Measurements};
use crate::{bw::BwOptions, ping::PingOptions};
use anyhow::{bail, Result};
use rayon::prelude::*;
use xrdma::Span;
use xrdma_runner::fabric::SimFabric;
use xrdma_sim::{HostModel, SimConfig};

/// The per-WR, per-poll and per-turn costs `latency-scale` multiplies: the CPU's and the
/// NIC's.
pub const LATENCY_COSTS: &[&str] = &[
    "post-send-wr",
    "doorbell",
    "post-recv-wr",
    "poll-call",
    "poll-cqe",
    "turn",
    "wqe-fetch",
    "payload-read",
    "rx-dma-write",
    "cqe-write",
];

/// The per-message costs `app-scale` multiplies.
pub const APP_COSTS: &[&str] = &["app-recv-message", "app-send-message"];

/// The free parameters' names, in vector order.
pub const PARAMS: [&str; 4] = ["latency-scale", "app-scale", "nic-tx-packet", "nic-tx-byte"];

/// How the fit runs.
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    /// The base profile: its costs are the starting point, its split within each group is kept.
    pub base: HostModel,
    /// Round trips (after 5 of warm-up) of each simulated ping: the simulator's ping has no
    /// noise, so a few give its median.
    pub sim_ping_iters: u32,
    /// At most this many messages per simulated bw run of at most 4 KiB (fewer when the
    /// device streamed fewer).
    pub sim_bw_small_iters: u32,
    /// At most this many messages per larger simulated bw run.
    pub sim_bw_large_iters: u32,
    /// Levenberg–Marquardt iterations at most.
    pub max_iterations: u32,
}

impl FitOptions {
    /// The defaults for base profile `base`: 20 simulated round trips, bw runs of at most
    /// 5000 small or 200 large messages (the stream's start then weighs under 2 %), 40
    /// iterations.
    pub fn new(base: HostModel) -> Self {
        FitOptions {
            base,
            sim_ping_iters: 20,
            sim_bw_small_iters: 5000,
            sim_bw_large_iters: 200,
            max_iterations: 40,
        }
    }
}

/// One observation: what the device measured, and what the simulator gives with the base
/// and with the fitted profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `ping 64 B p50` or `bw 64 KiB`.
    pub name: String,
    /// The unit of the three values (`µs` or `MB/s`, MiB/s as perftest writes it).
    pub unit: &'static str,
    /// The device's figure.
    pub device: f64,
    /// The simulator's with the base profile.
    pub base: f64,
    /// The simulator's with the fitted profile.
    pub fitted: f64,
}

impl Row {
    /// |fitted − device| / device.
    pub fn error(&self) -> f64 {
        rel_error(self.fitted, self.device)
    }
}

/// |value − reference| / reference (infinite for a zero reference).
pub fn rel_error(value: f64, reference: f64) -> f64 {
    if reference == 0.0 {
        f64::INFINITY
    } else {
        ((value - reference) / reference).abs()
    }
}

/// What a fit found.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The fitted profile (named after its base; every fitted cost overrides the base's).
    pub model: HostModel,
    /// The parameters' values: the two scales, then the engine times in ps.
    pub params: [f64; 4],
    /// Every observation.
    pub rows: Vec<Row>,
    /// Levenberg–Marquardt iterations run.
    pub iterations: u32,
    /// Simulated evaluations of the whole set of observations.
    pub evaluations: u32,
    /// The root mean square of the relative residuals at the end.
    pub rms: f64,
}

/// The profile for parameter vector `p` ([`PARAMS`] order) over `base`.
pub fn model_of(base: &HostModel, p: &[f64; 4]) -> HostModel {
    let mut m = base.clone();
    let scaled = |v: Span, k: f64| Span::from_ps((v.as_ps() as f64 * k).round().max(0.0) as u64);
    for (keys, k) in [(LATENCY_COSTS, p[0]), (APP_COSTS, p[1])] {
        for &key in keys {
            if let Some(slot) = m.cost_mut(key) {
                *slot = scaled(*slot, k);
            }
        }
    }
    let abs = |v: f64| Span::from_ps(v.round().max(0.0) as u64);
    m.nic_tx_packet = abs(p[2]);
    m.nic_tx_byte = abs(p[3]);
    m
}

/// The parameters of `base` itself: scales 1, its own engine times.
fn base_params(base: &HostModel) -> [f64; 4] {
    [
        1.0,
        1.0,
        base.nic_tx_packet.as_ps() as f64,
        base.nic_tx_byte.as_ps() as f64,
    ]
}

/// The simulator's value of every observation of `m` with `model`: median half round trips
/// in ps, then bytes per second.
///
/// # Errors
/// A simulated run that fails (a cost so large the run does not finish, say).
pub fn simulate(model: &HostModel, m: &Measurements, opts: &FitOptions) -> Result<Vec<f64>> {
    let fabric = || -> Result<SimFabric> {
        Ok(SimFabric::new(SimConfig {
            host: model.clone(),
            ..SimConfig::default()
        })?)
    };
    let mut out = Vec::with_capacity(m.ping.len() + m.bw.len());
    for p in &m.ping {
        let opts = PingOptions {
            size: p.size,
            iters: opts.sim_ping_iters,
            warmup: 5,
        };
        out.push(measure::ping(&mut fabric()?, &opts)?.p50_ps as f64);
    }
    for b in &m.bw {
        let cap = if b.size <= 4096 {
            opts.sim_bw_small_iters
        } else {
            opts.sim_bw_large_iters
        };
        let bw = BwOptions {
            size: b.size,
            iters: b.iters.clamp(1, cap),
            window: b.window,
        };
        out.push(crate::bw::run(&mut fabric()?, &bw)?.bytes_per_second);
    }
    Ok(out)
}

/// The device's value of every observation, in [`simulate`]'s order and units.
fn observed(m: &Measurements) -> Vec<f64> {
    m.ping
        .iter()
        .map(|p| p.p50_ps as f64)
        .chain(m.bw.iter().map(|b| b.bytes_per_second))
        .collect()
}

/// Refuses measurements the fit cannot honestly explain: fewer distinct observations than
/// [`PARAMS`] (the fit would be under-determined: any of infinitely many profiles matches,
/// and the one returned says nothing), and figures outside what the fit's simulated fabric
/// can show whatever the host costs (a stream above its payload line rate, a half round trip
/// below its propagation delay).
///
/// # Errors
/// Each case, naming the figure or the count and what is needed.
fn check_identifiable(m: &Measurements) -> Result<()> {
    let cfg = SimConfig::default();
    let line_bytes_per_s = cfg.link_rate_bps as f64 / 8.0;
    for b in &m.bw {
        if b.bytes_per_second > line_bytes_per_s {
            bail!(
                "the bw figure at {} is {:.4e} B/s, above the {:.4e} B/s line rate of the \
                 fabric the fit simulates ({} b/s links): no host costs give it; check the \
                 measurement",
                size_name(b.size),
                b.bytes_per_second,
                line_bytes_per_s,
                cfg.link_rate_bps
            );
        }
    }
    // A half round trip crosses two links (host, switch, host) at least once.
    let propagation = 2 * cfg.link_delay.as_ps();
    for p in &m.ping {
        if p.p50_ps < propagation {
            bail!(
                "the ping figure at {} is {} ps, below the {propagation} ps the fit's fabric \
                 takes to propagate one way: no host costs give it; check the measurement",
                size_name(p.size),
                p.p50_ps
            );
        }
    }
    let mut distinct: Vec<(bool, u64)> = m
        .ping
        .iter()
        .map(|p| (true, p.size))
        .chain(m.bw.iter().map(|b| (false, b.size)))
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < PARAMS.len() {
        bail!(
            "{} distinct observation(s) cannot fit {} parameters ({}): the fit would be \
             under-determined; measure at least {} (the default plan: ping at 64 B, 1000 B and \
             4 KiB, bw at 64 B and 64 KiB)",
            distinct.len(),
            PARAMS.len(),
            PARAMS.join(", "),
            PARAMS.len()
        );
    }
    Ok(())
}

/// Fits a profile to `m` (see the module doc).
///
/// # Errors
/// No observation, a non-positive observation, fewer distinct observations than parameters
/// or one no host costs can give (`check_identifiable`), a base without CPU costs or NIC
/// latencies (the scales would have nothing to scale), or a simulated run that fails.
pub fn fit(m: &Measurements, opts: &FitOptions) -> Result<Fit> {
    let obs = observed(m);
    if obs.is_empty() {
        bail!("the measurements hold no ping or bw figure to fit");
    }
    if let Some(v) = obs.iter().find(|v| !(**v > 0.0 && v.is_finite())) {
        bail!("a measured figure is {v}: every figure must be positive");
    }
    check_identifiable(m)?;
    for (group, keys) in [
        ("latency costs", LATENCY_COSTS),
        ("per-message costs", APP_COSTS),
    ] {
        let sum: u64 = opts
            .base
            .costs()
            .iter()
            .filter(|(k, _)| keys.contains(k))
            .map(|(_, v)| v.as_ps())
            .sum();
        if sum == 0 {
            bail!(
                "the base profile `{}` has no {group}: the fit scales the base's, so start \
                 from a profile that has them (rxe-guest, connectx6)",
                opts.base.name()
            );
        }
    }
    let start = base_params(&opts.base);
    // Normalised coordinates: every parameter 1 at a scale near its start, so one damping
    // and one step rule fit all four.
    let unit: [f64; 4] = [1.0, 1.0, start[2].max(1e6), start[3].max(1e3)];
    let to_params = |u: &[f64; 4]| -> [f64; 4] { std::array::from_fn(|i| u[i] * unit[i]) };
    let pings = m.ping.len();
    // Residuals in time: a ping's half round trip, and a stream's time per byte (1 / bw),
    // each relative to the device's. Both grow about linearly with every cost, so the
    // linearised steps land where they aim.
    let residuals = |u: &[f64; 4]| -> Result<Vec<f64>> {
        let sim = simulate(&model_of(&opts.base, &to_params(u)), m, opts)?;
        Ok(time_residuals(&sim, &obs, pings))
    };
    let base_sim = simulate(&opts.base, m, opts)?;
    // Start from the base with every cost scaled by the device's slowdown on the first
    // observation (how much slower than the base the device is, overall).
    let slowdown = time_residuals(&base_sim, &obs, pings)
        .first()
        .map_or(1.0, |r| 1.0 / (1.0 + r))
        .clamp(1e-3, 1e3);
    let mut u: [f64; 4] = std::array::from_fn(|i| slowdown * start[i] / unit[i]);
    let mut r = residuals(&u)?;
    let mut cost = sum_sq(&r);
    let mut lambda = 1e-2;
    let mut evaluations = 2;
    let mut iterations = 0;
    while iterations < opts.max_iterations && cost > 1e-12 {
        iterations += 1;
        // Forward differences, the four columns in parallel (order-preserving, so the result
        // is the same on any number of threads).
        let steps: [f64; 4] = std::array::from_fn(|i| 0.01 * u[i].abs().max(0.05));
        let cols: Vec<Vec<f64>> = (0..4)
            .into_par_iter()
            .map(|j| {
                let mut v = u;
                v[j] += steps[j];
                let rj = residuals(&v)?;
                Ok(rj.iter().zip(&r).map(|(a, b)| (a - b) / steps[j]).collect())
            })
            .collect::<Result<_>>()?;
        evaluations += 4;
        let (a, g) = normal_equations(&cols, &r);
        let mut improved = false;
        for _ in 0..12 {
            let mut lhs = a;
            for i in 0..4 {
                lhs[i][i] += lambda * a[i][i].max(1e-12);
            }
            let Some(delta) = solve4(lhs, g.map(|x| -x)) else {
                lambda *= 4.0;
                continue;
            };
            let trial: [f64; 4] = std::array::from_fn(|i| (u[i] + delta[i]).max(0.0));
            let rt = residuals(&trial)?;
            evaluations += 1;
            let ct = sum_sq(&rt);
            if ct < cost {
                let gain = cost - ct;
                u = trial;
                r = rt;
                cost = ct;
                lambda = (lambda / 3.0).max(1e-9);
                improved = gain > 1e-12 * (1.0 + cost);
                break;
            }
            lambda *= 4.0;
        }
        if !improved {
            break;
        }
    }
    let params = to_params(&u);
    let model = model_of(&opts.base, &params);
    let fitted = simulate(&model, m, opts)?;
    evaluations += 1;
    let rows = rows(m, &obs, &base_sim, &fitted);
    let rms = (sum_sq(&r) / r.len() as f64).sqrt();
    Ok(Fit {
        model,
        params,
        rows,
        iterations,
        evaluations,
        rms,
    })
}

/// (sim − device) / device of each observation in time: the first `pings` are times already,
/// the rest throughputs, compared as their inverses (device / sim − 1).
fn time_residuals(sim: &[f64], obs: &[f64], pings: usize) -> Vec<f64> {
    sim.iter()
        .zip(obs)
        .enumerate()
        .map(|(i, (s, o))| if i < pings { (s - o) / o } else { o / s - 1.0 })
        .collect()
}

fn sum_sq(r: &[f64]) -> f64 {
    r.iter().map(|x| x * x).sum()
}

/// JᵀJ and Jᵀr of the Jacobian given by its columns.
fn normal_equations(cols: &[Vec<f64>], r: &[f64]) -> ([[f64; 4]; 4], [f64; 4]) {
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let a = std::array::from_fn(|i| std::array::from_fn(|j| dot(&cols[i], &cols[j])));
    let g = std::array::from_fn(|i| dot(&cols[i], r));
    (a, g)
}

/// Solves the 4 × 4 system `a x = b` by Gaussian elimination with partial pivoting; `None`
/// when it is singular.
fn solve4(mut a: [[f64; 4]; 4], mut b: [f64; 4]) -> Option<[f64; 4]> {
    for c in 0..4 {
        let p = (c..4).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, p);
        b.swap(c, p);
        for i in c + 1..4 {
            let f = a[i][c] / a[c][c];
            let pivot = a[c];
            for (x, p) in a[i].iter_mut().zip(pivot).skip(c) {
                *x -= f * p;
            }
            b[i] -= f * b[c];
        }
    }
    let mut x = [0.0; 4];
    for c in (0..4).rev() {
        let s: f64 = (c + 1..4).map(|j| a[c][j] * x[j]).sum();
        x[c] = (b[c] - s) / a[c][c];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// The observations as rows, in the units people read: µs, MB/s (MiB/s).
fn rows(m: &Measurements, obs: &[f64], base: &[f64], fitted: &[f64]) -> Vec<Row> {
    let names = m
        .ping
        .iter()
        .map(|p| (format!("ping {} p50", size_name(p.size)), "µs", 1e-6))
        .chain(m.bw.iter().map(|b| {
            let mib = 1.0 / f64::from(1u32 << 20);
            (format!("bw {}", size_name(b.size)), "MB/s", mib)
        }));
    names
        .enumerate()
        .map(|(i, (name, unit, k))| Row {
            name,
            unit,
            device: obs[i] * k,
            base: base[i] * k,
            fitted: fitted[i] * k,
        })
        .collect()
}

/// `64 B`, `4 KiB`, `1 MiB`.
pub fn size_name(size: u64) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// The fit as text: the parameters, then one line per observation (device, base, fitted,
/// error), then the search's figures.
pub fn render(fit: &Fit, base: &HostModel, source: &str) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "host profile fitted to {source}, base `{}`", base.name());
    let b = base_params(base);
    let show = |i: usize, v: f64| match i {
        0 | 1 => format!("{v:.4}"),
        _ => super::profile_file::format_cost(Span::from_ps(v.round().max(0.0) as u64)),
    };
    for (i, name) in PARAMS.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {name:<14} {:>12}   (base {})",
            show(i, fit.params[i]),
            show(i, b[i])
        );
    }
    let _ = writeln!(
        o,
        "{:<18} {:>12} {:>12} {:>12} {:>8}",
        "observation", "device", "sim base", "sim fitted", "error"
    );
    for r in &fit.rows {
        let _ = writeln!(
            o,
            "{:<18} {:>12} {:>12} {:>12} {:>7.1}%",
            format!("{} {}", r.name, r.unit),
            format!("{:.2}", r.device),
            format!("{:.2}", r.base),
            format!("{:.2}", r.fitted),
            100.0 * r.error()
        );
    }
    let _ = writeln!(
        o,
        "rms relative residual {:.4} after {} iteration(s), {} simulated evaluation(s)",
        fit.rms, fit.iterations, fit.evaluations
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve4_solves_and_refuses_singular_systems() {
        let a = [
            [4.0, 1.0, 0.0, 0.0],
            [1.0, 3.0, 1.0, 0.0],
            [0.0, 1.0, 2.0, 1.0],
            [0.0, 0.0, 1.0, 5.0],
        ];
        let x = [1.0, -2.0, 3.0, 0.5];
        let b = std::array::from_fn(|i| (0..4).map(|j| a[i][j] * x[j]).sum());
        let got = solve4(a, b).unwrap();
        for i in 0..4 {
            assert!((got[i] - x[i]).abs() < 1e-12, "{got:?}");
        }
        assert!(solve4([[1.0; 4]; 4], [1.0; 4]).is_none());
    }

    #[test]
    fn params_scale_their_groups_and_set_the_engine() {
        let base = HostModel::from_profile("rxe-guest").unwrap();
        let m = model_of(&base, &[2.0, 0.5, 3e6, 7e3]);
        assert_eq!(m.doorbell, base.doorbell * 2);
        assert_eq!(m.payload_read, base.payload_read * 2);
        assert_eq!(
            m.app_recv_message,
            Span::from_ps(base.app_recv_message.as_ps() / 2)
        );
        assert_eq!(m.nic_tx_packet, Span::from_us(3));
        assert_eq!(m.nic_tx_byte, Span::from_ns(7));
        assert_eq!(model_of(&base, &base_params(&base)), base);
        assert_eq!(size_name(64), "64 B");
        assert_eq!(size_name(65536), "64 KiB");
        assert_eq!(size_name(1 << 20), "1 MiB");
    }
}
