//! Loading the shipped scenarios, defaults, and located error messages.

use std::path::PathBuf;
use xrdma::{Config, Span, Time};
use xrdma_scenario::{load, MessageSpec, ScenarioError, SimSection};
use xrdma_sim::{DcqcnConfig, EcnConfig, PfcConfig, Topology};

mod common;
use common::*;

#[test]
fn every_shipped_scenario_loads() {
    let dirs = [scenario_dir(), scenario_dir().join("faults")];
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "found {files:?}");
    for f in &files {
        let s = load(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.source_path, *f);
        // The file name is the scenario name.
        assert_eq!(
            Some(s.name.as_str()),
            f.file_stem().and_then(|n| n.to_str())
        );
    }
}

#[test]
fn incast_256_is_as_specified() {
    let s = load(&scenario_dir().join("incast-256.yaml")).unwrap();
    assert_eq!(s.name, "incast-256");
    let i = incast(&s);
    assert_eq!((i.senders, i.receiver, i.start), (256, 0, Time::ZERO));
    // 4 x 64 KiB then 1 x 1 MiB.
    assert_eq!(
        i.messages,
        vec![
            MessageSpec {
                size: 65_536,
                count: 4
            },
            MessageSpec {
                size: 1_048_576,
                count: 1
            }
        ]
    );
    // Hosts 0..=256: 257 hosts, senders 1..=256.
    assert_eq!(i.hosts(), 257);
    assert_eq!(s.workload.hosts(), 257);
    assert_eq!(
        i.sender_hosts().collect::<Vec<_>>(),
        (1..=256).collect::<Vec<u32>>()
    );
    // 4 * 65536 + 1048576 = 1310720 bytes and 5 messages per sender.
    assert_eq!(i.bytes_per_sender(), 1_310_720);
    assert_eq!(i.messages_per_sender(), 5);
    assert_eq!(s.xrdma, Config::default());
    let sim = s.sim.clone().unwrap();
    assert_eq!(
        sim,
        SimSection {
            seed: 1,
            link_rate_bps: 100_000_000_000,
            link_delay: Span::from_ps(1_000_000),
            mtu: 1024,
            header_bytes: 82,
            switch_buffer_bytes: 32 * 1024 * 1024,
            // 400KB = 400 * 1024 = 409600; 1600KB = 1638400 (KB is 1024 bytes here).
            ecn: Some(EcnConfig {
                kmin_bytes: 409_600,
                kmax_bytes: 1_638_400,
                pmax: 0.2
            }),
            pfc: Some(PfcConfig::default()),
            cnp_interval: Span::from_ps(50_000_000),
            ..SimSection::default()
        }
    );
    assert_eq!(s.verbs, None);

    // incast-8 is the same scenario with 8 senders.
    let s8 = load(&scenario_dir().join("incast-8.yaml")).unwrap();
    assert_eq!(incast(&s8).senders, 8);
    assert_eq!(incast(&s8).messages, i.messages);
    assert_eq!(s8.xrdma, s.xrdma);
    assert_eq!(s8.sim, s.sim);
}

