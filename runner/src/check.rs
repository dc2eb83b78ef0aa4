//! From a scenario to the simulator's configuration: mapping the YAML sections, checking
//! them before anything runs, and pointing every problem at the key that caused it.

use anyhow::{bail, Result};
use xrdma::{Config, RcParams, Span, Time};
use xrdma_scenario::{Scenario, SimSection, Workload};
use xrdma_sim::{SimConfig, SimConfigError, Topology};

/// The simulator configuration from a scenario's `sim:` block and its RC QP attributes `rc`
/// (the `rc:` block), for a workload of `workload_hosts` hosts. The block's settings are the
/// simulator's own types and pass through; a star has exactly the workload's hosts, another
/// topology its own host count (checked against the workload in [`check`]).
pub fn sim_config(s: &SimSection, rc: RcParams, workload_hosts: u32) -> SimConfig {
    let hosts = match s.topology.host_count() {
        Some(n) if s.topology != Topology::Star => u32::try_from(n).unwrap_or(u32::MAX),
        _ => workload_hosts,
    };
    SimConfig {
        hosts,
        link_rate_bps: s.link_rate_bps,
        link_delay: s.link_delay,
        mtu: s.mtu,
        header_bytes: s.header_bytes,
        switch_buffer_bytes: s.switch_buffer_bytes,
        ecn: s.ecn,
        pfc: s.pfc,
        seed: s.seed,
        cnp_interval: s.cnp_interval,
        rc,
        dcqcn: s.dcqcn,
        topology: s.topology,
        faults: s.faults.clone(),
        host: s.host.clone(),
        ..SimConfig::default()
    }
}

/// A scenario checked for the simulator: the configurations to run with, the problems that do
/// not stop a run but probably spoil it, and the memory the run needs.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The xrdma configuration.
    pub xrdma: Config,
    /// The simulator configuration.
    pub sim: SimConfig,
    /// `FILE:LINE:COLUMN: FIELD: warning` lines, for settings that are legal but probably not
    /// what was meant (a lossy fabric whose timers cannot recover, DCQCN without ECN, ...).
    pub warnings: Vec<String>,
    /// Estimated bytes the run touches ([`memory_estimate`]).
    pub memory_bytes: u64,
}

/// Check everything a run needs before starting it: the xrdma config and the simulator config
/// (topology, PFC headroom, ECN thresholds) as the backend will see them, the workload against
/// the fabric, and the memory the run needs.
///
/// # Errors
/// The first problem, as `FILE:LINE:COLUMN: FIELD: reason`.
pub fn check(sc: &Scenario) -> Result<Checked> {
    let cfg = check_xrdma(sc)?;
    let section = sc.sim_or_default();
    let mut sim = sim_config(&section, sc.rc_params(), sc.hosts());
    sim.tcp = sc.tcp;
    if let Err(SimConfigError::Invalid { field, reason }) = sim.validate() {
        let key = section.scenario_key(field);
        let refs: Vec<&str> = key.iter().map(String::as_str).collect();
        let reason = if field == "hosts" {
            let hosts = sc.hosts();
            format!(
                "the senders and the receiver (and the heartbeat's hosts) make {hosts} hosts; \
                 the simulator's host count {reason}"
            )
        } else {
            reason
        };
        bail!("{}: {}: {reason}", where_is(sc, &refs), key.join("."));
    }
    if let Some(h) = sc.heartbeat.filter(|h| h.hosts() > sim.hosts) {
        bail!(
            "{}: heartbeat: host {} is not on the topology, which has hosts 0..={}",
            where_is(sc, &["heartbeat"]),
            h.from.max(h.to),
            sim.hosts - 1
        );
    }
    if sim.hosts < sc.workload.hosts() {
        let kind = sc.workload.kind();
        let key = sc.workload.senders_key();
        bail!(
            "{}: workload.{kind}.{key}: the workload needs {} hosts but the topology has {}",
            where_is(sc, &["workload", kind, key]),
            sc.workload.hosts(),
            sim.hosts
        );
    }
    for (key, host) in section.host_faults.hosts() {
        if host >= sim.hosts {
            bail!(
                "{}: sim.faults.{key}: host {host} does not exist: the hosts are 0..={}",
                where_is(sc, &["sim", "faults", key]),
                sim.hosts - 1
            );
        }
    }
    if let Some(c) = &section.capture {
        // The workload may have shrunk since the file was read (a sweep's fan-in axis).
        if let Err(m) = c.check_hosts(sc.workload.hosts()) {
            bail!(
                "{}: sim.capture.hosts: {m}",
                where_is(sc, &["sim", "capture", "hosts"])
            );
        }
    }
    let need = memory_estimate(sc, &cfg);
    if let Some(avail) = available_memory().filter(|_| sc.check_memory) {
        if need > avail {
            bail!(
                "{}: the run needs about {} of memory (per sender: a staging ring, receive \
                 slots and a landing buffer for the largest message; the switch buffer; \
                 {BYTES_PER_MESSAGE} bytes of records a message), but only {} is available; \
                 use fewer senders or messages, smaller messages or a smaller \
                 xrdma.max-window, or `xrdma run --no-memory-check` to run anyway",
                sc.source_path.display(),
                xrdma_reports::format_bytes(need),
                xrdma_reports::format_bytes(avail)
            );
        }
    }
    let warnings = warnings(sc, &cfg, &sim);
    Ok(Checked {
        xrdma: cfg,
        sim,
        warnings,
        memory_bytes: need,
    })
}

