//! Sweeps run by a cluster's scheduler: the emitted Slurm script and commands, single points
//! run as tasks and collected into the same index as the whole sweep, and a collection with a
//! point missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xrdma_cluster::sweep::{self, jobs, Backend, Plan, PointStatus};

mod common;
use common::{write_base as scenario, SMALL as AXES};

fn scratch(name: &str) -> PathBuf {
    common::scratch("sweepjobs", name)
}

fn plan(path: &Path, axes: &[&str]) -> Plan {
    common::plan_at(path, axes).unwrap()
}

fn invocation(axes: &[&str]) -> jobs::Invocation {
    jobs::Invocation {
        exe: "/shared/bin/xrdma".into(),
        scenario: "/shared/small.yaml".into(),
        axes: axes.iter().map(|a| a.to_string()).collect(),
        out: "/shared/results/small-sweep".into(),
        ranks: 1,
    }
}

/// `xrdma sweep SCENARIO --axis ... --out OUT EXTRA...`.
fn sweep_cli(path: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xrdma"));
    c.arg("sweep").arg(path);
    for a in AXES {
        c.args(["--axis", a]);
    }
    c.arg("--out").arg(out).args(extra);
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_slurm_script_runs_one_point_per_array_task() {
    let dir = scratch("script");
    let p = plan(&scenario(&dir), &["fan-in=2,4,8", "beta=0.5,0.8"]);
    let script = jobs::slurm_script(&p, &invocation(&["fan-in=2,4,8", "beta=0.5,0.8"])).unwrap();
    insta::assert_snapshot!(script);
    let lines: Vec<&str> = script.lines().collect();
    // 3 × 2 = 6 points: array indices 0..=5, every task one point by its index.
    assert!(lines.contains(&"#SBATCH --array=0-5"), "{script}");
    assert!(lines.contains(&"#SBATCH --ntasks=1"), "{script}");
    assert_eq!(
        lines.last().copied(),
        Some(
            "exec /shared/bin/xrdma sweep /shared/small.yaml --axis fan-in=2,4,8 --axis \
             beta=0.5,0.8 --out /shared/results/small-sweep --point \"$SLURM_ARRAY_TASK_ID\""
        )
    );
    // #SBATCH lines come before the first command, or sbatch ignores them.
    let first_command = lines
        .iter()
        .position(|l| !l.starts_with('#') && !l.is_empty())
        .unwrap();
    let last_directive = lines
        .iter()
        .rposition(|l| l.starts_with("#SBATCH"))
        .unwrap();
    assert!(last_directive < first_command, "{script}");
    assert!(
        script.contains(
            "#   collect: /shared/bin/xrdma sweep /shared/small.yaml --axis fan-in=2,4,8 \
             --axis beta=0.5,0.8 --out /shared/results/small-sweep --collect\n"
        ),
        "{script}"
    );
    assert!(
        script.contains("#   5  fan-in-8_beta-0.8  (sim)\n"),
        "{script}"
    );

    // The commands: one per point, by id, with the same arguments.
    let cmds = jobs::commands(&p, &invocation(&["fan-in=2,4,8", "beta=0.5,0.8"]));
    assert_eq!(cmds.len(), 6);
    assert_eq!(
        cmds[1],
        "/shared/bin/xrdma sweep /shared/small.yaml --axis fan-in=2,4,8 --axis beta=0.5,0.8 \
         --out /shared/results/small-sweep --point fan-in-2_beta-0.8"
    );
}

#[test]
fn multi_rank_verbs_points_run_as_job_steps_of_their_ranks() {
    let dir = scratch("ranks");
    let mut p = plan(&scenario(&dir), &["fan-in=2,4"]);
    // Point 1 as a verbs point of a scenario with two ranks (a build without the verbs
    // feature plans no verbs point, so it is set by hand).
    let ranked = "name: small\nworkload:\n  incast: { senders: 4, receiver: 0, messages: [ { size: 4KiB } ] }\nverbs:\n  ranks:\n    - { address: \"10.0.0.1:18515\", hosts: [0] }\n    - { address: \"10.0.0.2:18515\", hosts: [1, 2, 3, 4] }\n";
    let sc = xrdma_scenario::parse(ranked, Path::new("small.yaml")).unwrap();
    p.base.verbs = sc.verbs.clone();
    p.points[1].scenario.verbs = sc.verbs;
    p.points[1].backend = Backend::Verbs;
    let inv = invocation(&["fan-in=2,4"]);
    // The block's two ranks, whatever --ranks says.
    assert_eq!(
        jobs::step_ranks(
            &p,
            &jobs::Invocation {
                ranks: 5,
                ..inv.clone()
            }
        ),
        2
    );
    let script = jobs::slurm_script(&p, &inv).unwrap();
    let lines: Vec<&str> = script.lines().collect();
    for want in [
        "#SBATCH --array=0-1",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#   1  fan-in-4  (verbs)",
        "XRDMA_JOB_SECRET=\"$(/shared/bin/xrdma job-secret)\"",
        "export XRDMA_JOB_SECRET",
    ] {
        assert!(lines.contains(&want), "{want:?} not in {script}");
    }
    assert!(!script.contains("--ntasks=1"), "{script}");
    assert_eq!(
        lines.last().copied(),
        Some(
            "exec srun /shared/bin/xrdma sweep /shared/small.yaml --axis fan-in=2,4 --out \
             /shared/results/small-sweep --point \"$SLURM_ARRAY_TASK_ID\""
        )
    );
    let cmds = jobs::commands(&p, &inv);
    assert_eq!(cmds.len(), 2);
    assert!(
        cmds[1].starts_with(
            "XRDMA_JOB_SECRET=\"$(/shared/bin/xrdma job-secret)\" srun --nodes=2 --ntasks=2 \
                 --ntasks-per-node=1 /shared/bin/xrdma sweep "
        ) && cmds[1].ends_with("--point fan-in-4"),
        "{}",
        cmds[1]
    );
}

#[test]
fn ranks_apply_to_verbs_points_only() {
    let dir = scratch("ranks-arg");
    let mut p = plan(&scenario(&dir), &["fan-in=2,4"]);
    let three = jobs::Invocation {
        ranks: 3,
        ..invocation(&["fan-in=2,4"])
    };
    // A simulator-only sweep runs each point in one process, whatever --ranks says.
    assert_eq!(jobs::step_ranks(&p, &three), 1);
    assert!(jobs::slurm_script(&p, &three)
        .unwrap()
        .contains("#SBATCH --ntasks=1\n"));
    // With a verbs point and no `verbs.ranks` block, --ranks sets the step's size.
    p.points[0].backend = Backend::Verbs;
    assert_eq!(jobs::step_ranks(&p, &three), 3);
    assert!(jobs::slurm_script(&p, &three)
        .unwrap()
        .contains("#SBATCH --nodes=3\n#SBATCH --ntasks-per-node=1\n"));
}

#[test]
fn a_simulator_point_under_a_launcher_runs_on_rank_0_alone() {
    let dir = scratch("sim-rank1");
    let path = scenario(&dir);
    let out = dir.join("out");
    let mut c = Command::new(env!("CARGO_BIN_EXE_xrdma"));
    c.arg("sweep").arg(&path);
    for a in AXES {
        c.args(["--axis", a]);
    }
    let o = c
        .arg("--out")
        .arg(&out)
        .args(["--point", "0"])
        .env("SLURM_PROCID", "1")
        .env("SLURM_NTASKS", "2")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("runs on rank 0 alone (SLURM_PROCID=1"),
        "{}",
        text(&o.stdout)
    );
    assert!(!out.join("points").exists(), "rank 1 wrote nothing");
}

