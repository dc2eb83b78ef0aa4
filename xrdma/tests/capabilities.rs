//! The transport's declared capabilities in the core and the driver: the endpoint is told them
//! when the driver opens a connection, the driver asks for congestion notifications only from
//! a transport that reports them, and the endpoint says which congestion signals its windows
//! can react to.

mod util;

use util::logged::{Log, Logged};
use util::Pair;
use xrdma::driver;
use xrdma::*;

/// Host 0 and 1 of a pair connected through [`Logged`] transports declaring `declare[h]`
/// (`None`: the in-memory transport's own, which reports CNPs per QP).
fn connect(
    cfg: &Config,
    declare: [Option<Capabilities>; 2],
) -> (Pair, [Endpoint; 2], [ConnId; 2], [Log; 2]) {
    let mut pair = Pair::new();
    let mut eps = [
        Endpoint::new(cfg.clone()).unwrap(),
        Endpoint::new(cfg.clone()).unwrap(),
    ];
    let mut logs = declare.map(|d| Log {
        declare: d,
        ..Log::default()
    });
    let [l0, l1] = &mut logs;
    let [e0, e1] = &mut eps;
    let a = driver::open(
        e0,
        &mut Logged {
            inner: pair.side(0),
            log: l0,
        },
    )
    .unwrap();
    let b = driver::open(
        e1,
        &mut Logged {
            inner: pair.side(1),
            log: l1,
        },
    )
    .unwrap();
    let ca = driver::establish(
        e0,
        &mut Logged {
            inner: pair.side(0),
            log: l0,
        },
        a,
        &b.info,
        1,
    )
    .unwrap();
    let cb = driver::establish(
        e1,
        &mut Logged {
            inner: pair.side(1),
            log: l1,
        },
        b,
        &a.info,
        0,
    )
    .unwrap();
    (pair, eps, [ca, cb], logs)
}

#[test]
fn the_driver_tells_the_endpoint_and_skips_congestion_polls_a_transport_never_answers() {
    let cfg = Config {
        link_rate_bps: Some(25_000_000_000),
        ..Config::default()
    };
    let (mut pair, mut eps, conns, mut logs) = connect(&cfg, [Some(Capabilities::NONE), None]);
    assert_eq!(eps[0].capabilities(), Some(Capabilities::NONE));
    assert!(!eps[0].polls_congestion());
    assert_eq!(
        eps[0].window_signals(),
        WindowSignals {
            ecn: false,
            ecn_port: false,
            delay: true
        },
        "no CNPs reach the window over a transport without per-QP CNPs"
    );
    assert!(eps[1].polls_congestion());
    assert_eq!(
        eps[1].window_signals(),
        WindowSignals {
            ecn: true,
            ecn_port: false,
            delay: true
        }
    );
    // A notification queued for each host's QP 0: only host 1's driver asks for it.
    pair.notify_congestion(0, 0);
    pair.notify_congestion(1, 0);
    let mut app = util::Recorder::default();
    let mut scratch = driver::TurnScratch::default();
    for (h, log) in logs.iter_mut().enumerate() {
        let now = pair.now;
        let mut t = Logged {
            inner: pair.side(h),
            log,
        };
        driver::turn(now, &mut eps[h], &mut t, &mut app, &mut scratch);
    }
    assert_eq!(logs[0].congestion_polls, 0);
    assert!(logs[1].congestion_polls >= 1);
    assert_eq!(eps[0].stats(conns[0]).unwrap().ecn_echoes, 0);
    assert_eq!(eps[1].stats(conns[1]).unwrap().ecn_echoes, 1);
}

#[test]
fn an_endpoint_not_told_polls_and_counts_on_no_cnp() {
    let ep = Endpoint::new(Config::default()).unwrap();
    assert_eq!(ep.capabilities(), None);
    assert!(ep.polls_congestion(), "unknown: the driver asks");
    assert_eq!(ep.window_signals(), WindowSignals::default());
}

#[test]
fn a_rise_of_the_ports_cnp_count_is_an_ecn_echo_for_connections_with_bytes_in_flight() {
    let mut port = Capabilities::NONE;
    port.cnp_per_port = true;
    let cfg = Config::default();
    let (mut pair, mut eps, conns, mut logs) = connect(&cfg, [Some(port), None]);
    assert!(eps[0].polls_port_congestion() && !eps[0].polls_congestion());
    assert!(
        !eps[1].polls_port_congestion(),
        "per-QP CNPs are the finer signal"
    );
    assert_eq!(
        eps[0].window_signals(),
        WindowSignals {
            ecn: false,
            ecn_port: true,
            delay: false
        }
    );
    let mut app = util::Recorder::default();
    let mut scratch = driver::TurnScratch::default();
    let mut turn0 = |pair: &mut Pair, eps: &mut [Endpoint; 2], log: &mut Log| {
        let now = pair.now;
        let mut t = Logged {
            inner: pair.side(0),
            log,
        };
        driver::turn(now, &mut eps[0], &mut t, &mut app, &mut scratch);
    };
    let window = eps[0].stats(conns[0]).unwrap().window;
    // CNPs while nothing is in flight: no connection is reached.
    logs[0].port_cnps = 2;
    turn0(&mut pair, &mut eps, &mut logs[0]);
    assert!(logs[0].port_polls >= 1);
    assert_eq!(eps[0].stats(conns[0]).unwrap().ecn_echoes, 0);
    // An eager message in flight (posted, not yet ACKed: host 1 has had no turn), then a CNP.
    let now = pair.now;
    eps[0]
        .send(now, conns[0], bytes::Bytes::from(vec![7u8; 4096]))
        .unwrap();
    turn0(&mut pair, &mut eps, &mut logs[0]);
    assert!(eps[0].usage(conns[0]).unwrap().inflight_bytes > 0);
    logs[0].port_cnps = 5;
    turn0(&mut pair, &mut eps, &mut logs[0]);
    let s = eps[0].stats(conns[0]).unwrap();
    assert_eq!(s.ecn_echoes, 1, "one echo per rise, however many CNPs");
    assert_eq!((s.window, s.window_decreases), (window / 2, 1));
    assert_eq!(s.window_delay_decreases, 0);
    assert_eq!(s.smallest_window, window / 2);
    assert_eq!(logs[1].port_polls, 0);
}
