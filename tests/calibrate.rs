//! `xrdma calibrate`: the fit recovers a profile from measurements the simulator made with it
//! (the honest test of the method: the same model, known costs), is deterministic, and the
//! side-by-side run writes the compare report and the prediction errors.

use std::path::Path;
use xrdma::Span;
use xrdma_runner::fabric::SimFabric;
use xrdma_sim::{HostModel, SimConfig};
use xrdma_tools::calibrate::fit::{self, FitOptions};
use xrdma_tools::calibrate::measure::{self, Measurements, Plan};
use xrdma_tools::calibrate::{profile_file, side_by_side};

/// A smaller plan than the default: the simulator has no noise, so few iterations give its
/// figures (the sizes are the default's, they are what identifies the costs).
fn plan() -> Plan {
    Plan {
        ping_iters: 20,
        ping_warmup: 5,
        bw_small_iters: 3000,
        bw_large_iters: 100,
        ..Plan::default()
    }
}

fn synthetic(truth: &HostModel) -> Measurements {
    measure::measure("sim", &plan(), || {
        Ok(SimFabric::new(SimConfig {
            host: truth.clone(),
            ..SimConfig::default()
        })?)
    })
    .expect("the simulator measures")
}

fn rxe() -> HostModel {
    HostModel::from_profile("rxe-guest").unwrap()
}

/// |got − want| / want.
fn off(got: Span, want: Span) -> f64 {
    (got.as_ps() as f64 - want.as_ps() as f64).abs() / want.as_ps() as f64
}

/// Recovers the four parameters of `truth` (made from rxe-guest by the fit's own
/// parameterisation) within `tol` each, and every observation within 0.5 %.
fn recovers(params: [f64; 4], tol: f64) {
    let base = rxe();
    let truth = fit::model_of(&base, &params);
    let m = synthetic(&truth);
    let f = fit::fit(&m, &FitOptions::new(base)).expect("fits");
    let groups = [
        ("latency-scale", fit::LATENCY_COSTS),
        ("app-scale", fit::APP_COSTS),
    ];
    for (i, (name, keys)) in groups.iter().enumerate() {
        let e = (f.params[i] - params[i]).abs() / params[i];
        assert!(
            e <= tol,
            "{name}: {} against {} ({e:.4})",
            f.params[i],
            params[i]
        );
        for key in *keys {
            let get = |m: &HostModel| m.costs().into_iter().find(|(k, _)| k == key).unwrap().1;
            assert!(off(get(&f.model), get(&truth)) <= tol + 1e-3, "{key}");
        }
    }
    assert!(
        off(f.model.nic_tx_packet, truth.nic_tx_packet) <= tol,
        "{:?}",
        f.params
    );
    assert!(
        off(f.model.nic_tx_byte, truth.nic_tx_byte) <= tol,
        "{:?}",
        f.params
    );
    for r in &f.rows {
        assert!(
            r.error() <= 0.005,
            "{}: {} against {}",
            r.name,
            r.fitted,
            r.device
        );
    }
}

#[test]
fn the_fit_recovers_a_profile_near_its_base() {
    // 1.7 times the base's latencies, 6 times its per-message costs, 5 µs per packet and
    // 20 ns per byte (the base: 2.36 µs and 10 ns).
    recovers([1.7, 6.0, 5e6, 20e3], 0.03);
}

#[test]
fn the_fit_recovers_a_profile_far_from_its_base() {
    // About what a loaded TCG guest measures: 8 times the base's latencies, 30 times its
    // per-message costs, 9 µs per packet and 60 ns per byte.
    recovers([8.0, 30.0, 9e6, 60e3], 0.03);
}