#[test]
fn points_run_as_tasks_collect_into_the_index_of_the_whole_sweep() {
    let dir = scratch("collect");
    let path = scenario(&dir);
    let (whole, tasks) = (dir.join("whole"), dir.join("tasks"));
    let o = sweep_cli(&path, &whole, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // The two points as separate tasks, one by index and one by id, in reverse order.
    let p = plan(&path, &AXES);
    for which in [p.points[1].id.as_str(), "0"] {
        let o = sweep_cli(&path, &tasks, &["--point", which]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(text(&o.stdout).contains(": ok, in "), "{}", text(&o.stdout));
        assert!(!tasks.join("index.json").exists(), "a task writes no index");
    }
    // A task whose point is finished runs nothing.
    let o = sweep_cli(&path, &tasks, &["--point", "1"]);
    assert!(
        text(&o.stdout).contains("finished earlier"),
        "{}",
        text(&o.stdout)
    );
    let o = sweep_cli(&path, &tasks, &["--collect"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("2 point(s): 2 finished, 0 missing, 0 not ok"),
        "{}",
        text(&o.stdout)
    );
    // index.json holds no timestamp or wall-clock figure: bit for bit the same, as are the
    // CSV and the plots (sweep.html differs only in the command line it shows).
    for f in ["index.json", "index.csv", "fan-in.svg", "fan-in-t-star.svg"] {
        let a = std::fs::read(whole.join(f)).unwrap();
        let b = std::fs::read(tasks.join(f)).unwrap();
        assert!(a == b, "{f} differs");
    }
    let html = std::fs::read_to_string(tasks.join("sweep.html")).unwrap();
    assert!(
        html.contains("--collect"),
        "the page shows the collect command"
    );
    let o = sweep_cli(&path, &tasks, &["--point", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("points 0..=1"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_collection_with_a_missing_point_names_it_and_fails() {
    let dir = scratch("missing");
    let path = scenario(&dir);
    let out = dir.join("out");
    let p = plan(&path, &AXES);
    let o = sweep_cli(&path, &out, &["--point", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = sweep_cli(&path, &out, &["--collect"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("MISSING 1 of 2 point(s):"), "{err}");
    assert!(
        err.contains(&format!("  [1] {}: not run: no ", p.points[1].id)),
        "{err}"
    );
    assert!(err.contains("--allow-missing"), "{err}");
    // What is finished is in the index; the missing point is listed as such.
    let ix: sweep::report::SweepIndex =
        serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).unwrap()).unwrap();
    assert_eq!(ix.points[0].status, PointStatus::Ok);
    assert_eq!(ix.points[1].status, PointStatus::Missing);
    assert!(ix.points[1].headline.is_none());
    let csv = std::fs::read_to_string(out.join("index.csv")).unwrap();
    assert!(
        csv.lines()
            .nth(2)
            .unwrap()
            .starts_with("4,4KiB,sim,missing,"),
        "{csv}"
    );
    let o = sweep_cli(&path, &out, &["--collect", "--allow-missing"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("MISSING 1 of 2"),
        "{}",
        text(&o.stderr)
    );

    // A point killed while running leaves a .partial directory: said so.
    std::fs::create_dir_all(
        out.join("points")
            .join(format!("{}.partial", p.points[1].id)),
    )
    .unwrap();
    let c = jobs::collect(&p, &out);
    assert_eq!(c.missing.len(), 1);
    assert!(
        c.missing[0].1.starts_with("unfinished: "),
        "{:?}",
        c.missing
    );
    // A point run with other arguments (another seed) is stale, not finished.
    let mut other = p.clone();
    for q in &mut other.points {
        let mut s = q.scenario.sim_or_default();
        s.seed = 99;
        q.scenario.sim = Some(s);
        q.hash = sweep::point_hash(&q.scenario, q.backend);
    }
    let c = jobs::collect(&other, &out);
    assert!(c.missing[0].1.starts_with("stale: "), "{:?}", c.missing);
    // No sweep directory at all: nothing to collect.
    let o = sweep_cli(&path, &dir.join("absent"), &["--collect"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("nothing to collect"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn emit_writes_the_script_and_prints_where_results_land() {
    let dir = scratch("emit");
    let path = scenario(&dir);
    let out = dir.join("out");
    let o = sweep_cli(&path, &out, &["--emit", "slurm"]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let script = std::fs::read_to_string(out.join("sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-1\n"), "{script}");
    assert!(
        out.join("slurm").is_dir(),
        "the task logs' directory exists"
    );
    let abs_out = std::path::absolute(&out).unwrap();
    assert!(
        stdout.contains(&format!("results: {}/points/<id>/", abs_out.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("collect: ") && stdout.contains(" --collect"),
        "{stdout}"
    );
    assert!(!out.join("points").exists(), "nothing ran");
    // Commands: standard output holds exactly one command per point.
    let o = sweep_cli(&path, &out, &["--emit", "commands"]);
    let stdout = text(&o.stdout);
    let cmds: Vec<&str> = stdout.lines().collect();
    assert_eq!(cmds.len(), 2, "{stdout}");
    assert!(
        cmds.iter().all(|c| c.contains(" --point fan-in-")),
        "{stdout}"
    );
    assert!(text(&o.stderr).contains("collect: "), "{}", text(&o.stderr));
    // --emit does not mix with --point or --collect.
    let o = sweep_cli(&path, &out, &["--emit", "slurm", "--collect"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn ranks_on_a_sweep_without_verbs_points_is_warned_about() {
    let dir = scratch("ranks-warn");
    let path = scenario(&dir);
    let o = sweep_cli(
        &path,
        &dir.join("out"),
        &["--emit", "commands", "--ranks", "3"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("warning: --ranks 3 applies to verbs and sockets points only"),
        "{}",
        text(&o.stderr)
    );
    assert!(!text(&o.stdout).contains("srun"), "{}", text(&o.stdout));
}
