//! `xrdma stat --prometheus`: the endpoints' counters in the Prometheus text exposition
//! format (version 0.0.4, <https://prometheus.io/docs/instrumenting/exposition_formats/>),
//! the format storage teams' monitoring already scrapes. Counters end in `_total`, sizes in
//! `_bytes`, times are in seconds (Prometheus's base units); a counter the backend cannot
//! observe has no sample at all (Prometheus has no null).

use xrdma::ConnSnapshot;
use xrdma_reports::HostEndpoint;

/// Whether a metric only grows (`counter`) or moves both ways (`gauge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// One per-connection metric: name, kind, help, and its value in a row (`None`: no sample).
type ConnMetric = (
    &'static str,
    Kind,
    &'static str,
    fn(&ConnSnapshot) -> Option<f64>,
);

/// Every per-connection metric, in output order.
const CONN_METRICS: &[ConnMetric] = &[
    (
        "send_bytes_total",
        Kind::Counter,
        "Payload bytes posted.",
        |c| Some(c.stats.send_bytes as f64),
    ),
    (
        "recv_bytes_total",
        Kind::Counter,
        "Payload bytes received in order.",
        |c| Some(c.stats.recv_bytes as f64),
    ),
    (
        "messages_sent_total",
        Kind::Counter,
        "Messages fully ACKed.",
        |c| Some(c.stats.messages_sent as f64),
    ),
    (
        "messages_received_total",
        Kind::Counter,
        "Messages delivered to the application.",
        |c| Some(c.stats.messages_received as f64),
    ),
    (
        "fragments_sent_total",
        Kind::Counter,
        "Fragments posted: eager SENDs and rendezvous WRITEs.",
        |c| Some(c.stats.fragments_sent as f64),
    ),
    (
        "fragments_received_total",
        Kind::Counter,
        "Fragments received.",
        |c| Some(c.stats.fragments_received as f64),
    ),
    (
        "eager_messages_total",
        Kind::Counter,
        "Messages sent eagerly.",
        |c| Some(c.stats.eager_messages as f64),
    ),
    (
        "rendezvous_messages_total",
        Kind::Counter,
        "Messages sent by rendezvous (RTS, CTS, WRITEs).",
        |c| Some(c.stats.rendezvous_messages as f64),
    ),
    (
        "batched_frames_total",
        Kind::Counter,
        "Eager frames that carried more than one message.",
        |c| Some(c.stats.batched_frames as f64),
    ),
    (
        "grants_sent_total",
        Kind::Counter,
        "Landing buffers granted to the peer.",
        |c| Some(c.stats.grants_sent as f64),
    ),
    ("rts_frames_total", Kind::Counter, "RTS frames sent.", |c| {
        Some(c.stats.rts_frames as f64)
    }),
    ("cts_frames_total", Kind::Counter, "CTS frames sent.", |c| {
        Some(c.stats.cts_frames as f64)
    }),
    ("acks_sent_total", Kind::Counter, "ACKs sent.", |c| {
        Some(c.stats.acks_sent as f64)
    }),
    (
        "acks_received_total",
        Kind::Counter,
        "ACKs received.",
        |c| Some(c.stats.acks_received as f64),
    ),
    (
        "acks_piggybacked_total",
        Kind::Counter,
        "ACKs carried in a frame header.",
        |c| Some(c.stats.acks_piggybacked as f64),
    ),
    (
        "ecn_echoes_total",
        Kind::Counter,
        "ECN echoes (CNPs) seen for the connection.",
        |c| Some(c.stats.ecn_echoes as f64),
    ),
    (
        "window_decreases_total",
        Kind::Counter,
        "Send window decreases applied.",
        |c| Some(c.stats.window_decreases as f64),
    ),
    (
        "window_delay_decreases_total",
        Kind::Counter,
        "Send window decreases on queueing delay.",
        |c| Some(c.stats.window_delay_decreases as f64),
    ),
    (
        "retransmitted_packets_total",
        Kind::Counter,
        "Request packets the QP sent again (absent when the backend cannot observe it).",
        |c| c.retransmitted_packets.map(|v| v as f64),
    ),
    (
        "rnr_retries_total",
        Kind::Counter,
        "RNR NAKs the QP waited out (absent when the backend cannot observe it).",
        |c| c.rnr_retries.map(|v| v as f64),
    ),
    ("window_bytes", Kind::Gauge, "Current send window.", |c| {
        Some(c.stats.window as f64)
    }),
    (
        "smallest_window_bytes",
        Kind::Gauge,
        "Smallest the send window has been.",
        |c| Some(c.stats.smallest_window as f64),
    ),
    (
        "srtt_seconds",
        Kind::Gauge,
        "Smoothed RTT (absent before the first sample).",
        |c| (c.stats.srtt_ps > 0).then_some(c.stats.srtt_ps as f64 * 1e-12),
    ),
    (
        "min_rtt_seconds",
        Kind::Gauge,
        "Smallest RTT seen (absent before the first sample).",
        |c| (c.stats.min_rtt_ps > 0).then_some(c.stats.min_rtt_ps as f64 * 1e-12),
    ),
    (
        "inflight_frames",
        Kind::Gauge,
        "Frames and fragments posted and not yet ACKed.",
        |c| Some(c.inflight as f64),
    ),
    (
        "inflight_bytes",
        Kind::Gauge,
        "Payload bytes of those frames and fragments.",
        |c| Some(c.inflight_bytes as f64),
    ),
    (
        "queued_messages",
        Kind::Gauge,
        "Messages queued, not yet wholly posted.",
        |c| Some(c.queued as f64),
    ),
    (
        "landings",
        Kind::Gauge,
        "Landing buffers granted and not yet filled.",
        |c| Some(c.landings as f64),
    ),
    (
        "send_wrs_outstanding",
        Kind::Gauge,
        "Send WRs posted whose completion has not been seen.",
        |c| Some(f64::from(c.send_wrs_outstanding)),
    ),
];

