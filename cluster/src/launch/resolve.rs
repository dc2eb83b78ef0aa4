//! The launch as the command line and the launcher variables give it: pure functions of a
//! [`Vars`] map and the [`LaunchArgs`] (the precedence is in the [module docs](super)).

use super::{
    hostlist, Coordinator, Launch, LaunchArgs, Peers, Source, Vars, COORDINATOR_VAR,
    DEFAULT_COORDINATOR_PORT,
};
use std::net::Ipv6Addr;

/// Why the launch cannot be worked out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// A variable that is not a whole number.
    #[error("{var}={value:?} is not a whole number")]
    NotANumber {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A launcher variable without its companion.
    #[error("{have} is set (a {launcher} launch) but {missing} is not")]
    Missing {
        /// The launcher.
        launcher: Source,
        /// The variable that is set.
        have: &'static str,
        /// The variable that is missing.
        missing: &'static str,
    },
    /// A rank count of zero.
    #[error("{what} says there are 0 ranks")]
    NoRanks {
        /// Where the count came from.
        what: String,
    },
    /// A rank at or past the rank count.
    #[error("rank {rank} is not below the rank count {size} ({what})")]
    RankOutOfRange {
        /// The rank.
        rank: u32,
        /// The count.
        size: u32,
        /// Where both came from.
        what: String,
    },
    /// A malformed Slurm node list.
    #[error("{var}: {reason}")]
    Hostlist {
        /// The variable.
        var: &'static str,
        /// What is wrong ([`hostlist::expand`]).
        reason: String,
    },
    /// A malformed `HOST[:PORT]`.
    #[error("{from} {value:?}: {reason}")]
    Coordinator {
        /// `--coordinator` or `XRDMA_COORDINATOR`.
        from: &'static str,
        /// The text.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A launcher that gives the rank but not where rank 0 is.
    #[error(
        "{launcher} gives this process's rank ({var}={rank}) but no node list: name rank 0's \
         host with --coordinator HOST[:PORT] or {COORDINATOR_VAR}=HOST[:PORT] (exported to every \
         rank, e.g. `mpirun -x {COORDINATOR_VAR}`), or give --hostfile FILE (rank 0 runs on its \
         first host)"
    )]
    NoCoordinator {
        /// The launcher.
        launcher: Source,
        /// Its rank variable.
        var: &'static str,
        /// The rank.
        rank: u32,
    },
    /// `--rank` with no way to know the rank count.
    #[error(
        "--rank {rank} without a `verbs.ranks` block needs the rank count: give --hostfile FILE \
         (its slots are the ranks), or start under srun or mpirun without --rank"
    )]
    NoRankCount {
        /// The rank.
        rank: u32,
    },
    /// `--hostfile` or `--coordinator` with nothing saying which rank this is.
    #[error(
        "{given} says where the ranks run but not which one this process is: add --rank R, or \
         start it under srun or mpirun (which set SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK)"
    )]
    NoRank {
        /// `--hostfile` or `--coordinator`.
        given: &'static str,
    },
    /// A hostfile with fewer slots than ranks.
    #[error("the hostfile has {slots} slot(s) for {size} ranks")]
    HostfileTooSmall {
        /// Its slots.
        slots: u32,
        /// The rank count.
        size: u32,
    },
}

/// Parse `HOST[:PORT]` (`node01`, `node01:19000`, `10.0.0.1`, `[fd00::1]:19000`, `fd00::1`);
/// the port defaults to [`DEFAULT_COORDINATOR_PORT`]. `from` names the option or variable,
/// for the error and [`Coordinator::from`].
///
/// # Errors
/// [`LaunchError::Coordinator`]: an empty host, a space, an unclosed `[`, or a port that is
/// not in 1..=65535.
pub fn parse_coordinator(text: &str, from: &'static str) -> Result<Coordinator, LaunchError> {
    let err = |reason: &str| LaunchError::Coordinator {
        from,
        value: text.to_string(),
        reason: reason.to_string(),
    };
    let t = text.trim();
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| err("`[` is never closed"))?;
        match after {
            "" => (h, None),
            p => (
                h,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| err("expected `:PORT` after `]`"))?,
                ),
            ),
        }
    } else if t.parse::<Ipv6Addr>().is_ok() {
        (t, None)
    } else {
        match t.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (t, None),
        }
    };
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(err("expected HOST[:PORT] with a host name or address"));
    }
    let port = match port {
        None => DEFAULT_COORDINATOR_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| err("the port is a number in 1..=65535"))?,
    };
    Ok(Coordinator {
        host: host.to_string(),
        port,
        from,
    })
}