#[test]
fn defaults_are_filled_in() {
    let s = ok("name: d\nworkload:\n  incast:\n    senders: 3\n    receiver: 2\n    messages:\n      - size: 100\n");
    let i = incast(&s);
    assert_eq!(i.start, Time::ZERO);
    // `count` defaults to 1; a bare number is bytes.
    assert_eq!(
        i.messages,
        vec![MessageSpec {
            size: 100,
            count: 1
        }]
    );
    assert_eq!(i.sender_hosts().collect::<Vec<_>>(), vec![0, 1, 3]);
    // xrdma defaults: 4 KiB eager limit, 64 KiB fragments and initial window, 4 KiB..256 KiB
    // window, beta 0.5, alpha 1/8, target delay and flow scaling range 10 us = 1e7 ps, ACK timeout 1 s = 1e12 ps.
    assert_eq!(
        s.xrdma,
        Config {
            fragment_size: 65_536,
            eager_limit: 4_096,
            landing_budget: 1 << 30,
            initial_window: 65_536,
            min_window: 4_096,
            max_window: 262_144,
            beta: 0.5,
            alpha: 0.125,
            target_delay: Span::from_ps(10_000_000),
            flow_scaling_range: Span::from_ps(10_000_000),
            ack_timeout: Span::from_ps(1_000_000_000_000),
            adaptive_window: true,
            deliver_fragments: false,
            recv_depth: 256,
            receive_credits: true,
            ..Config::default()
        }
    );
    assert_eq!(s.sim, None);
    assert_eq!(s.description, None);
    assert_eq!(s.sim_or_default(), SimSection::default());

    // An empty `sim: {}` block is all defaults: 100 Gbps, 1 us, 1024 B MTU, 82 B overhead,
    // 32 MiB buffer, no ECN, no PFC, seed 1, CNP interval 50 us.
    let s = ok(&with("sim: {}\n"));
    assert_eq!(
        s.sim,
        Some(SimSection {
            seed: 1,
            link_rate_bps: 100_000_000_000,
            link_delay: Span::from_ps(1_000_000),
            mtu: 1024,
            header_bytes: 82,
            switch_buffer_bytes: 33_554_432,
            ecn: None,
            pfc: None,
            cnp_interval: Span::from_ps(50_000_000),
            dcqcn: None,
            topology: Topology::Star,
            // Sampling on at 10 us = 1e7 ps.
            sample_interval: Some(Span::from_ps(10_000_000)),
            faults: Default::default(),
            host_faults: Default::default(),
            // The ideal host: every cost zero.
            host: xrdma_sim::HostModel::IDEAL,
            capture: None,
        })
    );
    // Partly given xrdma block: the rest keeps its defaults.
    let s = ok(&with("xrdma:\n  beta: 0.8\n  max-window: 2MiB\n"));
    assert_eq!(s.xrdma.beta, 0.8);
    assert_eq!(s.xrdma.max_window, 2_097_152);
    assert_eq!(s.xrdma.fragment_size, 65_536);
    // An empty xrdma block (null) is all defaults too.
    assert_eq!(ok(&with("xrdma:\n")).xrdma, Config::default());
}

#[test]
fn sample_interval_takes_a_span_or_off() {
    let interval = |extra: &str| ok(&with(extra)).sim_or_default().sample_interval;
    // Absent: the 10 us default; 2.5us = 2_500_000 ps; `off` turns sampling off.
    assert_eq!(interval(""), Some(Span::from_ps(10_000_000)));
    assert_eq!(
        interval("sim:\n  sample-interval: 2.5us\n"),
        Some(Span::from_ps(2_500_000))
    );
    assert_eq!(interval("sim:\n  sample-interval: off\n"), None);
    for short in ["0us", "1ps", "999ns"] {
        let e = err(&with(&format!("sim:\n  sample-interval: {short}\n")));
        assert!(
            e.contains("sample-interval") && e.contains("is below 1.000 us"),
            "{e}"
        );
    }
    assert_eq!(
        interval("sim:\n  sample-interval: 1us\n"),
        Some(Span::from_ps(1_000_000))
    );
    let e = err(&with("sim:\n  sample-interval: fast\n"));
    assert!(e.contains("sample-interval"), "{e}");
}

