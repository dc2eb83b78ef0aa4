//! Latency summary, goodput and the human-readable terminal table.

use std::fmt::Write as _;

use crate::figures::{Figures, LatencySummary};
use crate::kinds::WorkloadKind;
use crate::metrics::{goodput_fairness, SlowdownSummary};
use crate::percentile::nearest_rank;
use crate::schema::{MessageRecord, RunResult};
use crate::windowed::{windowed_sharing, SKIP_PS, WINDOW_PS};

impl LatencySummary {
    /// Summarizes `records`. Pure: the order of `records` does not matter.
    pub fn from_records(records: &[MessageRecord]) -> Self {
        let mut lat: Vec<u64> = records
            .iter()
            .filter_map(MessageRecord::latency_ps)
            .collect();
        lat.sort_unstable();
        let count = records.len() as u64;
        let delivered = lat.len() as u64;
        let sum: u128 = lat.iter().map(|&l| u128::from(l)).sum();
        let mean_ps = (delivered > 0).then(|| sum as f64 / delivered as f64);
        Self {
            count,
            delivered,
            undelivered: count - delivered,
            min_ps: lat.first().copied(),
            p50_ps: nearest_rank(&lat, 50.0),
            p90_ps: nearest_rank(&lat, 90.0),
            p99_ps: nearest_rank(&lat, 99.0),
            p999_ps: nearest_rank(&lat, 99.9),
            p9999_ps: nearest_rank(&lat, 99.99),
            max_ps: lat.last().copied(),
            mean_ps,
        }
    }
}

/// Goodput in bits per second: delivered payload bits (request plus response for an echo
/// exchange, see [`MessageRecord::payload_bytes`]) divided by the span from the first
/// intended send time (over all messages) to the last completion.
///
/// `None` when nothing was delivered or the span is zero. Undelivered messages contribute no
/// bits but their intended times still count toward the start of the span.
pub fn goodput_bps(records: &[MessageRecord]) -> Option<f64> {
    let first = records.iter().map(|m| m.intended_ps).min()?;
    let last = records.iter().filter_map(|m| m.completed_ps).max()?;
    let span_ps = last.checked_sub(first).filter(|&s| s > 0)?;
    let bits: u128 = records
        .iter()
        .filter(|m| m.completed_ps.is_some())
        .map(|m| u128::from(m.payload_bytes()) * 8)
        .sum();
    Some(bits as f64 * 1e12 / span_ps as f64)
}

/// Last completion time minus the first intended send time, ps (the workload's makespan);
/// `None` when nothing was delivered.
pub fn completion_span_ps(records: &[MessageRecord]) -> Option<u64> {
    let first = records.iter().map(|m| m.intended_ps).min()?;
    let last = records.iter().filter_map(|m| m.completed_ps).max()?;
    Some(last.saturating_sub(first))
}

/// Formats picoseconds as microseconds with 3 decimals (nanosecond resolution), rounding half
/// up in integer arithmetic, e.g. `1_234_567_890` ps → `"1234.568"`.
pub fn format_us(ps: u64) -> String {
    let ns = ps / 1000 + u64::from(ps % 1000 >= 500);
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Formats a byte count with a binary unit (B, KiB, MiB, GiB), two decimals above bytes.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = UNITS[0];
    for u in &UNITS[1..] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.2} {unit}")
}

fn opt_us(ps: Option<u64>) -> String {
    ps.map_or_else(|| "-".to_string(), |v| format!("{} µs", format_us(v)))
}

