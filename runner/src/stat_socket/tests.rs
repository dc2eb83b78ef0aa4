//! The socket answers a client with what it was handed, replaces a stale socket file,
//! refuses a live one or a plain file, and goes away with its process.

use super::{StatSocket, StatSocketError};
use crate::watch::{LiveStat, Watch};
use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use xrdma::Time;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-statsock-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d.join("s.sock")
}

fn stat(at_ps: u64) -> LiveStat {
    LiveStat {
        pid: 7,
        backend: xrdma_reports::Backend::Sim,
        at_ps,
        endpoints: Vec::new(),
        device: None,
        placement: None,
        events: None,
    }
}

#[test]
fn a_client_gets_one_answer_per_connection() {
    let path = scratch("answer");
    let mut sock = StatSocket::bind(&path).expect("binds");
    // Nobody waiting: not due.
    assert!(!sock.due(Time::ZERO));
    let p = path.clone();
    let client = std::thread::spawn(move || {
        let mut s = UnixStream::connect(&p).expect("connects");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("reads");
        text
    });
    let mut rounds = 0u64;
    while sock.answered() == 0 {
        rounds += 1;
        assert!(rounds < 100_000_000, "never answered");
        if sock.due(Time::from_ps(rounds)) {
            sock.take(stat(rounds));
        }
    }
    let text = client.join().expect("client");
    assert!(text.ends_with('\n'), "{text}");
    let got: LiveStat = serde_json::from_str(&text).expect("a LiveStat");
    assert!(got.at_ps > 0);
    assert_eq!(got.pid, 7);
    assert_eq!(sock.failed(), 0);
    // Answered: not due again until another client comes.
    assert!(!sock.due(Time::MAX));
}

#[test]
fn a_stale_socket_is_replaced_and_a_live_one_refused() {
    let path = scratch("stale");
    // A socket file whose listener is gone.
    drop(UnixListener::bind(&path).expect("binds"));
    assert!(path.exists());
    let sock = StatSocket::bind(&path).expect("replaces the stale file");
    // While it lives, a second process cannot take the path.
    match StatSocket::bind(&path) {
        Err(StatSocketError::InUse(p)) => assert_eq!(p, path),
        other => panic!("expected InUse, got {other:?}"),
    }
    drop(sock);
    assert!(!path.exists(), "the socket file goes with the socket");
}

#[test]
fn a_plain_file_in_the_way_is_an_error_and_is_kept() {
    let path = scratch("file");
    std::fs::write(&path, "data").expect("writes");
    match StatSocket::bind(&path) {
        Err(e @ StatSocketError::NotASocket(_)) => {
            assert!(e.to_string().contains("is not a socket"), "{e}");
        }
        other => panic!("expected NotASocket, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), "data");
}

#[test]
fn a_missing_directory_is_an_io_error_naming_the_path() {
    let path = scratch("nodir")
        .with_file_name("no-such-dir")
        .join("s.sock");
    let e = StatSocket::bind(&path).expect_err("no directory");
    assert!(e.to_string().contains("no-such-dir"), "{e}");
    // And says why: the system's reason was dropped.
    assert!(e.to_string().contains("No such file or directory"), "{e}");
}

#[test]
fn an_empty_path_is_refused_not_bound_where_nobody_can_ask() {
    // Linux binds an empty path as an abstract socket no client can name: it was accepted.
    assert!(matches!(
        StatSocket::bind(std::path::Path::new("")),
        Err(StatSocketError::NoPath)
    ));
}

#[test]
fn answering_takes_at_most_its_share_of_the_wall_time() {
    use std::time::{Duration, Instant};
    let path = scratch("share");
    let mut sock = StatSocket::bind(&path).expect("binds");
    let ask = |p: PathBuf| {
        std::thread::spawn(move || {
            let mut s = UnixStream::connect(&p).expect("connects");
            let mut text = String::new();
            s.read_to_string(&mut text).expect("reads");
        })
    };
    let first = ask(path.clone());
    let t0 = Instant::now();
    while !sock.due(Time::ZERO) {
        assert!(t0.elapsed() < Duration::from_secs(10), "never due");
    }
    // A snapshot that costs 20 ms to build.
    std::thread::sleep(Duration::from_millis(20));
    sock.take(stat(1));
    first.join().expect("first client");
    let answered = Instant::now();
    // A second client at once is not answered at once: 20 ms of answering buys 180 ms of
    // run before the next.
    let second = ask(path.clone());
    std::thread::sleep(Duration::from_millis(30));
    assert!(!sock.due(Time::ZERO), "answered again within the budget");
    while !sock.due(Time::ZERO) {
        assert!(
            answered.elapsed() < Duration::from_secs(10),
            "never due again"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        answered.elapsed() >= Duration::from_millis(170),
        "{:?}",
        answered.elapsed()
    );
    sock.take(stat(2));
    second.join().expect("second client");
    assert_eq!(sock.answered(), 2);
}