#[test]
fn ecn_defaults_scale_with_link_rate() {
    // Kmin = 100 KiB * rate / 25 Gbps, Kmax = 400 KiB * rate / 25 Gbps, Pmax 0.2.
    // 25 Gbps: 102400 / 409600. 40 Gbps: 102400 * 1.6 = 163840 / 655360.
    let s = ok(&with("sim:\n  link-rate: 25Gbps\n  ecn: {}\n"));
    assert_eq!(
        s.sim.unwrap().ecn,
        Some(EcnConfig {
            kmin_bytes: 102_400,
            kmax_bytes: 409_600,
            pmax: 0.2
        })
    );
    let s = ok(&with("sim:\n  link-rate: 40Gbps\n  ecn: { pmax: 0.5 }\n"));
    assert_eq!(
        s.sim.unwrap().ecn,
        Some(EcnConfig {
            kmin_bytes: 163_840,
            kmax_bytes: 655_360,
            pmax: 0.5
        })
    );
    // 100 Gbps (the default rate): 409600 / 1638400.
    assert_eq!(
        EcnConfig::default_for_rate(100_000_000_000),
        EcnConfig {
            kmin_bytes: 409_600,
            kmax_bytes: 1_638_400,
            pmax: 0.2
        }
    );
}

#[test]
fn pfc_absent_empty_and_given() {
    assert_eq!(ok(&with("sim: { seed: 7 }\n")).sim.unwrap().pfc, None);
    // `pfc:` with no value is YAML null: off, like an absent block.
    assert_eq!(ok(&with("sim:\n  pfc:\n")).sim.unwrap().pfc, None);
    assert_eq!(
        ok(&with("sim: { pfc: {} }\n")).sim.unwrap().pfc,
        Some(PfcConfig::default())
    );
    let s = ok(&with(
        "sim:\n  pfc: { xoff: 100KiB, xon: 90KiB, headroom: 30KiB }\n",
    ));
    assert_eq!(
        s.sim.unwrap().pfc,
        Some(PfcConfig {
            xoff_bytes: Some(102_400),
            xon_bytes: Some(92_160),
            headroom_bytes: Some(30_720),
        })
    );
}

#[test]
fn verbs_block_is_read_and_checked() {
    let s = ok(&with("verbs:\n  device: rxe0\n  gid-index: 1\n"));
    let v = s.verbs.unwrap();
    assert_eq!(v.device.as_deref(), Some("rxe0"));
    assert_eq!(v.gid_index, Some(1));
    assert_eq!(v.port, None);
    assert_eq!(v.run_timeout, Span::from_ms(60_000));
    let e = err(&with("verbs:\n  device: rxe0\n  gid: 1\n"));
    assert!(
        e.contains("scenarios/x.yaml:6:3: verbs: unknown field `gid`"),
        "{e}"
    );
    let e = err(&with("verbs:\n  port: 0\n"));
    assert!(e.contains("verbs.port: ports are numbered from 1"), "{e}");
}

#[test]
fn trace_is_off_unless_the_scenario_asks() {
    let plain =
        xrdma_scenario::parse(&with(""), std::path::Path::new("scenarios/x.yaml")).expect("parses");
    assert!(!plain.trace);
    let traced = xrdma_scenario::parse(
        &with("trace: true\n"),
        std::path::Path::new("scenarios/x.yaml"),
    )
    .expect("parses");
    assert!(traced.trace);
    let e = err(&with("trace: often\n"));
    assert!(e.starts_with("scenarios/x.yaml:4:"), "{e}");
    assert!(e.contains("trace"), "{e}");
}

#[test]
fn misspelled_key_names_file_line_field_and_expected_keys() {
    // `sendrs` is on line 5, indented by 4 spaces: column 5.
    let text = "# a comment line\nname: x\nworkload:\n  incast:\n    sendrs: 256\n    receiver: 0\n    messages: [ { size: 1 } ]\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:5:5: workload.incast: unknown field `sendrs`, expected one of \
         `senders`, `receiver`, `start`, `messages`"
    );
    // A misspelled top-level key (line 4, column 1).
    assert_eq!(
        err(&with("simm: {}\n")),
        "scenarios/x.yaml:4:1: unknown field `simm`, expected one of `name`, `description`, \
         `workload`, `xrdma`, `rc`, `sim`, `verbs`, `stack`, `tcp`, `heartbeat`, `trace`"
    );
    // Inside a flow mapping: `kmn` starts at column 10 of line 5.
    assert_eq!(
        err(&with("sim:\n  ecn: { kmn: 1KiB }\n")),
        "scenarios/x.yaml:5:10: sim.ecn: unknown field `kmn`, expected one of `kmin`, `kmax`, \
         `pmax`"
    );
    // An unknown workload kind lists the known ones.
    assert_eq!(
        err("name: x\nworkload:\n  fan-in: {}\n"),
        "scenarios/x.yaml:3:3: workload: unknown field `fan-in`, expected one of `incast`, `open-loop`, `echo`"
    );
}