#[test]
fn the_same_measurements_give_the_same_profile_file() {
    let m = synthetic(&fit::model_of(&rxe(), &[3.0, 10.0, 4e6, 30e3]));
    let a = fit::fit(&m, &FitOptions::new(rxe())).unwrap();
    let b = fit::fit(&m, &FitOptions::new(rxe())).unwrap();
    assert_eq!(a, b);
    let text = profile_file::to_yaml(&a.model, &["x".into()]);
    assert_eq!(text, profile_file::to_yaml(&b.model, &["x".into()]));
    assert_eq!(
        profile_file::from_yaml(&text, "fitted.yaml").unwrap(),
        a.model
    );
    // Every fitted cost is written (each differs from the base's); the kernel's TCP costs
    // are not fitted (the measurements are of RDMA), and stay the base's.
    let fitted: Vec<&str> = HostModel::COST_KEYS
        .iter()
        .copied()
        .filter(|k| !k.starts_with("tcp-"))
        .collect();
    assert_eq!(a.model.overridden(), fitted);
}

#[test]
fn the_fit_refuses_what_it_cannot_fit() {
    let m = synthetic(&rxe());
    let e = fit::fit(&m, &FitOptions::new(HostModel::IDEAL)).unwrap_err();
    assert!(e.to_string().contains("has no latency costs"), "{e}");
    let mut bad = m.clone();
    bad.bw[0].bytes_per_second = 0.0;
    let e = fit::fit(&bad, &FitOptions::new(rxe())).unwrap_err();
    assert!(e.to_string().contains("must be positive"), "{e}");
    // A stream faster than any link of the fitted fabric: it was fitted with every cost 0.
    let mut bad = m.clone();
    bad.bw[0].bytes_per_second = 1e30;
    let e = fit::fit(&bad, &FitOptions::new(rxe())).unwrap_err();
    assert!(
        e.to_string().contains("above the 1.2500e10 B/s line rate"),
        "{e}"
    );
    // Two observations for four parameters: under-determined, it exited 0 with costs of 0.
    let mut few = m.clone();
    few.ping.truncate(1);
    few.bw.truncate(1);
    let e = fit::fit(&few, &FitOptions::new(rxe())).unwrap_err();
    assert!(
        e.to_string()
            .contains("2 distinct observation(s) cannot fit 4 parameters"),
        "{e}"
    );
}

