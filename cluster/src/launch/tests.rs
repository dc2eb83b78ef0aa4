//! Tests of the launch resolution: each launcher's variables, the precedence between them and
//! the command line, and the errors.

use super::*;

fn vars(pairs: &[(&str, &str)]) -> Vars {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn ok(v: &Vars, args: &LaunchArgs, block: usize) -> Launch {
    resolve(v, args, block)
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a launch")
}

fn err(v: &Vars, args: &LaunchArgs, block: usize) -> String {
    resolve(v, args, block).unwrap_err().to_string()
}

fn coordinator(l: &Launch) -> (&str, u16, &'static str) {
    match &l.peers {
        Peers::Rendezvous(c) => (c.host.as_str(), c.port, c.from),
        Peers::Scenario => panic!("no rendezvous: {l:?}"),
    }
}

fn hostfile(text: &str) -> LaunchArgs {
    LaunchArgs {
        hostfile: Some(Hostfile::parse(text).unwrap()),
        ..LaunchArgs::default()
    }
}

#[test]
fn a_slurm_batch_script_is_not_a_launch_but_a_task_of_its_step_is() {
    // What sbatch exports to the script itself: no step, so one process.
    let batch = vars(&[
        ("SLURM_JOB_ID", "7"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "4"),
        ("SLURM_JOB_NODELIST", "n[1-4]"),
    ]);
    assert_eq!(resolve(&batch, &LaunchArgs::default(), 0), Ok(None));
    // The same job's task started by srun: rank 2 of 4.
    let mut task = batch.clone();
    task.insert("SLURM_STEP_ID".into(), "0".into());
    task.insert("SLURM_PROCID".into(), "2".into());
    let l = ok(&task, &LaunchArgs::default(), 0);
    assert_eq!((l.rank, l.size), (2, 4));
}

#[test]
fn nothing_set_is_a_single_process_run() {
    assert_eq!(resolve(&Vars::new(), &LaunchArgs::default(), 0), Ok(None));
    assert_eq!(resolve(&Vars::new(), &LaunchArgs::default(), 3), Ok(None));
    // Unrelated variables do not make a launch.
    let v = vars(&[("SLURM_JOB_ID", "7"), ("XRDMA_COORDINATOR", "n1:0")]);
    assert_eq!(resolve(&v, &LaunchArgs::default(), 0), Ok(None));
    let args = LaunchArgs {
        rank: Some(1),
        ..LaunchArgs::default()
    };
    assert_eq!(ok(&v, &args, 2).peers, Peers::Scenario);
}

#[test]
fn slurm_rank_count_local_rank_and_first_node() {
    let v = vars(&[
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "9"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_JOB_NODELIST", "node[01-04,07],gpu3"),
    ]);
    let l = ok(&v, &LaunchArgs::default(), 0);
    assert_eq!((l.rank, l.size, l.local_rank), (5, 9, Some(1)));
    assert_eq!(l.source, Source::Slurm);
    assert_eq!(coordinator(&l), ("node01", 18515, "SLURM_JOB_NODELIST"));
    assert_eq!(l.bootstrap_port(), 18517);
    assert_eq!(
        l.summary(),
        "rank 5 of 9 (Slurm, local rank 1; coordinator node01:18515 from SLURM_JOB_NODELIST)"
    );
    // The step's node list wins over the job's; SLURM_NPROCS stands in for SLURM_NTASKS.
    let v = vars(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NPROCS", "2"),
        ("SLURM_JOB_NODELIST", "a[1-9]"),
        ("SLURM_STEP_NODELIST", "b[08-10]"),
    ]);
    let l = ok(&v, &LaunchArgs::default(), 0);
    assert_eq!((l.rank, l.size, l.local_rank), (0, 2, None));
    assert_eq!(coordinator(&l), ("b08", 18515, "SLURM_STEP_NODELIST"));
    assert_eq!(l.bootstrap_port(), 0, "no local rank: an OS-assigned port");
}