fn number(vars: &Vars, var: &'static str) -> Result<Option<u32>, LaunchError> {
    vars.get(var)
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| LaunchError::NotANumber {
                    var,
                    value: v.clone(),
                })
        })
        .transpose()
}

/// A launcher's rank, count and local rank variables, read.
struct Found {
    source: Source,
    rank_var: &'static str,
    size_var: &'static str,
    rank: u32,
    size: u32,
    local: Option<u32>,
}

/// Whether this process is a Slurm batch script itself rather than a task of a job step:
/// `sbatch` exports `SLURM_JOB_ID` and also `SLURM_PROCID=0` and `SLURM_NTASKS` (the
/// allocation's) to the script, but only `srun` sets `SLURM_STEP_ID` for the tasks it starts.
/// A batch script that runs `xrdma` without `srun` is one process, not rank 0 of a launch
/// whose other ranks never start.
fn in_slurm_batch_script(vars: &Vars) -> bool {
    vars.contains_key("SLURM_JOB_ID") && !vars.contains_key("SLURM_STEP_ID")
}

/// The first launcher whose rank variable is set.
fn launcher(vars: &Vars) -> Result<Option<Found>, LaunchError> {
    // (launcher, rank, counts in order of preference, local rank)
    const LAUNCHERS: &[(Source, &str, &[&str], &str)] = &[
        (
            Source::Slurm,
            "SLURM_PROCID",
            &["SLURM_NTASKS", "SLURM_NPROCS"],
            "SLURM_LOCALID",
        ),
        (
            Source::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            &["OMPI_COMM_WORLD_SIZE"],
            "OMPI_COMM_WORLD_LOCAL_RANK",
        ),
        (Source::Pmi, "PMI_RANK", &["PMI_SIZE"], "MPI_LOCALRANKID"),
    ];
    for &(source, rank_var, sizes, local) in LAUNCHERS {
        if source == Source::Slurm && in_slurm_batch_script(vars) {
            continue;
        }
        let Some(rank) = number(vars, rank_var)? else {
            continue;
        };
        let mut size = None;
        for &s in sizes {
            if let Some(n) = number(vars, s)? {
                size = Some((s, n));
                break;
            }
        }
        let (size_var, size) = size.ok_or(LaunchError::Missing {
            launcher: source,
            have: rank_var,
            missing: sizes[0],
        })?;
        return Ok(Some(Found {
            source,
            rank_var,
            size_var,
            rank,
            size,
            local: number(vars, local)?,
        }));
    }
    Ok(None)
}

/// The coordinator `--coordinator`, then `XRDMA_COORDINATOR`, name; `None` when neither.
fn explicit_coordinator(
    vars: &Vars,
    args: &LaunchArgs,
) -> Result<Option<Coordinator>, LaunchError> {
    if let Some(c) = &args.coordinator {
        return parse_coordinator(c, "--coordinator").map(Some);
    }
    vars.get(COORDINATOR_VAR)
        .map(|c| parse_coordinator(c, COORDINATOR_VAR))
        .transpose()
}

/// The hostfile's first host, on the default port.
fn hostfile_coordinator(args: &LaunchArgs) -> Option<Coordinator> {
    args.hostfile.as_ref().map(|f| Coordinator {
        host: f.first().to_string(),
        port: DEFAULT_COORDINATOR_PORT,
        from: "the hostfile",
    })
}

