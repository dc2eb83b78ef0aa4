//! The open-loop and echo workloads: parsing, defaults and errors with their locations.

use std::path::Path;
use xrdma::{Span, Time};
use xrdma_scenario::{parse, OpenLoopEnd, ResponseSize, SizeChoice, Stall, Workload};

const FILE: &str = "scenarios/x.yaml";

fn ok(text: &str) -> Workload {
    parse(text, Path::new(FILE)).expect("valid").workload
}

fn err(text: &str) -> String {
    match parse(text, Path::new(FILE)) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e.to_string(),
    }
}

const MS: u64 = 1_000_000_000;

#[test]
fn open_loop_with_one_size_and_one_stall() {
    let w = ok("name: x
workload:
  open-loop:
    senders: 2
    receiver: 0
    rate: 10k/s
    duration: 300ms
    size: 4KiB
    stall: { host: 0, at: 100ms, for: 100ms }
");
    let Workload::OpenLoop(o) = w else {
        panic!("{w:?}")
    };
    assert_eq!((o.senders, o.receiver, o.hosts()), (2, 0, 3));
    assert_eq!(o.rate_per_s, 10_000.0);
    assert_eq!(o.end, OpenLoopEnd::Duration(Span::from_ps(300 * MS)));
    assert_eq!(
        o.sizes.choices,
        vec![SizeChoice {
            size: 4096,
            weight: 1
        }]
    );
    assert_eq!(
        o.stalls,
        vec![Stall {
            host: 0,
            at: Time::from_ps(100 * MS),
            duration: Span::from_ps(100 * MS)
        }]
    );
    assert_eq!(o.stalls[0].end(), Time::from_ps(200 * MS));
    // Defaults: start 0, drain 1 s.
    assert_eq!(o.start, Time::from_ps(0));
    assert_eq!(o.drain, Span::from_ps(1000 * MS));
    // 10 000/s for 0.3 s = 3000 expected per sender.
    assert!((o.expected_per_sender() - 3000.0).abs() < 1e-9);
}

#[test]
fn open_loop_with_a_size_mix_a_count_and_a_stall_list() {
    let w = ok("name: x
workload:
  open-loop:
    senders: 1
    receiver: 1
    rate: 500/s
    count: 20
    sizes: [ { size: 4KiB, weight: 9 }, { size: 1MiB } ]
    stall: [ { host: 1, at: 1ms, for: 2ms }, { host: 0, at: 5ms, for: 1us } ]
");
    let Workload::OpenLoop(o) = w else {
        panic!("{w:?}")
    };
    assert_eq!(o.end, OpenLoopEnd::Count(20));
    assert_eq!(o.sizes.total_weight(), 10);
    assert_eq!(
        o.sizes.choices[1],
        SizeChoice {
            size: 1 << 20,
            weight: 1
        }
    );
    assert_eq!(o.stalls.len(), 2);
}

#[test]
fn echo_defaults_and_response_sizes() {
    let w = ok("name: x
workload:
  echo: { clients: 3, server: 1, requests: 10, request-size: 64B }
");
    let Workload::Echo(e) = w else {
        panic!("{w:?}")
    };
    assert_eq!(
        (e.clients, e.server, e.concurrency, e.requests),
        (3, 1, 1, 10)
    );
    assert_eq!(e.response_size, ResponseSize::Same);
    assert_eq!(e.response_for(64), 64);
    assert_eq!(e.client_hosts().collect::<Vec<_>>(), vec![0, 2, 3]);
    let w = ok("name: x
workload:
  echo: { clients: 1, server: 0, concurrency: 4, requests: 10, request-size: 64B, response-size: 1MiB }
");
    let Workload::Echo(e) = w else {
        panic!("{w:?}")
    };
    assert_eq!(e.response_size, ResponseSize::Fixed(1 << 20));
    assert_eq!(e.largest(), 1 << 20);
}

#[test]
fn errors_name_the_file_line_and_field() {
    assert_eq!(
        err("name: x
workload:
  open-loop: { senders: 1, receiver: 0, rate: 10000, duration: 1s, size: 4KiB }
"),
        "scenarios/x.yaml:3:47: workload.open-loop.rate: `10000` has no unit: write a message \
         rate such as `10000/s`, `10k/s`, `1M/s` or `10/ms` (e.g. `10000/s`)"
    );
    let e = err("name: x
workload:
  open-loop: { senders: 1, receiver: 0, rate: 1k/s, size: 4KiB }
");
    assert!(e.contains("no end given"), "{e}");
    let e = err("name: x
workload:
  open-loop: { senders: 1, receiver: 0, rate: 1k/s, count: 5, size: 4KiB, sizes: [ { size: 1B } ] }
");
    assert!(
        e.starts_with("scenarios/x.yaml:3:") && e.contains("either `size` or `sizes`"),
        "{e}"
    );
    let e = err("name: x
workload:
  open-loop: { senders: 1, receiver: 0, rate: 1k/s, count: 5, size: 4KiB, stall: { host: 2, at: 0s, for: 1ms } }
");
    assert!(
        e.contains("workload.open-loop.stall") && e.contains("host 2 does not exist"),
        "{e}"
    );
    let e = err("name: x
workload:
  open-loop: { senders: 1, receiver: 0, rate: 1k/s, count: 5, size: 4KiB, stall: { host: 0, at: 0s, fro: 1ms } }
");
    assert!(e.contains("unknown field `fro`"), "{e}");
    let e = err("name: x
workload:
  echo: { clients: 1, server: 0, requests: 0, request-size: 64B }
");
    assert!(
        e.contains("workload.echo.requests: must be at least 1"),
        "{e}"
    );
    let e = err("name: x
workload:
  echo: { clients: 1, server: 0, requests: 5, request-size: 64B, response-size: lots }
");
    assert!(e.contains("workload.echo.response-size"), "{e}");
    let e = err("name: x
workload:
  echo: { clients: 1, server: 0, requests: 5, request-size: 64B }
  incast: { senders: 1, receiver: 0, messages: [ { size: 1B } ] }
");
    assert!(e.contains("give one workload kind"), "{e}");
    let e = err("name: x
workload:
  open-loop: { senders: 1000, receiver: 0, rate: 1M/s, duration: 1s, size: 1B }
");
    assert!(e.contains("at most 20000000"), "{e}");
}