/// The scenario's xrdma configuration, checked (every backend runs the same core), and the
/// workload's stalls against the run's end (a stall that starts after the run has stopped
/// would silently be a no-op).
///
/// # Errors
/// The first field out of range, as `FILE:LINE:COLUMN: xrdma.FIELD: reason`; a stall at or
/// after the run's end, as `FILE:LINE:COLUMN: workload.KIND.stall: reason`.
pub fn check_xrdma(sc: &Scenario) -> Result<Config> {
    let cfg = sc.xrdma.clone();
    if let Err(e) = cfg.validate() {
        let at = where_is(sc, &["xrdma", e.field]);
        bail!("{at}: xrdma.{}: {}", e.field, e.reason);
    }
    check_stalls(sc)?;
    let largest = sc.workload.largest_message();
    if largest > cfg.max_message_size {
        let kind = sc.workload.kind();
        bail!(
            "{}: workload.{kind}: a {largest}-byte message exceeds the largest an RC QP \
             carries ({} bytes, 2 GiB)",
            where_is(sc, &["workload", kind]),
            cfg.max_message_size
        );
    }
    Ok(cfg)
}

/// Warnings for timed faults and stalls that start after a run that ended at `end`
/// (simulated time): a link-down, stop-reposting or stall window the run never reached
/// tested nothing, which the user should hear (an incast has no end known before it runs).
pub fn unreached_faults(sc: &Scenario, end: Time) -> Vec<String> {
    let mut out = Vec::new();
    let section = sc.sim_or_default();
    let stalls: &[xrdma_scenario::Stall] = match &sc.workload {
        Workload::OpenLoop(ol) => &ol.stalls,
        Workload::Echo(e) => &e.stalls,
        Workload::Incast(_) => &[],
    };
    let windows = section
        .faults
        .link_down
        .iter()
        .map(|f| ("sim.faults.link-down", f.at))
        .chain(
            section
                .host_faults
                .stop_reposting
                .iter()
                .map(|s| ("sim.faults.stop-reposting", s.at)),
        )
        .chain(stalls.iter().map(|s| ("stall", s.at)));
    for (key, at) in windows {
        if at >= end {
            out.push(format!(
                "{}: {key} at {at} never happened: the run ended at {end}",
                sc.source_path.display()
            ));
        }
    }
    out
}

/// Refuses a stall that starts at or after the run's end ([`crate::workload::deadline`]).
fn check_stalls(sc: &Scenario) -> Result<()> {
    let stalls = match &sc.workload {
        Workload::OpenLoop(ol) => &ol.stalls,
        Workload::Echo(e) => &e.stalls,
        Workload::Incast(_) => return Ok(()),
    };
    let seed = sc.sim_or_default().seed;
    let Some(end) = crate::workload::deadline(&sc.workload, seed) else {
        return Ok(());
    };
    if let Some(s) = stalls.iter().find(|s| s.at >= end) {
        let kind = sc.workload.kind();
        let why = match &sc.workload {
            Workload::Echo(_) => "start + time-limit",
            _ => "the last arrival + drain",
        };
        bail!(
            "{}: workload.{kind}.stall: the stall of host {} at {} starts after the run ends \
             at {end} ({why}): it would never happen; move it earlier or lengthen the run",
            where_is(sc, &["workload", kind, "stall"]),
            s.host,
            s.at
        );
    }
    Ok(())
}