#[test]
fn open_mpi_and_pmi_need_a_coordinator() {
    let ompi = vars(&[
        ("OMPI_COMM_WORLD_RANK", "3"),
        ("OMPI_COMM_WORLD_SIZE", "9"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
    ]);
    let e = err(&ompi, &LaunchArgs::default(), 0);
    assert!(
        e.contains("Open MPI gives this process's rank (OMPI_COMM_WORLD_RANK=3) but no node list")
            && e.contains("--coordinator HOST[:PORT]")
            && e.contains("XRDMA_COORDINATOR")
            && e.contains("--hostfile"),
        "{e}"
    );
    let args = LaunchArgs {
        coordinator: Some("10.0.0.1:19000".into()),
        ..LaunchArgs::default()
    };
    let l = ok(&ompi, &args, 0);
    assert_eq!((l.rank, l.size, l.local_rank), (3, 9, Some(0)));
    assert_eq!(l.source, Source::OpenMpi);
    assert_eq!(coordinator(&l), ("10.0.0.1", 19000, "--coordinator"));
    assert_eq!(l.bootstrap_port(), 19001);
    // From a hostfile: its first host.
    let l = ok(&ompi, &hostfile("head slots=1\nn1 slots=8\n"), 0);
    assert_eq!(coordinator(&l), ("head", 18515, "the hostfile"));

    let pmi = vars(&[
        ("PMI_RANK", "1"),
        ("PMI_SIZE", "2"),
        ("MPI_LOCALRANKID", "1"),
        ("XRDMA_COORDINATOR", "[fd00::1]:20000"),
    ]);
    let l = ok(&pmi, &LaunchArgs::default(), 0);
    assert_eq!((l.rank, l.size, l.local_rank), (1, 2, Some(1)));
    assert_eq!(l.source, Source::Pmi);
    assert_eq!(coordinator(&l), ("fd00::1", 20000, "XRDMA_COORDINATOR"));
    let e = err(
        &vars(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")]),
        &LaunchArgs::default(),
        0,
    );
    assert!(
        e.contains("PMI gives this process's rank (PMI_RANK=1)"),
        "{e}"
    );
}

#[test]
fn precedence_command_line_then_slurm_then_open_mpi_then_pmi() {
    let all = vars(&[
        ("SLURM_PROCID", "1"),
        ("SLURM_NTASKS", "4"),
        ("SLURM_JOB_NODELIST", "s[1-4]"),
        ("OMPI_COMM_WORLD_RANK", "2"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("PMI_RANK", "3"),
        ("PMI_SIZE", "4"),
        ("XRDMA_COORDINATOR", "envhost"),
    ]);
    // Slurm first among the launchers; XRDMA_COORDINATOR over its node list.
    let l = ok(&all, &LaunchArgs::default(), 0);
    assert_eq!((l.source, l.rank), (Source::Slurm, 1));
    assert_eq!(coordinator(&l), ("envhost", 18515, "XRDMA_COORDINATOR"));
    // --coordinator over the variable.
    let args = LaunchArgs {
        coordinator: Some("clihost:1".into()),
        ..LaunchArgs::default()
    };
    assert_eq!(
        coordinator(&ok(&all, &args, 0)),
        ("clihost", 1, "--coordinator")
    );
    // Without Slurm, Open MPI; without it, PMI.
    let mut v = all.clone();
    v.retain(|k, _| !k.starts_with("SLURM_"));
    assert_eq!(ok(&v, &LaunchArgs::default(), 0).source, Source::OpenMpi);
    v.retain(|k, _| !k.starts_with("OMPI_"));
    assert_eq!(ok(&v, &LaunchArgs::default(), 0).source, Source::Pmi);
    // --rank with a verbs.ranks block: as written, whatever the environment says.
    let args = LaunchArgs {
        rank: Some(0),
        ..LaunchArgs::default()
    };
    let l = ok(&all, &args, 2);
    assert_eq!((l.source, l.rank, l.size), (Source::CommandLine, 0, 2));
    assert_eq!(l.peers, Peers::Scenario);
    assert_eq!(l.bootstrap_port(), 0);
}

#[test]
fn rank_with_a_hostfile_is_a_rendezvous_placed_by_slot() {
    let args = LaunchArgs {
        rank: Some(3),
        ..hostfile("n0\nn1 slots=4\n")
    };
    let l = ok(&Vars::new(), &args, 0);
    assert_eq!((l.rank, l.size, l.local_rank), (3, 5, Some(2)));
    assert_eq!(coordinator(&l), ("n0", 18515, "the hostfile"));
    // With a block, the block's length is the count, the hostfile still says where rank 0 is.
    let l = ok(&Vars::new(), &args, 4);
    assert_eq!(l.size, 4);
    assert!(matches!(l.peers, Peers::Rendezvous(_)));
    let e = err(&Vars::new(), &args, 9);
    assert!(e.contains("the hostfile has 5 slot(s) for 9 ranks"), "{e}");
    // --rank and --coordinator with a block.
    let args = LaunchArgs {
        rank: Some(1),
        coordinator: Some("head".into()),
        hostfile: None,
    };
    assert_eq!(
        coordinator(&ok(&Vars::new(), &args, 2)),
        ("head", 18515, "--coordinator")
    );
}

#[test]
fn ranks_out_of_range_and_missing_counts_are_refused() {
    /// (variables, `verbs.ranks` length, `--rank`, the error wanted)
    type Case<'a> = (&'a [(&'a str, &'a str)], usize, Option<u32>, &'a str);
    let table: &[Case] = &[
        (
            &[
                ("SLURM_PROCID", "9"),
                ("SLURM_NTASKS", "9"),
                ("SLURM_JOB_NODELIST", "n1"),
            ],
            0,
            None,
            "rank 9 is not below the rank count 9 (SLURM_PROCID=9, SLURM_NTASKS=9)",
        ),
        (
            &[("OMPI_COMM_WORLD_RANK", "4"), ("OMPI_COMM_WORLD_SIZE", "2")],
            0,
            None,
            "rank 4 is not below the rank count 2",
        ),
        (
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "0"),
                ("SLURM_JOB_NODELIST", "n1"),
            ],
            0,
            None,
            "says there are 0 ranks",
        ),
        (
            &[("SLURM_PROCID", "0")],
            0,
            None,
            "SLURM_PROCID is set (a Slurm launch) but SLURM_NTASKS is not",
        ),
        (
            &[("PMI_RANK", "0")],
            0,
            None,
            "PMI_RANK is set (a PMI launch) but PMI_SIZE is not",
        ),
        (
            &[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")],
            0,
            None,
            "SLURM_PROCID=\"x\" is not a whole number",
        ),
        (
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_LOCALID", "-1"),
            ],
            0,
            None,
            "SLURM_LOCALID=\"-1\" is not a whole number",
        ),
        (
            &[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_JOB_NODELIST", "n[3-1]"),
            ],
            0,
            None,
            "SLURM_JOB_NODELIST: \"n[3-1]\": [3-1]: the range 3-1 runs backwards",
        ),
        (
            &[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")],
            0,
            None,
            "Slurm gives this process's rank (SLURM_PROCID=1) but no node list",
        ),
        (
            &[],
            2,
            Some(2),
            "rank 2 is not below the rank count 2 (--rank 2, 2 entries in verbs.ranks)",
        ),
        (
            &[],
            0,
            Some(0),
            "--rank 0 without a `verbs.ranks` block needs the rank count",
        ),
    ];
    for (pairs, block, rank, want) in table {
        let args = LaunchArgs {
            rank: *rank,
            ..LaunchArgs::default()
        };
        let v = vars(pairs);
        let e = err(&v, &args, *block);
        assert!(e.contains(want), "{pairs:?}: {e}");
    }
    let e = err(&Vars::new(), &hostfile("n1\n"), 0);
    assert!(
        e.contains("--hostfile says where the ranks run but not which one"),
        "{e}"
    );
    let args = LaunchArgs {
        coordinator: Some("n1".into()),
        ..LaunchArgs::default()
    };
    let e = err(&Vars::new(), &args, 0);
    assert!(e.contains("--coordinator says where the ranks run"), "{e}");
    // A malformed XRDMA_COORDINATOR is an error only where it is read.
    let v = vars(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("XRDMA_COORDINATOR", "a:0"),
    ]);
    let e = err(&v, &LaunchArgs::default(), 0);
    assert!(
        e.contains("XRDMA_COORDINATOR \"a:0\": the port is a number in 1..=65535"),
        "{e}"
    );
}

#[test]
fn coordinators_parse_with_and_without_ports() {
    let table: &[(&str, &str, u16)] = &[
        ("node01", "node01", 18515),
        ("node01:19000", "node01", 19000),
        ("10.0.0.1", "10.0.0.1", 18515),
        ("10.0.0.1:1", "10.0.0.1", 1),
        ("[fd00::1]:19000", "fd00::1", 19000),
        ("[fd00::1]", "fd00::1", 18515),
        ("fd00::1", "fd00::1", 18515),
        (" head ", "head", 18515),
    ];
    for (text, host, port) in table {
        let c = parse_coordinator(text, "--coordinator").unwrap();
        assert_eq!((c.host.as_str(), c.port), (*host, *port), "{text}");
    }
    assert_eq!(
        parse_coordinator("[fd00::1]:7", "x").unwrap().to_string(),
        "[fd00::1]:7"
    );
    for bad in [
        "", ":19000", "a:", "a:0", "a:65536", "a:x", "[fd00::1", "[::1]x", "a b",
    ] {
        assert!(parse_coordinator(bad, "--coordinator").is_err(), "{bad:?}");
    }
}

#[test]
fn bootstrap_ports_leave_the_coordinator_port_free() {
    assert_eq!(bootstrap_port(18515, Some(0)), 18516);
    assert_eq!(bootstrap_port(18515, Some(3)), 18519);
    assert_eq!(bootstrap_port(18515, None), 0);
    assert_eq!(bootstrap_port(65535, Some(0)), 0);
    assert_eq!(bootstrap_port(65000, Some(600)), 0);
    assert_eq!(bootstrap_port(1, Some(70_000)), 0);
}

#[test]
fn variables_are_read_by_name_only() {
    for v in [
        "SLURM_PROCID",
        "SLURM_NTASKS",
        "SLURM_LOCALID",
        "SLURM_JOB_NODELIST",
        "SLURM_STEP_NODELIST",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "PMI_RANK",
        "PMI_SIZE",
        COORDINATOR_VAR,
    ] {
        assert!(VARIABLES.contains(&v), "{v}");
    }
}