#[test]
fn measurements_round_trip_through_their_file() {
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = synthetic(&rxe());
    assert_eq!(m.ping.len(), 3);
    assert_eq!(m.bw.len(), 2);
    assert_eq!(m.bw[1].window, Some(256 << 10));
    measure::save(&dir.join("measurements.json"), &m).unwrap();
    assert_eq!(measure::load(&dir).unwrap(), m);
    std::fs::write(dir.join("other.json"), "{\"schema\": \"other/1\"}").unwrap();
    assert!(measure::load(&dir.join("other.json")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn side_by_side_errors_are_relative_to_the_first_device_run() {
    let text = "name: cal\nworkload:\n  incast: { senders: 2, receiver: 0, messages: \
                [ { size: 4KiB, count: 8 }, { size: 64KiB } ] }\nsim: { pfc: {} }\n";
    let sc = xrdma_scenario::parse(text, Path::new("cal.yaml")).unwrap();
    let run =
        |m: &HostModel| xrdma_runner::request::run_sim(&side_by_side::with_host(&sc, m)).unwrap();
    let (slow, fast) = (
        run(&fit::model_of(&rxe(), &[2.0, 2.0, 5e6, 20e3])),
        run(&rxe()),
    );
    // The "device" runs: the slow profile twice (no spread), the fast one as a prediction.
    let c = side_by_side::calibration(
        "cal",
        &[slow.clone(), slow.clone()],
        &[("slow".into(), slow.clone()), ("fast".into(), fast.clone())],
    );
    assert_eq!(c.device_runs, 2);
    assert!(c.device_spread.iter().all(|(_, s)| *s == Some(0.0)));
    let p50 = |r: &xrdma_reports::RunResult| {
        xrdma_cluster::sweep::report::Headline::of(r)
            .p50_ps
            .unwrap() as f64
    };
    assert_eq!(c.profiles[0].figures[0].error, Some(0.0));
    let want = (p50(&fast) - p50(&slow)).abs() / p50(&slow);
    assert_eq!(c.profiles[1].figures[0].figure, "p50");
    assert_eq!(c.profiles[1].figures[0].error, Some(want));
    assert!(want > 0.1, "{want}");
    let env = side_by_side::env(&c);
    assert!(env.contains("device_runs=2\n"), "{env}");
    assert!(
        env.contains(&format!("fast_p50_error={want:.4}\n")),
        "{env}"
    );
    assert!(env.contains("slow_p99_9_error=0.0000\n"), "{env}");
}

/// Marks the simulator run `json` as a run on the verbs backend: this machine has no device,
/// and the backend is all `calibrate run --device-result` checks of where a run was made.
fn relabel_as_device(json: &Path) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    v["scenario"]["backend"] = "verbs".into();
    std::fs::write(json, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn the_command_line_measures_fits_and_runs_side_by_side() {
    let exe = env!("CARGO_BIN_EXE_xrdma");
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ok = |args: &[&str]| {
        let out = std::process::Command::new(exe).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let d = |p: &str| dir.join(p).display().to_string();
    let truth = fit::model_of(&rxe(), &[2.0, 8.0, 5e6, 20e3]);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("truth.yaml"), profile_file::to_yaml(&truth, &[])).unwrap();
    let small = [
        "--ping-iters",
        "20",
        "--bw-small-iters",
        "3000",
        "--bw-large-iters",
        "100",
    ];
    let mut args = vec!["calibrate", "measure", "--backend", "sim"];
    let (truth_file, measured, fitted) = (d("truth.yaml"), d("m"), d("fit"));
    args.extend(["--host-profile", &truth_file, "--out", &measured]);
    args.extend(small);
    ok(&args);
    let text = ok(&[
        "calibrate",
        "fit",
        "--measurements",
        &measured,
        "--name",
        "rxe-fitted",
        "--out",
        &fitted,
    ]);
    assert!(
        text.contains("latency-scale") && text.contains("rxe-fitted.yaml"),
        "{text}"
    );
    let profile = d("fit/rxe-fitted.yaml");
    let fitted_model = profile_file::load(Path::new(&profile)).unwrap();
    assert!(off(fitted_model.nic_tx_packet, truth.nic_tx_packet) < 0.03);
    // The fitted file works wherever a profile name does.
    let text = ok(&["ping", "--iters", "20", "--host-profile", &profile]);
    assert!(text.contains("rxe-fitted.yaml"), "{text}");
    // A simulator run with the true profile stands in for the device's.
    let scenario = d("cal.yaml");
    std::fs::write(
        &scenario,
        "name: cal\nworkload:\n  incast: { senders: 2, receiver: 0, messages: \
         [ { size: 4KiB, count: 8 }, { size: 64KiB } ] }\nsim: { pfc: {} }\n",
    )
    .unwrap();
    let (device, out) = (d("device"), d("side"));
    let mut args = vec!["calibrate", "run", &scenario, "--host-profile", &profile];
    args.extend([
        "--host-profile",
        "ideal",
        "--device-result",
        &device,
        "--out",
        &out,
    ]);
    let mut run_truth = vec!["run", &scenario, "--out", &device];
    let sim_block = d("cal-truth.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap().replace(
        "sim: { pfc: {} }\n",
        &profile_file::to_yaml(&truth, &[]).replace("sim:\n", "sim:\n  pfc: {}\n"),
    );
    std::fs::write(&sim_block, text).unwrap();
    run_truth[1] = &sim_block;
    ok(&run_truth);
    // A simulator run is no device result: it was taken as one and gave 0.0000 error.
    let refused = std::process::Command::new(exe)
        .args(&args)
        .output()
        .unwrap();
    let err_text = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err_text}");
    assert!(
        err_text.contains("is a run on the sim backend: --device-result takes a run"),
        "{err_text}"
    );
    // This machine has no device: the truth's run, relabelled as a device's, stands in for
    // one (the labelling is all the check reads; the figures are the truth's).
    relabel_as_device(&dir.join("device/result.json"));
    let text = ok(&args);
    assert!(text.contains("sim rxe-fitted (ratio, error)"), "{text}");
    for f in [
        "calibration.txt",
        "calibration.json",
        "calibration.env",
        "compare.txt",
        "compare-cdf.svg",
        "compare-cdf.png",
        "device-1/result.json",
        "sim-rxe-fitted/result.json",
        "sim-ideal/summary.txt",
    ] {
        assert!(dir.join("side").join(f).is_file(), "{f} missing");
    }
    let env = std::fs::read_to_string(dir.join("side/calibration.env")).unwrap();
    let err = |key: &str| -> f64 {
        let line = env.lines().find(|l| l.starts_with(key)).unwrap();
        line.split('=').nth(1).unwrap().parse().unwrap()
    };
    // The fitted profile predicts the run of its truth closely; the ideal host does not.
    assert!(err("rxe_fitted_p50_error=") < 0.05, "{env}");
    assert!(err("ideal_p50_error=") > 0.5, "{env}");
    // A device result of another workload is refused with what `calibrate run` offers: the
    // error named --allow-different-workloads, an option of `compare` only.
    let other = d("other.yaml");
    std::fs::write(
        &other,
        std::fs::read_to_string(&sim_block)
            .unwrap()
            .replace("senders: 2", "senders: 3"),
    )
    .unwrap();
    let other_run = d("device-other");
    ok(&["run", &other, "--out", &other_run]);
    relabel_as_device(&dir.join("device-other/result.json"));
    let side2 = d("side2");
    let refused = std::process::Command::new(exe)
        .args(["calibrate", "run", &scenario, "--device-result", &other_run])
        .args(["--out", &side2])
        .output()
        .unwrap();
    let err_text = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err_text}");
    assert!(err_text.contains("has a different workload"), "{err_text}");
    assert!(err_text.contains("give a --device-result of a run of the same scenario"));
    assert!(
        !err_text.contains("--allow-different-workloads"),
        "{err_text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `connectx6` with its CPU and NIC latencies 2.5 times as large, its per-message costs 0.4
/// times, and a transmit engine of 1 µs per packet and 2 ns per byte: connectx6 is this base's
/// profile at parameters [0.4, 2.5, 0, 0], so a fit from it can recover connectx6 cost by cost.
fn connectx6_detuned() -> HostModel {
    let cx6 = HostModel::from_profile("connectx6").unwrap();
    fit::model_of(&cx6, &[2.5, 0.4, 1e6, 2e3])
}

#[test]
fn the_fit_recovers_connectx6_from_the_simulators_measurements() {
    let exe = env!("CARGO_BIN_EXE_xrdma");
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-cx6-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("cx6-detuned.yaml");
    std::fs::write(&base, profile_file::to_yaml(&connectx6_detuned(), &[])).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(exe).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (m, f, b) = (
        dir.join("m").display().to_string(),
        dir.join("f").display().to_string(),
        base.display().to_string(),
    );
    let small = ["--ping-iters", "20", "--bw-small-iters", "3000"];
    let mut args = vec!["calibrate", "measure", "--backend", "sim"];
    args.extend(["--host-profile", "connectx6", "--out", &m]);
    args.extend(small);
    args.extend(["--bw-large-iters", "100"]);
    run(&args);
    run(&[
        "calibrate",
        "fit",
        "--measurements",
        &m,
        "--base",
        &b,
        "--out",
        &f,
    ]);
    let fitted = profile_file::load(&dir.join("f/fitted.yaml")).unwrap();
    let truth = HostModel::from_profile("connectx6").unwrap();
    // Every non-zero cost within 1 % (the fit lands on connectx6 within a picosecond or
    // so: the simulator has no noise and connectx6 is in the base's family); connectx6's
    // transmit engine costs nothing, and the fit's must stay within 1 ns per packet and
    // 1 ps per byte of that.
    for ((key, got), (_, want)) in fitted.costs().into_iter().zip(truth.costs()) {
        match key {
            "nic-tx-packet" => assert!(got <= Span::from_ns(1), "{key}: {got}"),
            "nic-tx-byte" => assert!(got <= Span::from_ps(1), "{key}: {got}"),
            _ => assert!(off(got, want) <= 0.01, "{key}: {got} against {want}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_measurements_file_names_the_file_and_the_field() {
    let m = synthetic(&rxe());
    let good = serde_json::to_string_pretty(&m).unwrap();
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("measurements.json");
    let load = |text: &str| {
        std::fs::write(&path, text).unwrap();
        format!("{:#}", measure::load(&path).unwrap_err())
    };
    let file = path.display().to_string();
    // A wrong type, a missing field, an unknown field, a figure that is not positive.
    let cases = [
        (
            good.replacen("\"p50-ps\": ", "\"p50-ps\": \"fast\", \"x\": ", 1),
            "field ping[0].p50-ps: invalid type: string \"fast\", expected u64",
        ),
        (
            good.replacen("\"bytes-per-second\"", "\"bytes-per-sec\"", 1),
            "field bw[0].bytes-per-sec: unknown field `bytes-per-sec`",
        ),
        (
            good.replacen("\"backend\"", "\"back-end\"", 1),
            "field back-end: unknown field `back-end`",
        ),
        (
            good.replacen(
                &format!("\"p50-ps\": {}", m.ping[1].p50_ps),
                "\"p50-ps\": 0",
                1,
            ),
            "field ping[1].p50-ps is 0: every figure must be positive",
        ),
        (
            good.replacen(measure::SCHEMA, "other/1", 1),
            "field schema is `other/1`",
        ),
    ];
    for (text, want) in cases {
        assert_ne!(text, good, "{want}: the case did not change the file");
        let e = load(&text);
        assert!(e.starts_with(&format!("{file}: ")), "{e}");
        assert!(e.contains(want), "{e}\nwant: {want}");
    }
    let e = load("{\"schema\": \"xrdma-calibration-measurements/1\", \"backend\": \"verbs\"}");
    assert!(
        e.contains(&format!("{file}: not a measurements file: field")),
        "{e}"
    );
    assert!(e.contains("missing field `ping`"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_side_by_side_report_has_the_ratios_of_two_known_runs() {
    let text = "name: cal\nworkload:\n  incast: { senders: 2, receiver: 0, messages: \
                [ { size: 4KiB, count: 8 }, { size: 64KiB } ] }\nsim: { pfc: {} }\n";
    let sc = xrdma_scenario::parse(text, Path::new("cal.yaml")).unwrap();
    let device = xrdma_runner::request::run_sim(&side_by_side::with_host(&sc, &rxe())).unwrap();
    // The "simulator" run: the device's with every instant doubled, so every latency is
    // exactly twice the device's and the goodput (bytes over the run's span) exactly half.
    let mut slow = device.clone();
    for m in &mut slow.messages {
        m.intended_ps *= 2;
        m.completed_ps = m.completed_ps.map(|t| t * 2);
        m.delivered_ps = m.delivered_ps.map(|t| t * 2);
    }
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-ratio-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let w = side_by_side::write(
        &dir,
        "cal",
        std::slice::from_ref(&device),
        &[("slow".into(), slow)],
    )
    .unwrap();
    let c = &w.calibration;
    assert_eq!(c.device_runs, 1);
    assert!(c.device_spread.iter().all(|(_, s)| s.is_none()));
    let figures = &c.profiles[0].figures;
    let names: Vec<&str> = figures.iter().map(|f| f.figure.as_str()).collect();
    assert_eq!(names, ["p50", "p99", "p99.9", "goodput"]);
    let h = xrdma_cluster::sweep::report::Headline::of(&device);
    assert_eq!(figures[0].device, Some(h.p50_ps.unwrap() as f64));
    assert_eq!(figures[0].sim, Some(2.0 * h.p50_ps.unwrap() as f64));
    for f in &figures[..3] {
        assert_eq!(f.ratio, Some(2.0), "{}", f.figure);
        assert_eq!(f.error, Some(1.0), "{}", f.figure);
    }
    let g = &figures[3];
    assert!((g.ratio.unwrap() - 0.5).abs() < 1e-12, "{g:?}");
    assert!((g.error.unwrap() - 0.5).abs() < 1e-12, "{g:?}");
    // The compare report (run through `xrdma compare`'s own code) shows the same ratios.
    let table = std::fs::read_to_string(dir.join("compare.txt")).unwrap();
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap()
            .to_owned()
    };
    for name in ["p50 µs", "p99 µs", "p99.9 µs"] {
        assert!(row(name).ends_with("(×2.000)"), "{}", row(name));
    }
    assert!(row("goodput Gb/s").ends_with("(×0.500)"), "{table}");
    let env = std::fs::read_to_string(dir.join("calibration.env")).unwrap();
    for want in [
        "slow_p50_ratio=2.0000\n",
        "slow_p50_error=1.0000\n",
        "slow_p99_9_ratio=2.0000\n",
        "slow_goodput_ratio=0.5000\n",
        "slow_goodput_error=0.5000\n",
    ] {
        assert!(env.contains(want), "{want}{env}");
    }
    let txt = std::fs::read_to_string(dir.join("calibration.txt")).unwrap();
    assert!(txt.contains("(×2.000, 100.0%)"), "{txt}");
    assert!(txt.contains("(×0.500, 50.0%)"), "{txt}");
    for f in [
        "compare-cdf.svg",
        "compare-cdf.png",
        "device-1/result.json",
        "sim-slow/result.json",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_device_result_of_another_workload_is_refused() {
    let sc = |count: u32| {
        let text = format!(
            "name: cal\nworkload:\n  incast: {{ senders: 1, receiver: 0, messages: \
             [ {{ size: 4KiB, count: {count} }} ] }}\n"
        );
        xrdma_scenario::parse(&text, Path::new("cal.yaml")).unwrap()
    };
    let run = |count| xrdma_runner::request::run_sim(&sc(count)).unwrap();
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-other-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let e = side_by_side::write(&dir, "cal", &[run(4)], &[("sim".into(), run(5))]).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("has a different workload"), "{e}");
    assert!(
        e.contains("5 message(s)") && e.contains("4 message(s)"),
        "{e}"
    );
    assert!(!dir.join("calibration.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_profiles_of_one_label_are_refused_before_anything_runs() {
    let exe = env!("CARGO_BIN_EXE_xrdma");
    let dir = std::env::temp_dir().join(format!("xrdma-calibrate-label-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    // Two files of one stem would both write sim-fitted/.
    let profile = profile_file::to_yaml(&rxe(), &[]);
    std::fs::write(dir.join("fitted.yaml"), &profile).unwrap();
    std::fs::write(dir.join("a/fitted.yaml"), &profile).unwrap();
    let sc = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/incast-8.yaml");
    let out = std::process::Command::new(exe)
        .args(["calibrate", "run", sc.to_str().unwrap(), "--host-profile"])
        .arg(dir.join("fitted.yaml"))
        .arg("--host-profile")
        .arg(dir.join("a/fitted.yaml"))
        .args(["--device-result", "/nonexistent", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("both labelled `fitted`"), "{err}");
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