/// Settings that are legal but probably spoil the run.
fn warnings(sc: &Scenario, cfg: &Config, sim: &SimConfig) -> Vec<String> {
    let mut w = Vec::new();
    let mut warn = |path: &[&str], text: String| {
        w.push(format!(
            "{}: {}: {text}",
            where_is(sc, path),
            path.join(".")
        ));
    };
    // A scenario meant for comparing stacks (a sweep's `stack` axis) carries the settings of
    // each, so the blocks of the stacks a run does not use are not flagged.
    if sc.stack.is_tcp() {
        tcp_warnings(sc, sim, &mut warn);
    }
    if sc.stack.is_tcp() {
        // xrdma's own settings and the RC QP's do not describe a TCP run: skip their checks.
    } else if let Workload::Incast(i) = &sc.workload {
        // What the senders may have in flight at once (each at most a max-window, and no more
        // than it sends) takes the receiver's link (B) `bytes·(1 + header/MTU)·8 / B` to
        // drain: a fragment at the back of that queue waits that long for its ACK.
        let per_sender = i.bytes_per_sender().min(cfg.max_window);
        let mut bytes = u128::from(per_sender) * u128::from(i.senders);
        if sim.pfc.is_none() {
            // A lossy switch drops what does not fit its buffer: no queue is longer.
            bytes = bytes.min(u128::from(sim.switch_buffer_bytes));
        }
        let wire = bytes * u128::from(sim.mtu + sim.header_bytes) / u128::from(sim.mtu.max(1));
        let drain_ps = wire * 8 * 1_000_000_000_000 / u128::from(sim.link_rate_bps.max(1));
        let drain = Span::from_ps(u64::try_from(drain_ps).unwrap_or(u64::MAX));
        let rto = sim.rc.ack_timeout();
        if sim.rc.local_ack_timeout != 0 && drain > rto {
            warn(
                &["rc", "local-ack-timeout"],
                format!(
                    "{rto} is shorter than the {drain} the receiver's link needs, at worst, to \
                     drain what the senders may have in flight ({} × up to max-window; ECN \
                     usually keeps queues shorter): if queues grow that long, ACKs come late, \
                     the NICs time out and send again packets that were not lost (spurious \
                     timeouts), and after rc.retry-cnt of them in a row a connection fails",
                    i.senders
                ),
            );
        }
        if drain > cfg.ack_timeout {
            warn(
                &["xrdma", "ack-timeout"],
                format!(
                    "{} is shorter than the {drain} the receiver's link needs to drain what \
                     the senders may have in flight ({} × up to max-window): fragments then \
                     wait past the ACK timeout and their connections fail",
                    cfg.ack_timeout, i.senders
                ),
            );
        }
    }
    if sc.stack.is_tcp() {
    } else if (sim.pfc.is_none() || !sim.faults.is_empty()) && sim.rc.local_ack_timeout == 0 {
        warn(
            &["rc", "local-ack-timeout"],
            "the fabric is lossy (no `pfc`, or injected faults), but 0 turns the NIC's local \
             ACK timeout off: a lost tail packet is never retransmitted, and only the \
             middleware's ack-timeout ends its connection"
                .to_string(),
        );
    } else if sim.pfc.is_none() || !sim.faults.is_empty() {
        let rto = sim.rc.ack_timeout();
        let budget = rto * (u64::from(sim.rc.retry_cnt) + 1);
        if cfg.ack_timeout < budget {
            warn(
                &["xrdma", "ack-timeout"],
                format!(
                    "the fabric is lossy (no `pfc`, or injected faults), but the middleware \
                     gives up after {} while the NIC may need (retry-cnt + 1) x \
                     local-ack-timeout = {} to recover a lost tail; raise ack-timeout or lower \
                     rc.local-ack-timeout",
                    cfg.ack_timeout, budget
                ),
            );
        }
    }
    if let Some(given) = sim.pfc.and_then(|p| p.headroom_bytes) {
        let needed = sim.pfc_headroom_needed();
        if given < needed {
            warn(
                &["sim", "pfc", "headroom"],
                format!(
                    "{given} B is below the {needed} B that can still arrive after XOFF \
                     (2 x BDP + 3 packets + the PAUSE frame): the fabric can drop, and a drop \
                     on this lossless fabric fails the run"
                ),
            );
        }
    }
    if sim.mtu < 256 {
        warn(
            &["sim", "mtu"],
            format!("{} B is below RoCE's smallest MTU (256 B)", sim.mtu),
        );
    }
    if sim.mtu < sim.header_bytes {
        warn(
            &["sim", "header-bytes"],
            format!(
                "{} B of headers per packet is more than the {} B MTU: every packet carries \
                 more header than payload, and T* no longer bounds the run",
                sim.header_bytes, sim.mtu
            ),
        );
    }
    if sim.dcqcn.is_some() && sim.ecn.is_none() {
        warn(
            &["sim", "dcqcn"],
            "DCQCN reacts only to CNPs, and without `ecn` no packet is marked".into(),
        );
    }
    if let Some(ecn) = sim.ecn {
        if ecn.kmax_bytes > sim.switch_buffer_bytes {
            warn(
                &["sim", "ecn", "kmax"],
                format!(
                    "Kmax {} B is above the {} B switch buffer: marking never reaches Pmax",
                    ecn.kmax_bytes, sim.switch_buffer_bytes
                ),
            );
        }
    }
    w
}

