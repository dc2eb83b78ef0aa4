//! `xrdma sweep` and `xrdma compare` through the library: planning, resume, the index, results
//! independent of the number of jobs, and the comparison table.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use xrdma_cluster::sweep::report::{self, Headline, SweepIndex};
use xrdma_cluster::sweep::{self, Backend, Plan, PointStatus, Progress};
use xrdma_reports::{completion_span_ps, LatencySummary, RunResult};
use xrdma_scenario::Scenario;
use xrdma_tools::compare;

mod common;
use common::{write_base, SMALL};

fn scratch(name: &str) -> PathBuf {
    common::scratch("sweep", name)
}

fn plan(dir: &Path, axes: &[&str]) -> anyhow::Result<Plan> {
    common::plan_at(&write_base(dir), axes)
}

/// Runs `plan` into `out` with `jobs` workers; returns the outcomes and how many points ran.
fn run(plan: &Plan, out: &Path, jobs: usize) -> (Vec<sweep::PointOutcome>, usize) {
    let runs = AtomicUsize::new(0);
    let runner = |b: Backend, sc: &Scenario| {
        runs.fetch_add(1, Ordering::Relaxed);
        sweep::default_runner(b, sc)
    };
    let progress = Progress::new(plan.points.len(), true);
    let outcomes = sweep::execute(plan, out, jobs, &runner, &progress).unwrap();
    (outcomes, runs.load(Ordering::Relaxed))
}

#[test]
fn plan_applies_every_axis_value() {
    let dir = scratch("plan");
    let p = plan(
        &dir,
        &["fan-in=2,16", "size=4KiB", "pfc=off", "dcqcn=on", "seed=7"],
    )
    .unwrap();
    // 2 × 1 × 1 × 1 × 1 points.
    assert_eq!(p.points.len(), 2);
    let ids: Vec<&str> = p.points.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "fan-in-2_size-4KiB_pfc-off_dcqcn-on_seed-7",
            "fan-in-16_size-4KiB_pfc-off_dcqcn-on_seed-7"
        ]
    );
    let sc = &p.points[1].scenario;
    let xrdma_scenario::Workload::Incast(i) = &sc.workload else {
        panic!("the base scenario is an incast")
    };
    assert_eq!(i.senders, 16);
    // Both entries of the message list get 4 KiB = 4096 B; the counts stay 2 and 1.
    let sizes: Vec<(u64, u32)> = i.messages.iter().map(|m| (m.size, m.count)).collect();
    assert_eq!(sizes, [(4096, 2), (4096, 1)]);
    let sim = sc.sim.as_ref().unwrap();
    assert!(sim.pfc.is_none());
    assert!(sim.dcqcn.is_some());
    assert_eq!(sim.seed, 7);
    // The ECN block of the base is kept.
    assert_eq!(sim.ecn.as_ref().unwrap().kmin_bytes, 400 * 1024);
    // Different scenarios, different hashes.
    assert_ne!(p.points[0].hash, p.points[1].hash);
}

#[test]
fn bad_axes_and_bad_points_stop_before_anything_runs() {
    let dir = scratch("bad");
    let e = plan(&dir, &["fan_in=2"]).unwrap_err().to_string();
    assert!(
        e.contains("unknown axis `fan_in`") && e.contains("initial-window"),
        "{e}"
    );
    let e = plan(&dir, &[]).unwrap_err().to_string();
    assert!(e.contains("at least one --axis"), "{e}");
    // initial-window 512 KiB is above the base's max-window (256 KiB default): the point is
    // named and nothing runs.
    let e = format!(
        "{:#}",
        plan(&dir, &["fan-in=2", "initial-window=64KiB,512KiB"]).unwrap_err()
    );
    assert!(
        e.contains("sweep point fan-in-2_initial-window-512KiB"),
        "{e}"
    );
    assert!(e.contains("initial-window"), "{e}");
}