/// Slurm's node list (the step's, else the job's), expanded; `None` when neither is set.
fn slurm_first_node(vars: &Vars) -> Result<Option<Coordinator>, LaunchError> {
    for var in ["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"] {
        if let Some(list) = vars.get(var) {
            let nodes =
                hostlist::expand(list).map_err(|reason| LaunchError::Hostlist { var, reason })?;
            return Ok(nodes.into_iter().next().map(|host| Coordinator {
                host,
                port: DEFAULT_COORDINATOR_PORT,
                from: var,
            }));
        }
    }
    Ok(None)
}

/// This process's launch: `Ok(None)` when nothing makes it one rank of several (no `--rank`,
/// `--hostfile`, `--coordinator`, nor a launcher's rank variable): a single-process run.
/// `ranks_block` is the length of the scenario's `verbs.ranks` (0: none).
///
/// # Errors
/// See [`LaunchError`]: a malformed variable, node list or `HOST[:PORT]`, a rank past the
/// count, a launcher without a count, or no way to find rank 0.
pub fn resolve(
    vars: &Vars,
    args: &LaunchArgs,
    ranks_block: usize,
) -> Result<Option<Launch>, LaunchError> {
    let (found, peers) = if let Some(rank) = args.rank {
        let (size, what) = match (&args.hostfile, ranks_block) {
            (_, n) if n > 0 => (
                u32::try_from(n).unwrap_or(u32::MAX),
                format!("--rank {rank}, {n} entries in verbs.ranks"),
            ),
            (Some(f), _) => (
                f.slots(),
                format!("--rank {rank}, {} slots in the hostfile", f.slots()),
            ),
            (None, _) => return Err(LaunchError::NoRankCount { rank }),
        };
        let local = args
            .hostfile
            .as_ref()
            .and_then(|f| f.place(rank))
            .map(|(_, l)| l);
        // Only --coordinator and --hostfile turn a --rank run into a rendezvous; the
        // variable alone does not override a `verbs.ranks` block.
        let peers = if args.coordinator.is_some() || args.hostfile.is_some() {
            let c = explicit_coordinator(vars, args)?.or_else(|| hostfile_coordinator(args));
            Peers::Rendezvous(c.ok_or(LaunchError::NoRankCount { rank })?)
        } else {
            Peers::Scenario
        };
        let found = Found {
            source: Source::CommandLine,
            rank_var: "--rank",
            size_var: "",
            rank,
            size,
            local,
        };
        check_range(&found, &what)?;
        (found, peers)
    } else if let Some(found) = launcher(vars)? {
        let what = format!(
            "{}={}, {}={}",
            found.rank_var, found.rank, found.size_var, found.size
        );
        check_range(&found, &what)?;
        let coordinator = match explicit_coordinator(vars, args)? {
            Some(c) => Some(c),
            None if found.source == Source::Slurm => slurm_first_node(vars)?,
            None => None,
        };
        let coordinator = coordinator.or_else(|| hostfile_coordinator(args)).ok_or(
            LaunchError::NoCoordinator {
                launcher: found.source,
                var: found.rank_var,
                rank: found.rank,
            },
        )?;
        (found, Peers::Rendezvous(coordinator))
    } else if args.hostfile.is_some() {
        return Err(LaunchError::NoRank {
            given: "--hostfile",
        });
    } else if args.coordinator.is_some() {
        return Err(LaunchError::NoRank {
            given: "--coordinator",
        });
    } else {
        return Ok(None);
    };
    if let (Some(f), Peers::Rendezvous(_)) = (&args.hostfile, &peers) {
        if f.slots() < found.size {
            return Err(LaunchError::HostfileTooSmall {
                slots: f.slots(),
                size: found.size,
            });
        }
    }
    Ok(Some(Launch {
        rank: found.rank,
        size: found.size,
        local_rank: found.local,
        source: found.source,
        peers,
    }))
}

fn check_range(found: &Found, what: &str) -> Result<(), LaunchError> {
    if found.size == 0 {
        return Err(LaunchError::NoRanks {
            what: what.to_string(),
        });
    }
    if found.rank >= found.size {
        return Err(LaunchError::RankOutOfRange {
            rank: found.rank,
            size: found.size,
            what: what.to_string(),
        });
    }
    Ok(())
}