/// The warnings of a TCP run (`stack: tcp | dctcp`): TCP settings that spoil the run.
fn tcp_warnings(sc: &Scenario, sim: &SimConfig, warn: &mut impl FnMut(&[&str], String)) {
    if sc.stack == xrdma_scenario::Stack::Dctcp && sim.ecn.is_none() {
        warn(
            &["stack"],
            "DCTCP reacts to ECN marks, and without `sim.ecn` no segment is marked: the run is \
             plain TCP"
                .into(),
        );
    }
    let tcp = &sc.tcp;
    if tcp.mss > TCP_JUMBO_MSS {
        warn(
            &["tcp", "mss"],
            format!(
                "{} B is above the {TCP_JUMBO_MSS} B of a 9000-byte jumbo frame: no Ethernet \
                 carries such segments (TSO cuts them before the wire)",
                tcp.mss
            ),
        );
    }
    let host = &sim.host;
    if !host.is_ideal() && !host.charges_kernel_tcp() {
        warn(
            &["sim", "host"],
            format!(
                "the `{}` host model charges nothing for kernel TCP (every `tcp-*` cost is \
                 0): this TCP run's hosts pay only the application's costs, and its latency \
                 and CPU time are not comparable with xrdma's",
                host.name()
            ),
        );
    }
    if tcp.delayed_ack >= tcp.rto_min {
        warn(
            &["tcp", "rto-min"],
            format!(
                "{} is not above the {} delayed ACK: a segment whose ACK the peer delays may \
                 be retransmitted before the ACK comes (a spurious timeout)",
                tcp.rto_min, tcp.delayed_ack
            ),
        );
    }
}

/// The largest MSS of a 9000-byte jumbo frame: 9000 less 20 IPv4, 20 TCP and 12 timestamp
/// bytes.
const TCP_JUMBO_MSS: u32 = 8948;