#[test]
fn a_bad_point_is_blamed_on_its_axis_not_the_base_files_line() {
    // The base file's `initial-window: 64KiB` (line 9) is valid; the axis value 1 B is not.
    let base = write_base(&scratch("blame"));
    let e = format!(
        "{:#}",
        common::plan_at(&base, &["initial-window=1B"]).unwrap_err()
    );
    let want = format!(
        "sweep point initial-window-1B: --axis initial-window=1B (over {}): xrdma.initial-window:",
        base.display()
    );
    assert!(e.starts_with(&want), "{e}");
    assert!(!e.contains(":9:"), "{e}");
    // The fan-in axis records the key it sets, the one its errors are blamed on.
    let sc = common::plan_at(&base, &["fan-in=2"]).unwrap();
    assert_eq!(sc.points[0].scenario.overrides.len(), 1);
    assert_eq!(
        sc.points[0].scenario.overrides[0].key,
        ["workload", "incast", "senders"]
    );
}

fn strip_wall_clock(path: &Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("wall-clock");
    v
}

#[test]
fn results_do_not_depend_on_jobs() {
    let dir = scratch("jobs");
    let p = plan(&dir, &SMALL).unwrap();
    let (one, two) = (dir.join("j1"), dir.join("j2"));
    let (o1, n1) = run(&p, &one, 1);
    let (o2, n2) = run(&p, &two, 2);
    assert_eq!((n1, n2), (2, 2));
    let (i1, i2) = (report::index(&p, &o1), report::index(&p, &o2));
    assert_eq!(i1, i2);
    assert_eq!(report::index_csv(&i1), report::index_csv(&i2));
    for q in &p.points {
        let a = strip_wall_clock(&sweep::point_dir(&one, &q.id).join("result.json"));
        let b = strip_wall_clock(&sweep::point_dir(&two, &q.id).join("result.json"));
        assert_eq!(a, b, "point {}", q.id);
    }
}

