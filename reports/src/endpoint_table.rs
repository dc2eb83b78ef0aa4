//! The netstat-like text of a run's endpoints, as `xrdma stat` prints it and `report.html`
//! shows it: one line per endpoint (its QP cache and MR pool), then one line per connection
//! (its state, QP, traffic, window and what it holds).
//! Bytes are payload bytes, exact; `-` is a counter the backend cannot observe (or an RTT
//! before its first sample).

use crate::schema::HostEndpoint;
use crate::summary::format_us as us;

/// Columns right-aligned under their headers, two spaces apart.
fn grid(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let s: Vec<String> = cells
            .zip(&width)
            .map(|(c, &w)| format!("{c:>w$}"))
            .collect();
        s.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&mut headers.iter().copied());
    for r in rows {
        out += &line(&mut r.iter().map(String::as_str));
    }
    out
}

/// `v`, or `-` when unobserved.
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The endpoint table and the connection table of `endpoints` (a line saying so when there
/// is none).
pub fn render(endpoints: &[&HostEndpoint]) -> String {
    if endpoints.is_empty() {
        return "no endpoint has a connection\n".to_string();
    }
    let eps: Vec<Vec<String>> = endpoints
        .iter()
        .map(|e| {
            let s = &e.snapshot;
            let r = &s.resources;
            vec![
                e.host.to_string(),
                us(s.at_ps),
                r.open_connections.to_string(),
                r.qps_created.to_string(),
                r.qps_reused.to_string(),
                r.qps_cached.to_string(),
                r.mr_chunks.to_string(),
                r.registered_bytes.to_string(),
                s.mr_used_bytes.to_string(),
                r.landing_carved_bytes.to_string(),
                r.landing_in_use_bytes.to_string(),
                opt(r.staged_bytes),
                opt(r.sent_in_place_bytes),
                opt(r.copied_out_bytes),
                opt(r.lent_out_bytes),
                s.messages_accepted.to_string(),
            ]
        })
        .collect();
    let mut out = String::from("endpoints\n");
    out += &grid(
        &[
            "host",
            "at-us",
            "open",
            "qp-miss",
            "qp-hit",
            "qp-cached",
            "mrs",
            "registered-B",
            "mr-in-use-B",
            "landing-B",
            "landing-in-use-B",
            "staged-B",
            "in-place-B",
            "copied-out-B",
            "lent-out-B",
            "accepted",
        ],
        &eps,
    );
    let conns: Vec<Vec<String>> = endpoints
        .iter()
        .flat_map(|e| e.snapshot.connections.iter().map(move |c| (e.host, c)))
        .map(|(host, c)| {
            let s = &c.stats;
            vec![
                host.to_string(),
                c.conn.clone(),
                c.peer.to_string(),
                c.state.clone(),
                format!("{:#x}", c.qpn),
                opt(c.qp_state.as_deref()),
                s.send_bytes.to_string(),
                s.recv_bytes.to_string(),
                s.messages_sent.to_string(),
                s.messages_received.to_string(),
                s.fragments_sent.to_string(),
                s.fragments_received.to_string(),
                s.eager_messages.to_string(),
                s.rendezvous_messages.to_string(),
                s.batched_frames.to_string(),
                opt(c.retransmitted_packets),
                opt(c.rnr_retries),
                s.ecn_echoes.to_string(),
                s.window_decreases.to_string(),
                s.window.to_string(),
                opt((s.srtt_ps > 0).then(|| us(s.srtt_ps))),
                c.inflight.to_string(),
                c.inflight_bytes.to_string(),
                c.queued.to_string(),
            ]
        })
        .collect();
    out += "\nconnections\n";
    out += &grid(
        &[
            "host",
            "conn",
            "peer",
            "state",
            "qpn",
            "qp",
            "send-B",
            "recv-B",
            "msg-tx",
            "msg-rx",
            "frag-tx",
            "frag-rx",
            "eager",
            "rndv",
            "batched",
            "retx",
            "rnr",
            "ecn",
            "w-dec",
            "window-B",
            "srtt-us",
            "inflight",
            "inflight-B",
            "queued",
        ],
        &conns,
    );
    out
}