/// Renders the human summary of a run as a multi-line table (ends with a newline).
///
/// Shows messages sent/delivered (with a prominent warning line when any message is
/// undelivered), delivery-check failures, p50/p90/p99/p99.9/max message completion time in µs,
/// payload goodput in Gbps, T* and (last completion − first intended) / T*, the RC QP
/// attributes and capabilities of the transport (when known), where the run happened (when
/// recorded: [`crate::Environment::summary_lines`]), ECN marks, CNPs, PFC XOFF/XON,
/// drops, peak buffer and queue, simulated events and time, wall time and events per
/// second. Statistics with no data are shown as `-`, and a counter the backend does not
/// observe as `n/a`, never as 0.
pub fn summary_table(r: &RunResult) -> String {
    let s = LatencySummary::from_records(&r.messages);
    let mut o = String::new();
    let w = &mut o;
    // Writing into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "run        {} ({}) backend={} stack={} seed={}",
        r.scenario.name, r.scenario.path, r.scenario.backend, r.scenario.stack, r.scenario.seed
    );
    if let Some(env) = &r.environment {
        w.push_str(&env.summary_lines());
    }
    // Open-loop and echo senders send different amounts: their per-sender figures are means.
    let (who, per, mean) = match r.workload.kind {
        WorkloadKind::Echo => ("client(s)", "per client", " (mean)"),
        WorkloadKind::Incast => ("sender(s)", "per sender", ""),
        WorkloadKind::OpenLoop => ("sender(s)", "per sender", " (mean)"),
    };
    let _ = writeln!(
        w,
        "workload   {}: {} {who} -> host {}, {} {per} in {} message(s){mean}",
        r.workload.kind,
        r.workload.senders,
        r.workload.receiver,
        format_bytes(r.workload.bytes_per_sender),
        r.workload.messages_per_sender
    );
    let _ = writeln!(w);
    if s.undelivered > 0 {
        let _ = writeln!(
            w,
            "!!! NOT COMPLETED: {} of {} messages were not ACKed before the run ended !!!",
            s.undelivered, s.count
        );
        let _ = writeln!(
            w,
            "!!! latency statistics below cover completed messages only       !!!"
        );
        let _ = writeln!(w);
    }
    if !r.errors.is_empty() {
        let _ = writeln!(
            w,
            "!!! the middleware reported {} error(s); the earliest (the root cause, as a rule; \
             all are in result.json):",
            r.errors.len()
        );
        let _ = writeln!(w, "!!!   {}", r.errors[0]);
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "messages   intended {:>8}   completed {:>8}   not completed {:>8}",
        s.count, s.delivered, s.undelivered
    );
    let d = &r.delivery;
    let _ = writeln!(
        w,
        "receiver   delivered intact {}   corrupted {}   duplicated {}   missing {}{}",
        d.delivered,
        d.digest_mismatches,
        d.duplicates,
        d.missing,
        if d.digest_mismatches + d.duplicates + d.missing > 0 {
            "   <-- FAILED"
        } else {
            ""
        }
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "message completion time (from intended send time)");
    for (name, v) in [
        ("min", s.min_ps),
        ("p50", s.p50_ps),
        ("p90", s.p90_ps),
        ("p99", s.p99_ps),
        ("p99.9", s.p999_ps),
        ("max", s.max_ps),
    ] {
        let _ = writeln!(w, "  {name:<8} {:>16}", opt_us(v));
    }
    let mean = s
        .mean_ps
        .map_or_else(|| "-".to_string(), |m| format!("{:.3} µs", m / 1e6));
    let _ = writeln!(w, "  {:<8} {:>16}", "mean", mean);
    let goodput = goodput_bps(&r.messages)
        .map_or_else(|| "-".to_string(), |g| format!("{:.2} Gbps", g / 1e9));
    // Payload bits only: per-packet headers and xrdma's own header and ACKs are excluded, so
    // a 1 KiB MTU with 82 B of headers caps it near 92.6 Gbps on a 100 Gbps link.
    // An echo's requests and responses cross the links in opposite directions: their sum can
    // exceed one link's rate.
    let what = if r.workload.kind == WorkloadKind::Echo {
        "request + response payload bits, both directions"
    } else {
        "payload bits"
    };
    let _ = writeln!(
        w,
        "goodput    {goodput} ({what} / (last completion - first intended)){}",
        if s.undelivered > 0 {
            "  (incomplete run)"
        } else {
            ""
        }
    );
    if let Some(j) = goodput_fairness(&r.messages) {
        let _ = writeln!(
            w,
            "fairness   Jain's index of per-sender goodput {j:.4} (1 = equal shares, 1/n = one \
             sender)"
        );
    }
    // Only an incast's senders are backlogged from the start; an open loop's or an echo's
    // idle between arrivals, where a window's shares say nothing of fairness.
    let windowed = (r.workload.kind == WorkloadKind::Incast)
        .then(|| {
            crate::windowed::windowed_sharing(
                &r.messages,
                crate::windowed::SKIP_PS,
                crate::windowed::WINDOW_PS,
            )
        })
        .flatten();
    if let Some(ws) = windowed {
        let _ = writeln!(
            w,
            "           worst 10 ms window: Jain {:.4}, lowest total {:.2} Gbps ({} window{} \
             after 1 ms while every sender sends)",
            ws.worst_jain,
            ws.worst_total_bps / 1e9,
            ws.windows,
            if ws.windows == 1 { "" } else { "s" }
        );
    }
    if let Some(hb) = &r.heartbeat {
        let _ = writeln!(w, "{}", heartbeat_line(hb));
    }
    if let Some(cpu) = &r.host_cpu {
        let bytes: u128 = r
            .messages
            .iter()
            .filter(|m| m.completed_ps.is_some())
            .map(|m| u128::from(m.payload_bytes()))
            .sum();
        let _ = writeln!(w, "{}", cpu.summary_line(s.delivered, bytes));
    }
    if let Some(sd) = r
        .path
        .ideal(0)
        .and_then(|i| SlowdownSummary::from_records(&r.messages, &i))
    {
        let _ = writeln!(
            w,
            "slowdown   p50 {:.3}   p99 {:.3}   max {:.3}   (FCT / ideal FCT of the message alone)",
            sd.p50, sd.p99, sd.max
        );
    }
    let span = completion_span_ps(&r.messages);
    match r.ideal {
        // T* is the finish time of an incast that starts all at once; arrivals spread over
        // time (open loop, echo) have no such bound.
        None if r.workload.kind != WorkloadKind::Incast => {
            let _ = writeln!(
                w,
                "ideal      T* not stated for this {} workload (it bounds an incast that starts \
                 at once)",
                r.workload.kind
            );
        }
        Some(ideal) => {
            let ratio = match span {
                Some(sp) if ideal.t_star_ps > 0 => {
                    format!("{:.4}", sp as f64 / ideal.t_star_ps as f64)
                }
                _ => "-".to_string(),
            };
            let _ = writeln!(
                w,
                "ideal      T* {} µs   (last completion - first intended) / T* = {}{}",
                format_us(ideal.t_star_ps),
                ratio,
                if s.undelivered > 0 {
                    "  (incomplete run)"
                } else {
                    ""
                }
            );
        }
        None => {
            let _ = writeln!(
                w,
                "ideal      T* not defined (it is stated for the simulator's single-switch incast)"
            );
        }
    }
    if !r.unfinished.is_empty() {
        let _ = writeln!(
            w,
            "unfinished {} message(s) did not complete before the run ended (no latency); \
             sender/index/intended:",
            r.unfinished.len()
        );
        const SHOWN: usize = 10;
        for u in r.unfinished.iter().take(SHOWN) {
            let _ = writeln!(
                w,
                "           host {} #{} at {} µs",
                u.sender,
                u.index,
                format_us(u.intended_ps)
            );
        }
        if r.unfinished.len() > SHOWN {
            let _ = writeln!(
                w,
                "           ... and {} more (all in result.json)",
                r.unfinished.len() - SHOWN
            );
        }
    }
    let _ = writeln!(w);
    if let Some(t) = &r.transport {
        w.push_str(&t.summary_lines());
    }
    let n = &r.network;
    if r.scenario.backend == crate::kinds::Backend::Sockets {
        let _ = writeln!(
            w,
            "network    not observed (the kernel's TCP sockets: no device, no switch)"
        );
        let _ = writeln!(w, "wall clock {:.3} s", r.wall_clock.wall_seconds);
        return o;
    }
    let c = |x: Option<u64>| x.map_or_else(|| "n/a".to_string(), |v| v.to_string());
    let on_device = r.scenario.backend == crate::kinds::Backend::Verbs
        || (n.ecn_marks.is_none() && n.pfc_xoff.is_none() && n.max_buffer_bytes.is_none());
    if on_device {
        // A real device: only what its own counters expose; the switches are not observable.
        let _ = writeln!(
            w,
            "device     packets sent {}   sequence NAKs {}   RNR NAKs {}",
            c(n.data_packets),
            c(n.seq_naks),
            c(n.rnr_naks)
        );
        // Across processes: the figures are the sum over the ranks' distinct devices.
        if let Some(scope) = r.environment.as_ref().and_then(|e| e.device_scope()) {
            let _ = writeln!(w, "           {scope}");
        }
        let _ = writeln!(
            w,
            "           ECN marks {}   CNPs {}   retransmit timeouts {}",
            c(n.ecn_marks),
            c(n.cnps),
            c(n.retransmit_timeouts)
        );
        let _ = writeln!(
            w,
            "           (n/a: not observed by this device; PFC pauses, drops and switch buffers \
             are not observable from a host)"
        );
        if let Some(t) = n.ack_timeouts.filter(|&t| t > 0) {
            let _ = writeln!(w, "           ACK timeouts (connections failed) {t}");
        }
        let _ = writeln!(w, "wall clock {:.3} s", r.wall_clock.wall_seconds);
        return o;
    }
    let _ = writeln!(
        w,
        "network    data packets {}   ECN marks {}   CNPs {}",
        c(n.data_packets),
        c(n.ecn_marks),
        c(n.cnps)
    );
    let _ = writeln!(
        w,
        "           PFC XOFF {}   PFC XON {}   drops {}",
        c(n.pfc_xoff),
        c(n.pfc_xon),
        c(n.drops)
    );
    let recovery = [
        n.retransmitted_packets,
        n.retransmit_timeouts,
        n.seq_naks,
        n.rnr_naks,
    ];
    if recovery.iter().flatten().any(|&v| v > 0) {
        let spurious = n.spurious_timeouts.filter(|&s| s > 0);
        let _ = writeln!(
            w,
            "           retransmitted packets {}   timeouts {}{}   sequence NAKs {}   RNR NAKs {}",
            c(n.retransmitted_packets),
            c(n.retransmit_timeouts),
            spurious.map_or_else(String::new, |s| format!(" ({s} spurious)")),
            c(n.seq_naks),
            c(n.rnr_naks)
        );
        if spurious.is_some() {
            let _ = writeln!(
                w,
                "           spurious timeouts: nothing of the QP's was lost; ACKs queued longer \
                 than the local ACK timeout, and the packets were sent again (the others resent \
                 packets dropped, or discarded by a QP out of sequence or failed)"
            );
        }
    }
    if let Some(line) = fault_line(n, r.scenario.stack.is_tcp()) {
        let _ = writeln!(w, "{line}");
    }
    let _ = writeln!(
        w,
        "           max buffer {}   max egress queue {}",
        n.max_buffer_bytes
            .map_or_else(|| "n/a".to_string(), format_bytes),
        n.max_egress_queue_bytes
            .map_or_else(|| "n/a".to_string(), format_bytes)
    );
    if let Some(sim) = &r.sim {
        let _ = writeln!(
            w,
            "sim        events {}   simulated time {} µs   trace {}",
            sim.events,
            format_us(sim.simulated_ps),
            sim.trace_hash
        );
        for c in &sim.captures {
            let _ = writeln!(
                w,
                "capture    host {}: {} ({} packets, {} skipped)",
                c.host, c.file, c.packets, c.skipped
            );
        }
    }
    let wc = &r.wall_clock;
    let _ = writeln!(
        w,
        "wall clock {:.3} s   {:.2} M events/s",
        wc.wall_seconds,
        wc.events_per_second / 1e6
    );
    o
}