/// One per-endpoint metric.
type EndpointMetric = (&'static str, Kind, &'static str, fn(&HostEndpoint) -> f64);

/// Every per-endpoint metric, in output order.
const ENDPOINT_METRICS: &[EndpointMetric] = &[
    (
        "open_connections",
        Kind::Gauge,
        "Connections established, draining or closing.",
        |e| e.snapshot.resources.open_connections as f64,
    ),
    (
        "qps_created_total",
        Kind::Counter,
        "QPs created (QP cache misses).",
        |e| e.snapshot.resources.qps_created as f64,
    ),
    (
        "qps_reused_total",
        Kind::Counter,
        "Connections whose QP came from the QP cache (hits).",
        |e| e.snapshot.resources.qps_reused as f64,
    ),
    (
        "qps_cached",
        Kind::Gauge,
        "QPs waiting in the QP cache.",
        |e| e.snapshot.resources.qps_cached as f64,
    ),
    ("mr_chunks", Kind::Gauge, "MRs registered.", |e| {
        e.snapshot.resources.mr_chunks as f64
    }),
    (
        "registered_bytes",
        Kind::Gauge,
        "Bytes registered in them.",
        |e| e.snapshot.resources.registered_bytes as f64,
    ),
    (
        "mr_used_bytes",
        Kind::Gauge,
        "Bytes of the MR pool in use.",
        |e| e.snapshot.mr_used_bytes as f64,
    ),
    (
        "landing_carved_bytes",
        Kind::Gauge,
        "Landing buffer bytes carved from the MR pool.",
        |e| e.snapshot.resources.landing_carved_bytes as f64,
    ),
    (
        "landing_in_use_bytes",
        Kind::Gauge,
        "Landing buffer bytes granted and not yet freed.",
        |e| e.snapshot.resources.landing_in_use_bytes as f64,
    ),
    (
        "messages_accepted_total",
        Kind::Counter,
        "Messages the application handed to send.",
        |e| e.snapshot.messages_accepted as f64,
    ),
];

/// A label value escaped as the format asks (backslash, double quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The exposition text of `endpoints`: each metric's `# HELP` and `# TYPE` once, then one
/// sample per endpoint (label `host`) or per connection (labels `host`, `conn`, `peer`,
/// `qpn`). A connection's state and its QP's state, which change over its life, are labels of
/// one `xrdma_conn_info` sample of value 1 (the exposition convention for states, so a state
/// change does not start new series of every counter).
pub fn render(endpoints: &[&HostEndpoint]) -> String {
    let mut out = String::new();
    let header = |out: &mut String, name: &str, kind: Kind, help: &str| {
        out.push_str(&format!(
            "# HELP xrdma_{name} {help}\n# TYPE xrdma_{name} {}\n",
            kind.name()
        ));
    };
    let conn_labels = |host: u32, c: &ConnSnapshot| {
        format!(
            "host=\"{host}\",conn=\"{}\",peer=\"{}\",qpn=\"{:#x}\"",
            escape(&c.conn),
            c.peer,
            c.qpn
        )
    };
    for (name, kind, help, value) in ENDPOINT_METRICS {
        header(&mut out, name, *kind, help);
        for e in endpoints {
            out.push_str(&format!(
                "xrdma_{name}{{host=\"{}\"}} {}\n",
                e.host,
                value(e)
            ));
        }
    }
    header(
        &mut out,
        "conn_info",
        Kind::Gauge,
        "A connection's state and its QP's state (qp_state absent where the backend cannot tell).",
    );
    for e in endpoints {
        for c in &e.snapshot.connections {
            let qp = c
                .qp_state
                .as_deref()
                .map(|q| format!(",qp_state=\"{}\"", escape(q)))
                .unwrap_or_default();
            out.push_str(&format!(
                "xrdma_conn_info{{{},state=\"{}\"{qp}}} 1\n",
                conn_labels(e.host, c),
                escape(&c.state)
            ));
        }
    }
    for (name, kind, help, value) in CONN_METRICS {
        let name = format!("conn_{name}");
        header(&mut out, &name, *kind, help);
        for e in endpoints {
            for c in &e.snapshot.connections {
                if let Some(v) = value(c) {
                    out.push_str(&format!("xrdma_{name}{{{}}} {v}\n", conn_labels(e.host, c)));
                }
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