#[test]
fn bad_unit_is_located_at_the_value() {
    // `100Gb/s` starts at column 14 of line 5 (after "  link-rate: ").
    assert_eq!(
        err(&with("sim:\n  link-rate: 100Gb/s\n")),
        "scenarios/x.yaml:5:14: sim.link-rate: `100Gb/s` has unknown unit `Gb/s`: a rate takes \
         one of `bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps` (powers of 1000)"
    );
    assert_eq!(
        err(&with("sim:\n  link-delay: 1\n")),
        "scenarios/x.yaml:5:15: sim.link-delay: `1` has no unit: a time needs one of `ps`, \
         `ns`, `us` (or `µs`), `ms`, `s`, such as `10us`"
    );
    assert_eq!(
        err(&with("xrdma:\n  max-window: 1.5B\n")),
        "scenarios/x.yaml:5:15: xrdma.max-window: `1.5B` is not a whole number of bytes"
    );
    assert_eq!(
        err(&with("sim:\n  switch-buffer: 99999999TiB\n")),
        "scenarios/x.yaml:5:18: sim.switch-buffer: `99999999TiB` is too large: a size must be at \
         most 18446744073709551615 bytes"
    );
}

#[test]
fn negative_and_zero_sizes() {
    let text = "name: x\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages:\n      - { size: 64KiB, count: 4 }\n      - { size: -5KiB, count: 1 }\n";
    // `-5KiB` is on line 8 at column 17.
    assert_eq!(
        err(text),
        "scenarios/x.yaml:8:17: workload.incast.messages[1].size: `-5KiB` is negative: a size \
         must be zero or more, such as `64KiB`"
    );
    let text = "name: x\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages:\n      - size: 0\n        count: 3\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:7:9: workload.incast.messages[0].size: must be at least 1 byte"
    );
    assert_eq!(
        err(&with("sim:\n  mtu: 0\n")),
        "scenarios/x.yaml:5:3: sim.mtu: must be at least 1 byte"
    );
    // 1 KiB buffer < 1024 + 82 = 1106 bytes for one packet.
    assert_eq!(
        err(&with("sim:\n  switch-buffer: 1KiB\n")),
        "scenarios/x.yaml:5:3: sim.switch-buffer: 1024 bytes cannot hold one packet of mtu + \
         header-bytes = 1106 bytes"
    );
    assert_eq!(
        err(&with("sim:\n  link-rate: 0bps\n")),
        "scenarios/x.yaml:5:3: sim.link-rate: must be above 0 bps"
    );
}

#[test]
fn missing_receiver_points_at_the_enclosing_mapping() {
    // The incast mapping starts at line 4, column 5 (its first key).
    let text = "name: x\nworkload:\n  incast:\n    senders: 2\n    messages: [ { size: 1 } ]\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:4:5: workload.incast: missing field `receiver`"
    );
    assert_eq!(
        err("name: x\n"),
        "scenarios/x.yaml:1:1: missing field `workload`"
    );
    assert_eq!(
        err("name: x\nworkload: {}\n"),
        "scenarios/x.yaml:2:11: workload: no workload kind given: expected one of `incast`, `open-loop`, `echo`"
    );
}