/// Estimate of a simulated run's peak resident memory, bytes: what the run's buffers and
/// records touch, not what they reserve (the simulator's memory regions are mapped lazily,
/// so a receive slot or a landing buffer costs nothing until a frame lands in it).
///
/// - **the program**: [`BASE_BYTES`], and the payload block (the largest message plus 1 MiB),
///   which the run registers with every host's NIC in place: a message above `eager-limit`
///   is written from it and lands by reference, so neither a staging ring nor a landing
///   buffer holds its bytes;
/// - **per host**: [`BYTES_PER_HOST`] (the simulator's, the core's and the driver's state);
/// - **per connection**: what the sender's staging ring carries, eager messages and control
///   frames (at most [`Config::ring_bytes`], touched whole once a ring's worth is sent), and
///   the receive slots of the receiving end, one per message until every slot has had one
///   (`min(recv-depth, messages) ×` [`Config::recv_slot_bytes`]), both in whole pages. An
///   echo sends both ways: both ends count a ring and slots. Over kernel TCP (`stack: tcp`
///   or `dctcp`), each end's socket buffer instead: what the connection sends, up to
///   `tcp.snd-buf` and `tcp.rcv-buf`;
/// - **packets in flight**: [`BYTES_PER_PACKET`] a packet, as many as the senders may have in
///   flight (a max-window a connection, at most what it sends) or the switch buffer holds,
///   whichever is less: a queued packet carries no payload, which is read at delivery;
/// - **per-sender time series**: [`BYTES_PER_SAMPLE`] a sample of each sender, up to 1024
///   samples (an incast lasts about its bytes' time on the receiver's link; other workloads
///   count the cap);
/// - **per message**: [`BYTES_PER_MESSAGE`] (the records alive at the peak, after the run);
/// - **a capture**: up to `max-packets` frames a captured link.
///
/// Against the peak RSS measured by `/usr/bin/time -v` (release build, `ci/report-cost.sh`,
/// which fails past ±30 %): `scenarios/incast-256.yaml` and incasts of 300 to 4096 senders,
/// 8 senders' 2 M messages, one sender's 1 M open-loop messages.
pub fn memory_estimate(sc: &Scenario, cfg: &Config) -> u64 {
    const PAGE: u64 = 4096;
    let pages = |b: u64| b.div_ceil(PAGE).saturating_mul(PAGE);
    let largest = sc.workload.largest_message();
    let connections = u64::from(sc.workload.connections());
    let messages = sc.workload.expected_messages();
    let per_connection_messages = messages.div_ceil(connections.max(1));
    let slots = pages(
        u64::from(cfg.recv_depth)
            .min(per_connection_messages)
            .saturating_mul(cfg.recv_slot_bytes()),
    );
    let ends = if matches!(sc.workload, Workload::Echo(_)) {
        2
    } else {
        1
    };
    // Eager messages are staged whole; a larger one only as its control frames (one header
    // each way, within the bound below).
    let frame = largest.min(cfg.eager_limit) + xrdma::fragment::HEADER_LEN as u64;
    let staged = pages(
        cfg.ring_bytes()
            .min(per_connection_messages.saturating_mul(frame)),
    );
    // What one connection sends: an incast's list exactly, else at most its messages each
    // as large as the largest.
    let per_connection_bytes = match &sc.workload {
        Workload::Incast(i) => i.bytes_per_sender(),
        _ => per_connection_messages.saturating_mul(largest),
    };
    let per_connection = if sc.stack.is_tcp() {
        // Kernel TCP holds a message's bytes in the sender's socket buffer until ACKed and in
        // the receiver's until read: up to `snd-buf` and `rcv-buf` a connection, no more than
        // the connection sends; the simulated sockets keep real bytes.
        let sent = per_connection_bytes;
        sent.min(sc.tcp.snd_buf)
            .saturating_add(sent.min(sc.tcp.rcv_buf))
            .saturating_mul(ends)
    } else {
        staged.saturating_add(slots).saturating_mul(ends)
    };
    let records = messages.saturating_mul(BYTES_PER_MESSAGE);
    let section = sc.sim_or_default();
    let wire = u64::from(section.mtu) + u64::from(section.header_bytes);
    // What the senders may have in flight at once: each connection at most a max-window and
    // no more than it sends.
    let in_flight = per_connection_bytes
        .min(cfg.max_window)
        .saturating_mul(connections)
        .saturating_mul(ends);
    let packets = section
        .switch_buffer_bytes
        .min(in_flight)
        .div_ceil(wire.max(1))
        .saturating_mul(BYTES_PER_PACKET);
    let samples = match (&sc.workload, section.sample_interval) {
        (_, None) => 0,
        (Workload::Incast(i), Some(every)) => {
            let bits = u128::from(i.bytes_per_sender()) * u128::from(i.senders) * 8;
            let ps = bits * u128::from(wire) * 1_000_000_000_000
                / u128::from(section.mtu.max(1))
                / u128::from(section.link_rate_bps.max(1));
            u64::try_from(ps / u128::from(every.as_ps().max(1)) + 1).unwrap_or(u64::MAX)
        }
        (_, Some(_)) => 1024,
    }
    .min(1024);
    let series = samples
        .saturating_mul(u64::from(sc.workload.connections()))
        .saturating_mul(BYTES_PER_SAMPLE);
    // A capture keeps its frames until the run ends: up to `max-packets` a captured link,
    // each at most an MTU of payload, its RoCEv2 headers and ICRC (78 bytes with a RETH) and
    // its pcap record header (16 bytes).
    let capture = section.capture.as_ref().map_or(0, |c| {
        let frame = u64::from(section.mtu) + 78 + 16;
        (c.hosts.len() as u64)
            .saturating_mul(c.max_packets)
            .saturating_mul(frame)
    });
    BASE_BYTES
        .saturating_add(u64::from(sc.workload.hosts()).saturating_mul(BYTES_PER_HOST))
        .saturating_add(per_connection.saturating_mul(connections))
        .saturating_add(packets)
        .saturating_add(series)
        .saturating_add(records)
        .saturating_add(capture)
        .saturating_add(largest.saturating_add(1 << 20))
}