/// The summary's heartbeat line: the beats sent and answered, and the round trip's p50, p99
/// and maximum (nearest rank).
pub fn heartbeat_line(h: &crate::HeartbeatRecord) -> String {
    let rtts = h.sorted_rtts();
    let unanswered = h.samples.len() - rtts.len();
    let q = |p: f64| {
        crate::percentile::nearest_rank(&rtts, p).map_or_else(|| "-".to_string(), format_us)
    };
    format!(
        "heartbeat  host {} -> host {} every {} µs, {} B: {} beat(s), {} answered{}; round \
         trip p50 {} µs  p99 {} µs  max {} µs",
        h.from,
        h.to,
        format_us(h.every_ps),
        h.size,
        h.samples.len(),
        rtts.len(),
        if unanswered > 0 {
            format!(" ({unanswered} not answered when the run ended)")
        } else {
            String::new()
        },
        q(50.0),
        q(99.0),
        q(100.0),
    )
}

/// The injected-fault counters as one summary line, when any is non-zero: losses, link-down
/// drops, corrupted packets the receiving NIC dropped (for a bad ICRC, RoCE's; for a bad
/// checksum, `tcp`'s segments), and ACK timeouts. A counter the backend cannot observe is
/// shown as `-`.
fn fault_line(n: &crate::schema::NetworkCounters, tcp: bool) -> Option<String> {
    let all = [
        n.injected_losses,
        n.link_down_drops,
        n.icrc_drops,
        n.ack_timeouts,
    ];
    if !all.iter().any(|c| c.is_some_and(|c| c > 0)) {
        return None;
    }
    let show = |c: Option<u64>| c.map_or_else(|| "-".to_string(), |c| c.to_string());
    let check = if tcp { "checksum" } else { "ICRC" };
    Some(format!(
        "faults     injected losses {}   link-down drops {}   corrupted ({check} drops) {}   \
         ACK timeouts {}",
        show(n.injected_losses),
        show(n.link_down_drops),
        show(n.icrc_drops),
        show(n.ack_timeouts)
    ))
}

impl Figures {
    /// The figures of a `kind` workload's `messages`. Pure: the order of `messages` does not
    /// matter.
    pub fn of(kind: WorkloadKind, messages: &[MessageRecord]) -> Self {
        let worst_window_fairness = (kind == WorkloadKind::Incast)
            .then(|| windowed_sharing(messages, SKIP_PS, WINDOW_PS))
            .flatten()
            .map(|w| w.worst_jain);
        Figures {
            latency: LatencySummary::from_records(messages),
            goodput_bps: goodput_bps(messages),
            fairness: goodput_fairness(messages),
            worst_window_fairness,
        }
    }
}