#[test]
fn semantic_checks_are_located_at_their_key() {
    assert_eq!(
        err(&with("xrdma:\n  alpha: 0.25\n  beta: 0.9\n")),
        "scenarios/x.yaml:6:3: xrdma.beta: 0.9 is outside [0.5, 0.8]"
    );
    assert_eq!(
        err(&with("xrdma: { beta: 0.49 }\n")),
        "scenarios/x.yaml:4:10: xrdma.beta: 0.49 is outside [0.5, 0.8]"
    );
    assert_eq!(
        err(&with("xrdma:\n  alpha: 0\n")),
        "scenarios/x.yaml:5:3: xrdma.alpha: 0 is outside (0, 1]"
    );
    // receiver 3 with 2 senders: hosts are 0..=2.
    let text = "name: x\nworkload:\n  incast:\n    senders: 2\n    receiver: 3\n    messages: [ { size: 1 } ]\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:5:5: workload.incast.receiver: host 3 does not exist: with 2 senders \
         the hosts are 0..=2"
    );
    assert_eq!(
        err("name: x\nworkload:\n  incast: { senders: 0, receiver: 0, messages: [ { size: 1 } ] }\n"),
        "scenarios/x.yaml:3:13: workload.incast.senders: must be at least 1"
    );
    assert_eq!(
        err("name: x\nworkload:\n  incast: { senders: 1, receiver: 0, messages: [] }\n"),
        "scenarios/x.yaml:3:38: workload.incast.messages: the list is empty: give at least one \
         `{ size: ..., count: ... }`"
    );
    // initial-window 2 KiB is below the default min-window 4 KiB: blamed on the key written.
    assert_eq!(
        err(&with("xrdma:\n  initial-window: 2KiB\n")),
        "scenarios/x.yaml:5:3: xrdma.initial-window: initial-window (2048 bytes) is below \
         min-window (4096 bytes): need min-window ≤ initial-window ≤ max-window"
    );
    assert_eq!(
        err(&with("xrdma:\n  max-window: 32KiB\n")),
        "scenarios/x.yaml:5:3: xrdma.max-window: initial-window (65536 bytes) is above \
         max-window (32768 bytes): need min-window ≤ initial-window ≤ max-window"
    );
    assert_eq!(
        err(&with("xrdma:\n  eager-limit: 128KiB\n")),
        "scenarios/x.yaml:5:3: xrdma.eager-limit: 131072 bytes is above the largest receive \
         buffer of 64 KiB (65536 bytes)"
    );
    assert_eq!(
        err(&with("xrdma:\n  fragment-size: 512B\n")),
        "scenarios/x.yaml:5:3: xrdma.fragment-size: 512 bytes is below the minimum of 1 KiB \
         (1024 bytes)"
    );
    // Above the range, the scenario's range is named too, not the core's 1 B floor.
    assert_eq!(
        err(&with("xrdma:\n  fragment-size: 4GiB\n")),
        "scenarios/x.yaml:5:3: xrdma.fragment-size: 4294967296 bytes is above the maximum of \
         1 GiB (1073741824 bytes)"
    );
    assert_eq!(
        err(&with("sim:\n  ecn: { kmin: 2MB, kmax: 1MB, pmax: 0.2 }\n")),
        "scenarios/x.yaml:5:10: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
    // Kmin 2 MiB above the default Kmax at 100 Gbps (1600 KiB = 1638400 bytes).
    assert_eq!(
        err(&with("sim:\n  ecn:\n    kmin: 2MB\n")),
        "scenarios/x.yaml:5:3: sim.ecn: Kmin = 2097152 bytes is above Kmax (default for the \
         link rate) = 1638400 bytes: need kmin ≤ kmax"
    );
    assert_eq!(
        err(&with("sim:\n  ecn:\n    kmin: 1KiB\n    pmax: 1.5\n")),
        "scenarios/x.yaml:7:5: sim.ecn.pmax: 1.5 is outside (0, 1]"
    );
    assert_eq!(
        err(&with("sim:\n  pfc: { xoff: 10KiB, xon: 20KiB }\n")),
        "scenarios/x.yaml:5:23: sim.pfc.xon: XON (20480 bytes) is above XOFF (10240 bytes): \
         need xon ≤ xoff"
    );
    assert_eq!(
        err("name: \"\"\nworkload: { incast: { senders: 1, receiver: 0, messages: [ { size: 1 } ] } }\n"),
        "scenarios/x.yaml:1:1: name: must not be empty"
    );
}