/// Resident bytes of one simulated host besides its buffers: the simulator's host (NIC, QPs,
/// MR table), the core's endpoint (MR pool books, QP cache, connection slab) and the driver's
/// and runner's per-host state. Fitted: the peak RSS of N:1 incasts of one 16 KiB message
/// grows by about 60 KiB a sender from 300 to 600 senders, of which about 17 KiB are the
/// sender's staging and receive pages and the rest this.
pub const BYTES_PER_HOST: u64 = 43 << 10;

/// Resident bytes of a packet in flight: its pooled record (80 bytes), its event and queue
/// entries.
pub const BYTES_PER_PACKET: u64 = 128;

/// Resident bytes of one sample of one sender's time series at the peak: the series' `u64`
/// and its text in `result.json` and the report page.
pub const BYTES_PER_SAMPLE: u64 = 24;

/// Resident memory of the program before any run-sized data: code, the plot font, the
/// figure bitmaps (`scenarios/incast-8.yaml` peaks at 12 MiB in all).
pub const BASE_BYTES: u64 = 9 << 20;

/// Bytes a message costs at a run's peak, which comes after the simulation, while the tally
/// builds the result's records ([`crate::workload::tally`]): the receiver's arrival, the
/// sender's record, the tally's hash entry (a key, a reference and a control byte, in a table
/// up to twice as large as the arrivals), and the result's record. Echo exchanges keep a
/// little more (the response), within the estimate's margin.
pub const BYTES_PER_MESSAGE: u64 = (std::mem::size_of::<crate::workload::Arrival>()
    + std::mem::size_of::<crate::workload::SentRecord>()
    + 2 * (std::mem::size_of::<((u32, u32), &crate::workload::Arrival)>() + 1)
    + std::mem::size_of::<xrdma_reports::MessageRecord>())
    as u64;

/// `MemAvailable` from `/proc/meminfo`, bytes; `None` where it cannot be read.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// `FILE:LINE:COLUMN` of the deepest written key of `path`, or `FILE` alone.
pub fn where_is(sc: &Scenario, path: &[&str]) -> String {
    if let Some(o) = sc.override_of(path) {
        return format!("{} (over {})", o.origin, sc.source_path.display());
    }
    let file = sc.source_path.display();
    let text = std::fs::read_to_string(&sc.source_path).unwrap_or_default();
    match xrdma_scenario::locate_key(&text, path) {
        Some((line, column, _)) => format!("{file}:{line}:{column}"),
        None => file.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_loop(count: u32) -> Scenario {
        let yaml = format!(
            "name: m\nworkload:\n  open-loop: {{ senders: 1, receiver: 0, rate: 1M/s, \
             count: {count}, size: 64B }}\n"
        );
        match xrdma_scenario::parse(&yaml, std::path::Path::new("m.yaml")) {
            Ok(sc) => sc,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn over_kernel_tcp_the_estimate_counts_both_socket_buffers() {
        let yaml = |stack: &str| {
            format!(
                "name: m\nworkload:\n  incast: {{ senders: 4, receiver: 0, messages: \
                 [{{ size: 1MiB, count: 1 }}] }}\n{stack}"
            )
        };
        let parse = |text: String| match xrdma_scenario::parse(&text, std::path::Path::new("m")) {
            Ok(sc) => sc,
            Err(e) => panic!("{e}"),
        };
        let cfg = Config::default();
        let (x, t) = (parse(yaml("")), parse(yaml("stack: tcp\n")));
        // Each connection's 1 MiB sits in the sender's and the receiver's socket buffer,
        // instead of one RTS frame's page of ring and one receive slot's pages.
        let grew = memory_estimate(&t, &cfg) - memory_estimate(&x, &cfg);
        assert_eq!(grew, 4 * (2 * (1 << 20) - 2 * 4096 - 8192));
    }

    #[test]
    fn the_estimate_grows_by_the_records_of_each_message() {
        let cfg = Config::default();
        let (n, m) = (open_loop(100_000), open_loop(400_000));
        // Both have every receive slot touched: only the records differ.
        let grew = memory_estimate(&m, &cfg) - memory_estimate(&n, &cfg);
        assert_eq!(grew, 300_000 * BYTES_PER_MESSAGE);
        assert!(
            (300..=500).contains(&BYTES_PER_MESSAGE),
            "{BYTES_PER_MESSAGE}"
        );
    }
}