#[test]
fn resume_skips_finished_points_and_redoes_broken_ones() {
    let dir = scratch("resume");
    let out = dir.join("out");
    let p = plan(&dir, &SMALL).unwrap();
    let (first, ran) = run(&p, &out, 2);
    assert_eq!(ran, 2);
    assert!(first
        .iter()
        .all(|o| !o.resumed && o.status == PointStatus::Ok));

    // Everything finished: nothing runs again, and the outcomes are the same results.
    let (again, ran) = run(&p, &out, 2);
    assert_eq!(ran, 0);
    assert!(again.iter().all(|o| o.resumed));
    assert_eq!(report::index(&p, &first), report::index(&p, &again));

    // An interrupted write: point 0's result.json cut in half, and a leftover partial
    // directory of point 1 (as a kill during its run leaves it). Only point 0 runs again.
    let r0 = sweep::point_dir(&out, &p.points[0].id).join("result.json");
    let text = std::fs::read(&r0).unwrap();
    std::fs::write(&r0, &text[..text.len() / 2]).unwrap();
    let partial = out
        .join("points")
        .join(format!("{}.partial", p.points[1].id));
    std::fs::create_dir_all(&partial).unwrap();
    let (third, ran) = run(&p, &out, 2);
    assert_eq!(ran, 1);
    assert!(!third[0].resumed && third[1].resumed);
    assert_eq!(strip_wall_clock(&r0), {
        let mut v = serde_json::to_value(third[0].result.as_ref().unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("wall-clock");
        v
    });

    // A changed scenario (another seed) for the same directory name is not reused.
    let mut changed = p.clone();
    for q in &mut changed.points {
        let mut s = q.scenario.sim_or_default();
        s.seed = 99;
        q.scenario.sim = Some(s);
        q.hash = sweep::point_hash(&q.scenario, q.backend);
    }
    let (_, ran) = run(&changed, &out, 2);
    assert_eq!(ran, 2);
}

#[test]
fn a_point_whose_directory_another_run_wrote_into_runs_again() {
    let dir = scratch("overwritten");
    let out = dir.join("out");
    let p = plan(&dir, &SMALL).unwrap();
    let (first, _) = run(&p, &out, 2);
    // Another run's result in point 0's directory (as `xrdma run --out` on it leaves it): a
    // valid result, but of point 1's scenario, not point 0's.
    let r0 = sweep::point_dir(&out, &p.points[0].id).join("result.json");
    let r1 = sweep::point_dir(&out, &p.points[1].id).join("result.json");
    std::fs::copy(&r1, &r0).unwrap();
    let (again, ran) = run(&p, &out, 2);
    assert_eq!(ran, 1, "point 0 runs again; point 1 is its own");
    assert!(!again[0].resumed && again[1].resumed);
    let senders = |o: &sweep::PointOutcome| o.result.as_ref().unwrap().workload.senders;
    assert_eq!(senders(&again[0]), senders(&first[0]));
    assert_ne!(senders(&again[0]), senders(&first[1]));
}

#[test]
fn a_seed_axis_gives_each_figure_its_mean_and_interval_across_seeds() {
    let dir = scratch("seeds");
    let out = dir.join("out");
    let p = plan(&dir, &["fan-in=2", "seed=1,2,3"]).unwrap();
    let (outcomes, _) = run(&p, &out, 2);
    let ix = report::index(&p, &outcomes);
    let groups = sweep::seeds::seed_groups(&ix).expect("a seed axis of three values");
    assert_eq!(groups.len(), 1);
    assert_eq!(
        (groups[0].ok, groups[0].not_ok, groups[0].missing),
        (3, 0, 0)
    );
    // A point not finished at collection is missing, not failed.
    let mut partial = ix.clone();
    partial.points[2].status = PointStatus::Missing;
    partial.points[2].headline = None;
    let g = &sweep::seeds::seed_groups(&partial).unwrap()[0];
    assert_eq!((g.ok, g.not_ok, g.missing), (2, 0, 1));
    // The p99 estimate is the mean of the three seeds' p99, with Student's t(0.975, 2).
    let p99: Vec<f64> = outcomes
        .iter()
        .map(|o| {
            report::Headline::of(o.result.as_ref().unwrap())
                .p99_ps
                .unwrap() as f64
                / 1e6
        })
        .collect();
    let e = groups[0].figures[1].expect("a p99 estimate");
    assert_eq!(e.n, 3);
    assert!((e.mean - p99.iter().sum::<f64>() / 3.0).abs() < 1e-9);
    let want = xrdma_reports::spread::Estimate::of(&p99).unwrap();
    assert_eq!(e, want);
    let csv = sweep::seeds::seeds_csv(&ix, &groups);
    assert!(csv.starts_with("fan-in,seeds_ok,seeds_not_ok,seeds_missing,p50_us_mean,p50_us_ci95,"));
    assert_eq!(csv.lines().count(), 2);
    // A sweep without a seed axis has no seed groups.
    let one = plan(&dir, &["fan-in=2"]).unwrap();
    assert!(sweep::seeds::seed_groups(&report::index(&one, &outcomes[..1])).is_none());
    // The fan-in plot draws the seeds' mean with its interval: one series, one point.
    let series = report::fan_in_series(&ix).expect("a fan-in axis");
    assert_eq!(series.len(), 1, "{series:?}");
    assert_eq!(series[0].points.len(), 1);
    let pt = series[0].points[0];
    let near = |ps: Option<u64>, us: f64| ps.is_some_and(|v| (v as f64 - us * 1e6).abs() <= 1.0);
    assert!(near(pt.p99_ps, want.mean), "{pt:?} {want:?}");
    assert!(
        near(pt.ci_ps[1], want.half_width.unwrap()),
        "{pt:?} {want:?}"
    );
}

#[test]
fn index_lists_points_with_figures_of_their_results() {
    let dir = scratch("index");
    let out = dir.join("out");
    let p = plan(&dir, &SMALL).unwrap();
    let (outcomes, _) = run(&p, &out, 2);
    let ix = report::index(&p, &outcomes);
    let files = report::write_reports(&out, &p, &ix, "xrdma sweep test").unwrap();
    let read: SweepIndex =
        serde_json::from_str(&std::fs::read_to_string(&files.index_json).unwrap()).unwrap();
    assert_eq!(read, ix);
    assert_eq!(read.axes[0].values, ["2", "4"]);
    for (q, (ip, fan_in)) in p.points.iter().zip(read.points.iter().zip([2u32, 4])) {
        assert_eq!(ip.values, [fan_in.to_string(), "4KiB".to_string()]);
        assert_eq!(ip.status, PointStatus::Ok);
        let r: RunResult =
            xrdma_reports::read_json(&out.join(&ip.dir).join("result.json")).unwrap();
        let h = ip.headline.as_ref().unwrap();
        assert_eq!(h, &Headline::of(&r));
        assert_eq!(h.fan_in, fan_in);
        // 3 messages per sender (2 + 1), all delivered.
        assert_eq!(
            (h.messages, h.completed),
            (3 * u64::from(fan_in), 3 * u64::from(fan_in))
        );
        let s = LatencySummary::from_records(&r.messages);
        assert_eq!(
            (h.p50_ps, h.p99_ps, h.p999_ps),
            (s.p50_ps, s.p99_ps, s.p999_ps)
        );
        let t = r.ideal.unwrap().t_star_ps;
        let span = completion_span_ps(&r.messages).unwrap();
        assert_eq!(h.max_over_t_star, Some(span as f64 / t as f64));
        // The last completion cannot beat the ideal finish.
        assert!(h.max_over_t_star.unwrap() >= 1.0);
        assert_eq!(ip.hash, q.hash);
    }
    let csv = std::fs::read_to_string(&files.index_csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("fan-in,size,backend,status,fan_in,"));
    assert!(lines[1].starts_with("2,4KiB,sim,ok,2,6,6,"));
    assert_eq!(files.plots.len(), 4);
    let html = std::fs::read_to_string(&files.html).unwrap();
    assert!(html.contains("<svg") && html.contains("name: small"));
    assert!(html.contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn compare_shows_ratios_to_the_first_run_and_refuses_other_workloads() {
    let dir = scratch("compare");
    let out = dir.join("out");
    let p = plan(&dir, &["fan-in=2,4", "size=4KiB"]).unwrap();
    run(&p, &out, 2);
    let a = sweep::point_dir(&out, &p.points[0].id);
    // A second run of the same workload whose every completion took twice as long.
    let mut slow: RunResult = xrdma_reports::read_json(&a.join("result.json")).unwrap();
    for m in &mut slow.messages {
        let lat = m.completed_ps.unwrap() - m.intended_ps;
        m.completed_ps = Some(m.intended_ps + 2 * lat);
    }
    slow.scenario.seed = 2;
    let slow_path = dir.join("slow.json");
    xrdma_reports::write_json(&slow_path, &slow).unwrap();
    let runs = compare::load_runs(&[a.clone(), slow_path]).unwrap();
    compare::check_same_workload(&runs, "").unwrap();
    let table = compare::compare_table(&runs);
    let p50 = table.lines().find(|l| l.starts_with("p50 µs")).unwrap();
    // Every latency doubled, so p50 doubles: ratio ×2.000.
    assert!(p50.contains("(×2.000)"), "{table}");
    let files = compare::write_compare(&dir.join("cmp"), &runs).unwrap();
    let svg = std::fs::read_to_string(&files.svg).unwrap();
    // The tails, each run in its own line pattern (the second dashed).
    let tail = std::fs::read_to_string(&files.tail_svg).unwrap();
    assert!(tail.contains("1 − CDF, log"), "{tail}");
    // Named after the runs' directories, so another comparison writes elsewhere.
    let default = compare::default_out(&runs);
    assert!(default.starts_with("results"), "{}", default.display());
    let name = default.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("compare-") && name.contains("-vs-"),
        "{name}"
    );
    // Long names are cut, and two comparisons that differ only past the cut still part ways.
    let long = |tail: &str| {
        let mut rs = runs.clone();
        for (i, r) in rs.iter_mut().enumerate() {
            r.path = Path::new(&format!("{}{i}{tail}", "x".repeat(150))).join("result.json");
        }
        compare::default_out(&rs)
    };
    let (a1, a2) = (long("a"), long("b"));
    assert_ne!(a1, a2);
    for p in [&a1, &a2] {
        assert!(p.file_name().unwrap().len() <= 200, "{}", p.display());
    }
    // A sweep point's run is named after its axis values.
    assert_eq!(runs[0].result.scenario.name, "small [fan-in=2, size=4KiB]");
    assert!(
        svg.contains("small [fan-in=2, size=4KiB] (sim, xrdma, seed 2)") && svg.contains("µs, log"),
        "{svg}"
    );
    // A run with a message that never completed is marked failed, and the table says on how
    // many messages its figures stand.
    let mut cut = slow.clone();
    cut.messages[0].completed_ps = None;
    cut.messages[0].delivered_ps = None;
    cut.delivery.delivered -= 1;
    cut.delivery.missing += 1;
    cut.unfinished = xrdma_reports::metrics::unfinished(&cut.messages);
    cut.scenario.seed = 3;
    let cut_path = dir.join("cut.json");
    xrdma_reports::write_json(&cut_path, &cut).unwrap();
    let runs3 = compare::load_runs(&[a.clone(), cut_path]).unwrap();
    assert!(!compare::run_failed(&runs3[0].result));
    assert!(compare::run_failed(&runs3[1].result));
    let table = compare::compare_table(&runs3);
    let n = cut.messages.len();
    let head = table.lines().next().unwrap();
    assert!(
        head.contains("(seed 3) (FAILED)") || head.contains("(FAILED)"),
        "{table}"
    );
    let done = table.lines().find(|l| l.starts_with("completed")).unwrap();
    assert!(
        done.contains(&format!("{n} of {n}")) && done.contains(&format!("{} of {n}", n - 1)),
        "{table}"
    );
    // Fan-in 4 is another workload.
    let b = sweep::point_dir(&out, &p.points[1].id);
    let runs = compare::load_runs(&[a, b]).unwrap();
    let e = compare::check_same_workload(&runs, "REMEDY")
        .unwrap_err()
        .to_string();
    assert!(e.contains("incast 4:1") && e.contains("incast 2:1"), "{e}");
    assert!(compare::load_runs(&[dir.join("slow.json")]).is_err());
}

#[test]
fn compare_prints_a_counter_the_backend_does_not_observe_as_not_observed() {
    let dir = scratch("compare-na");
    let out = dir.join("out");
    let p = plan(&dir, &["fan-in=2", "size=4KiB"]).unwrap();
    run(&p, &out, 1);
    let a = sweep::point_dir(&out, &p.points[0].id).join("result.json");
    let mut sim: RunResult = xrdma_reports::read_json(&a).unwrap();
    sim.network.ecn_marks = Some(24);
    sim.network.cnps = Some(0);
    sim.network.pfc_xoff = Some(0);
    // The same workload on rxe: no switch counters, the device's environment.
    let mut rxe = sim.clone();
    rxe.scenario.backend = xrdma_reports::Backend::Verbs;
    rxe.sim = None;
    rxe.network = xrdma_reports::NetworkCounters {
        data_packets: Some(120),
        seq_naks: Some(0),
        rnr_naks: Some(0),
        ..xrdma_reports::NetworkCounters::default()
    };
    rxe.environment = Some(xrdma_reports::Environment {
        backend: xrdma_reports::Backend::Verbs,
        simulator_version: None,
        host_name: Some("node7".into()),
        kernel: Some("6.1.0".into()),
        device: Some(xrdma_reports::DeviceInfo {
            name: Some("rxe0".into()),
            fw_ver: Some("0.0.0".into()),
            ..xrdma_reports::DeviceInfo::default()
        }),
        device_counters: None,
        ranks: None,
    });
    let (sim_path, rxe_path) = (dir.join("sim.json"), dir.join("rxe.json"));
    xrdma_reports::write_json(&sim_path, &sim).unwrap();
    xrdma_reports::write_json(&rxe_path, &rxe).unwrap();
    let runs = compare::load_runs(&[sim_path, rxe_path]).unwrap();
    let table = compare::compare_table(&runs);
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // 24 on the simulator, not observed on verbs: neither a 0 nor a ratio.
    assert_eq!(row("ECN marks"), "ECN marks 24 n/a (not observed by verbs)");
    assert_eq!(row("PFC XOFF"), "PFC XOFF 0 n/a (not observed by verbs)");
    assert_eq!(row("CNPs"), "CNPs 0 n/a (not observed by verbs)");
    assert!(!table.contains("×0.000"), "{table}");
    assert_eq!(
        row("environment"),
        format!(
            "environment sim, xrdma-sim {} verbs, rxe0 (fw 0.0.0) on node7",
            xrdma_sim::VERSION
        )
    );
    // A result from before results named their environment.
    let mut old = runs.clone();
    old[1].result.environment = None;
    assert!(compare::compare_table(&old).contains("not recorded"));
}

#[test]
fn a_sweep_over_other_points_is_refused_where_an_earlier_sweep_lives() {
    let dir = scratch("other-points");
    let out = dir.join("out");
    let first = plan(&dir, &["fan-in=2"]).unwrap();
    let (outcomes, _) = run(&first, &out, 1);
    let index = report::index(&first, &outcomes);
    std::fs::write(
        out.join("index.json"),
        serde_json::to_string(&index).unwrap(),
    )
    .unwrap();
    // The same points again, or more of them, keep the earlier one.
    for axes in [&["fan-in=2"][..], &["fan-in=2,4"][..]] {
        let p = plan(&dir, axes).unwrap();
        report::check_keeps_earlier_points(&out, &p).unwrap();
    }
    // Other points would drop it from the index and plots.
    let other = plan(&dir, &["fan-in=4"]).unwrap();
    let e = report::check_keeps_earlier_points(&out, &other)
        .unwrap_err()
        .to_string();
    assert!(e.contains("fan-in=2") && e.contains("--out"), "{e}");
}

#[test]
fn a_sweep_over_stacks_and_seeds_says_whether_a_stack_moves_p99_beyond_the_spread() {
    let dir = scratch("verdicts");
    let out = dir.join("out");
    let p = plan(&dir, &["stack=xrdma,tcp", "fan-in=2", "seed=1,2,3"]).unwrap();
    let (outcomes, _) = run(&p, &out, 2);
    let ix = report::index(&p, &outcomes);
    let groups = sweep::seeds::seed_groups(&ix).expect("a seed axis");
    let lines = sweep::seeds::verdict_lines(&ix, &groups);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert!(l.starts_with("stack tcp against stack xrdma: p99 ×"), "{l}");
    // The verdict follows the intervals: disjoint is beyond the spread.
    let (a, b) = (groups[1].figures[1].unwrap(), groups[0].figures[1].unwrap());
    let want = if a.differs_from(&b) == Some(true) {
        "beyond the seeds' spread"
    } else {
        "within the seeds' spread"
    };
    assert!(l.ends_with(want), "{l}");
}

#[test]
fn a_sweep_runs_its_sockets_points_beside_the_simulators() {
    // The sockets backend's points used to be planned and silently skipped.
    let dir = scratch("sockets");
    let out = dir.join("out");
    let p = plan(
        &dir,
        &["backend=sim,sockets", "stack=tcp", "fan-in=2", "size=4KiB"],
    )
    .unwrap();
    assert_eq!(p.points.len(), 2);
    let (outcomes, runs) = run(&p, &out, 2);
    assert_eq!((outcomes.len(), runs), (2, 2));
    for (point, o) in p.points.iter().zip(&outcomes) {
        let r: RunResult =
            xrdma_reports::read_json(&sweep::point_dir(&out, &point.id).join("result.json"))
                .unwrap_or_else(|e| panic!("{}: {o:?}: {e}", point.id));
        assert_eq!(
            r.scenario.backend.name(),
            point.backend.name(),
            "{}",
            point.id
        );
    }
    // A backend axis is the backend's column: index.csv names it once.
    let csv = report::index_csv(&report::index(&p, &outcomes));
    let header: Vec<&str> = csv.lines().next().expect("a header").split(',').collect();
    assert_eq!(
        header.iter().filter(|c| **c == "backend").count(),
        1,
        "{header:?}"
    );
    assert!(
        csv.lines().nth(1).is_some_and(|l| l.contains("sim,")),
        "{csv}"
    );
}