#[test]
fn yaml_syntax_and_empty_files() {
    assert_eq!(
        err("name: x\n  bad: indent\n"),
        "scenarios/x.yaml:2:6: mapping values are not allowed in this context"
    );
    assert_eq!(
        err("# only a comment\n\n"),
        "scenarios/x.yaml:1:1: the file is empty: expected a scenario mapping with at least \
         `name` and `workload`"
    );
    let e = err("- a\n- b\n");
    assert!(
        e.starts_with("scenarios/x.yaml:1:1: invalid type: sequence"),
        "{e}"
    );
}

#[test]
fn load_reports_the_path() {
    let dir = std::env::temp_dir().join(format!("xrdma-scenario-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(&file, with("xrdma:\n  beta: 0.9\n")).unwrap();
    let e = load(&file).unwrap_err();
    let d = e.diagnostic().unwrap();
    assert_eq!((d.line, d.column), (Some(5), Some(3)));
    assert_eq!(d.field.as_deref(), Some("xrdma.beta"));
    assert_eq!(
        e.to_string(),
        format!(
            "{}:5:3: xrdma.beta: 0.9 is outside [0.5, 0.8]",
            file.display()
        )
    );

    let missing = dir.join("missing.yaml");
    let e = load(&missing).unwrap_err();
    assert!(matches!(e, ScenarioError::Read { .. }));
    // The OS reason is the error's source (shown once by error-chain printers), not repeated
    // in its own message.
    assert!(std::error::Error::source(&e).is_some());
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read the scenario", missing.display())),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn locate_key_finds_block_and_flow_keys_and_falls_back_to_parents() {
    let text = "# comment\nname: t\nsim:\n  mtu: 1KiB\n  pfc: { xoff: 10KiB, headroom: 20MiB }\n  ecn:\n    kmin: 1KB\n";
    assert_eq!(
        xrdma_scenario::locate_key(text, &["sim", "mtu"]),
        Some((4, 3, 2))
    );
    assert_eq!(
        xrdma_scenario::locate_key(text, &["sim", "pfc", "headroom"]),
        Some((5, 23, 3))
    );
    assert_eq!(
        xrdma_scenario::locate_key(text, &["sim", "ecn", "kmin"]),
        Some((7, 5, 3))
    );
    // `xon` is not written: the nearest written parent is `pfc`.
    assert_eq!(
        xrdma_scenario::locate_key(text, &["sim", "pfc", "xon"]),
        Some((5, 3, 2))
    );
    assert_eq!(xrdma_scenario::locate_key(text, &["verbs"]), None);
}

#[test]
fn dcqcn_block_and_ib_codes_are_read() {
    let s = ok(&with(
        "sim:\n  dcqcn: { g: 0.0625, min-rate: 2Gbps, rate-ai: 40Mbps, byte-counter: 1MiB }\nrc:\n  min-rnr-timer: 12\n  local-ack-timeout: 14\n",
    ));
    assert_eq!(
        (s.rc.min_rnr_timer, s.rc.local_ack_timeout, s.rc.retry_cnt),
        (12, 14, 7)
    );
    assert_eq!(
        s.rc_params(),
        xrdma::RcParams {
            min_rnr_timer: 12,
            local_ack_timeout: 14,
            ..xrdma::RcParams::default()
        }
    );
    let sim = s.sim.unwrap();
    let d = sim.dcqcn.unwrap();
    // The keys given; the rest keep the simulator's defaults.
    assert_eq!(
        d,
        DcqcnConfig {
            g: 0.0625,
            min_rate_bps: 2_000_000_000,
            rate_ai_bps: Some(40_000_000),
            byte_counter_bytes: 1_048_576,
            ..DcqcnConfig::default()
        }
    );
    assert_eq!(d.rate_hai_bps, None);
    // `dcqcn: {}` turns it on with every default.
    assert_eq!(
        ok(&with("sim:\n  dcqcn: {}\n")).sim.unwrap().dcqcn,
        Some(DcqcnConfig::default())
    );
    let e = err(&with("sim:\n  dcqcn: { gain: 0.5 }\n"));
    assert!(e.contains("unknown field `gain`"), "{e}");
}

#[test]
fn topology_block_takes_exactly_one_kind() {
    let t = |y: &str| {
        ok(&with(&format!("sim:\n  topology: {y}\n")))
            .sim
            .unwrap()
            .topology
    };
    assert_eq!(t("{ star: {} }"), Topology::Star);
    assert_eq!(t("{ star: }"), Topology::Star);
    assert_eq!(
        t("{ leaf-spine: { leaves: 4, spines: 2, hosts-per-leaf: 8, uplink-rate: 40Gbps } }"),
        Topology::LeafSpine {
            leaves: 4,
            spines: 2,
            hosts_per_leaf: 8,
            uplink_rate_bps: Some(40_000_000_000)
        }
    );
    assert_eq!(
        t("{ fat-tree: { k: 16 } }"),
        Topology::FatTree {
            k: 16,
            hosts_per_edge: None
        }
    );
    let e = err(&with(
        "sim:\n  topology: { star: {}, fat-tree: { k: 4 } }\n",
    ));
    assert!(e.contains("exactly one topology kind"), "{e}");
    let e = err(&with("sim:\n  topology: { torus: {} }\n"));
    assert!(e.contains("unknown field `torus`"), "{e}");
}

#[test]
fn verbs_ranks_split_hosts_over_processes() {
    // `with` makes a 2-sender incast: hosts 0 (receiver), 1 and 2.
    let s = ok(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:18515\", hosts: [0] }\n    - { address: \"127.0.0.1:18516\", hosts: [2, 1] }\n",
    ));
    let v = s.verbs.unwrap();
    assert_eq!(v.ranks.len(), 2);
    assert_eq!(v.ranks[0].address, "127.0.0.1:18515".parse().unwrap());
    assert_eq!(v.ranks[1].hosts, vec![2, 1]);
    assert_eq!(v.rank_of(0), Some(0));
    assert_eq!(v.rank_of(1), Some(1));
    assert_eq!(v.rank_of(3), None);
    // No ranks: one process, nothing to check.
    assert!(ok(&with("verbs:\n  device: rxe0\n"))
        .verbs
        .unwrap()
        .ranks
        .is_empty());
}

#[test]
fn verbs_ranks_errors_name_the_field_and_line() {
    // Line 6 is the second rank; its `address` value is not IP:port.
    let e = err(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:18515\", hosts: [0] }\n    - { address: \"node1\", hosts: [1, 2] }\n",
    ));
    assert!(e.starts_with("scenarios/x.yaml:7:"), "{e}");
    assert!(e.contains("verbs.ranks[1].address"), "{e}");
    assert!(e.contains("\"node1\" is not an `IP:port` address"), "{e}");
    // A host listed twice in one rank.
    let e = err(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:1\", hosts: [0, 1, 2, 1] }\n",
    ));
    assert!(e.contains("hosts: host 1 is listed twice"), "{e}");
    // A host in two ranks.
    let e = err(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:1\", hosts: [0, 1] }\n    - { address: \"127.0.0.1:2\", hosts: [1, 2] }\n",
    ));
    assert!(
        e.contains("verbs.ranks: host 1 is in rank 0 and rank 1"),
        "{e}"
    );
    // A host in no rank (host 2), reported at the `verbs` key on line 4.
    let e = err(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:1\", hosts: [0, 1] }\n",
    ));
    assert!(
        e.starts_with("scenarios/x.yaml:4:1: verbs: ranks: workload host 2 is in no rank"),
        "{e}"
    );
    // A host the workload does not have (hosts are 0..=2).
    let e = err(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:1\", hosts: [0, 1, 2, 7] }\n",
    ));
    assert!(
        e.contains("rank 0 lists host 7, but the workload has hosts 0..=2"),
        "{e}"
    );
    // Two ranks on one address.
    let e = err(&with(
        "verbs:\n  ranks:\n    - { address: \"127.0.0.1:1\", hosts: [0] }\n    - { address: \"127.0.0.1:1\", hosts: [1, 2] }\n",
    ));
    assert!(
        e.contains("ranks 0 and 1 both listen on 127.0.0.1:1"),
        "{e}"
    );
}

