//! A worker's placement and its stat socket, on the simulator (the thread is real there too).

mod common;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use xrdma_app::{Bytes, Span};
use xrdma_runner::watch::LiveStat;

#[test]
fn a_pinned_worker_runs_where_it_was_pinned() {
    let seen = std::thread::spawn(|| {
        let (_server, mut client) = common::pair(1);
        let before = client.placement();
        let Some(cpu) = before.cpu else {
            return None; // no /proc/thread-self
        };
        let after = client.pin(&[cpu as usize]).expect("its own CPU is allowed");
        Some((before, after, client.pin(&[]).is_err()))
    })
    .join()
    .expect("the worker's thread");
    let Some((before, after, empty_refused)) = seen else {
        println!("SKIP worker placement: no /proc/thread-self");
        return;
    };
    // The simulator has no device: its node is unknown, so nothing is flagged.
    assert_eq!((before.device, before.far_node), (None, None));
    assert_eq!(after.cpus_allowed, after.cpu.map(|c| c.to_string()));
    assert!(empty_refused, "pinning to no CPU is an error");
}

#[test]
fn a_working_worker_answers_stat_with_its_endpoints_and_placement() {
    let path = std::env::temp_dir().join(format!("xrdma-app-stat-{}.sock", std::process::id()));
    let (mut server, mut client) = common::pair(2);
    server.serve(|_conn, msg: Bytes| Some(msg));
    client.stat_socket(&path).expect("a socket");
    let conn = client.connect(&server).expect("connects");
    let asker = {
        let path = path.clone();
        std::thread::spawn(move || {
            let mut s = UnixStream::connect(&path).expect("the worker listens");
            s.set_read_timeout(Some(Duration::from_secs(20)))
                .expect("a timeout");
            let mut text = String::new();
            s.read_to_string(&mut text).expect("an answer");
            text
        })
    };
    // Work (the answer comes from inside the waiting calls) until the client was answered.
    let start = Instant::now();
    while !asker.is_finished() && start.elapsed() < Duration::from_secs(20) {
        client
            .call(conn, &b"ping"[..], Span::from_ms(1))
            .expect("an echo");
    }
    let text = asker.join().expect("the asker");
    let stat: LiveStat = serde_json::from_str(&text).expect("a stat answer");
    assert!(stat
        .endpoints
        .iter()
        .any(|e| e.snapshot.connections.len() == 1));
    let p = stat.placement.expect("the worker's placement");
    assert!(p.tid.is_some() || !std::path::Path::new("/proc/thread-self").exists());
    assert_eq!(p.device, None, "the simulator has no device");
    drop((client, server));
    assert!(!path.exists(), "the socket file goes with the workers");
}