#[test]
fn faults_block_is_read_with_defaults_and_located_errors() {
    use xrdma_scenario::SlowReceiver;
    use xrdma_sim::{LinkDirection, LinkOutage, LinkRate, LinkSelector};
    let s = ok(&with(
        "sim:\n  faults:\n    loss:\n      - { rate: 0.1% }\n      - { link: host 2, direction: up, rate: 0.02 }\n    corrupt: { link: host 1, direction: down, rate: 1% }\n    link-down: { link: host 2, at: 20us, for: 10us }\n    stop-reposting: { host: 0, at: 5us, for: 30us }\n    slow-receiver: { host: 0, per-message: 2us }\n",
    ));
    let sim = s.sim.expect("sim block");
    let (f, h) = (sim.faults, sim.host_faults);
    assert_eq!(
        f.loss,
        vec![
            LinkRate {
                link: LinkSelector::All,
                direction: LinkDirection::Both,
                rate: 0.001
            },
            LinkRate {
                link: LinkSelector::Host(2),
                direction: LinkDirection::Up,
                rate: 0.02
            },
        ]
    );
    assert_eq!(f.corrupt[0].rate, 0.01);
    assert_eq!(
        f.link_down,
        vec![LinkOutage {
            link: LinkSelector::Host(2),
            direction: LinkDirection::Both,
            at: Time::ZERO + Span::from_us(20),
            duration: Span::from_us(10),
        }]
    );
    assert_eq!(f.link_down[0].until(), Time::ZERO + Span::from_us(30));
    assert_eq!(h.stop_reposting[0].end(), Time::ZERO + Span::from_us(35));
    assert_eq!(
        h.slow_receiver,
        vec![SlowReceiver {
            host: 0,
            per_message: Span::from_us(2)
        }]
    );
    assert!(!f.is_empty() && !h.is_empty());
    let none = ok(&with("sim: {}\n")).sim_or_default();
    assert!(none.faults.is_empty() && none.host_faults.is_empty());
    // Unknown keys and bad values point at the field.
    let e = err(&with("sim:\n  faults: { los: [] }\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:5:13: sim.faults: unknown field `los`"),
        "{e}"
    );
    let e = err(&with("sim:\n  faults: { loss: { rate: 150% } }\n"));
    assert!(
        e.contains("sim.faults.loss") && e.contains("outside 0%..=100%"),
        "{e}"
    );
    let e = err(&with(
        "sim:\n  faults: { loss: { link: switch 1, rate: 1% } }\n",
    ));
    assert!(e.contains("write `all` or `host N`"), "{e}");
    let e = err(&with(
        "sim:\n  faults: { link-down: { at: 1us, for: 0us } }\n",
    ));
    assert!(e.contains("must be longer than 0"), "{e}");
}
