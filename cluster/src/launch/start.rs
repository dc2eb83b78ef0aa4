//! From a [`Launch`] to a rank ready to run: the rendezvous, the hosts of each rank, and the
//! scenario with its `verbs.ranks` laid out, for [`crate::rank`]'s bootstrap to run over.

use super::{describe, layout, rendezvous, JobSecret, Launch, Peers, SecretError};
use crate::bootstrap::Listener;
use anyhow::{Context, Result};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;
use xrdma_runner::request::Backend;
use xrdma_scenario::Scenario;

/// A launched process, ready to run.
#[derive(Debug)]
pub enum Started {
    /// One rank in all and no `verbs.ranks`: every host in this process, a single-process run.
    Single,
    /// One rank of several.
    Rank {
        /// The scenario, its `verbs.ranks` as the launch laid it out (the file is unchanged;
        /// its hash is what the ranks compare).
        scenario: Box<Scenario>,
        /// This rank.
        rank: u32,
        /// The bootstrap listener the rendezvous bound (`None`: the block's address is bound
        /// when the run starts).
        listener: Option<Listener>,
        /// What each rank runs, one line each ([`describe`]).
        assignment: Vec<String>,
        /// The job's secret, which every bootstrap connection between ranks proves
        /// ([`crate::bootstrap::Auth::Job`]); a throwaway one for a lone rank, which admits no
        /// one.
        secret: JobSecret,
    },
}

/// Lay `sc` out for `launch`: with [`Peers::Scenario`] the block as written; with a
/// rendezvous, meet the other ranks, proving `secret` (the job's, e.g.
/// [`JobSecret::from_env`]; waits bounded by the `verbs.run-timeout`) and give each rank its
/// hosts ([`layout`]) at the address the rendezvous found. Either way the secret goes on to
/// the rank's bootstrap; its error is reported only when there are other ranks.
///
/// # Errors
/// A rank count the workload or the `verbs.ranks` block cannot take (said before any wait),
/// an unreadable scenario file, no job secret ([`SecretError`], saying how to give one), or a
/// [`super::RendezvousError`].
pub fn start(
    sc: &Scenario,
    launch: &Launch,
    backend: Backend,
    secret: Result<JobSecret, SecretError>,
) -> Result<Started> {
    let mut section = sc.verbs.clone().unwrap_or_default();
    let receiver = sc.workload.receiver();
    let coordinator = match &launch.peers {
        Peers::Scenario => {
            return Ok(Started::Rank {
                scenario: Box::new(sc.clone()),
                rank: launch.rank,
                listener: None,
                assignment: describe(&section.ranks, receiver),
                secret: job_secret(secret, launch.rank, section.ranks.len() as u32)?,
            })
        }
        Peers::Rendezvous(_) if launch.size == 1 && section.ranks.is_empty() => {
            return Ok(Started::Single)
        }
        Peers::Rendezvous(c) => c,
    };
    let nowhere = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
    let placeholder = vec![nowhere; launch.size as usize];
    layout(&sc.workload, &section, &placeholder)
        .map_err(|m| anyhow::anyhow!("{}: {m}", sc.source_path.display()))?;
    let secret = job_secret(secret, launch.rank, launch.size)?;
    let hello = crate::rank::hello(sc, launch.rank, backend)?;
    let timeout = Duration::from_nanos(section.run_timeout.as_ps() / 1000);
    let met = rendezvous(launch, coordinator, &hello, &secret, timeout)
        .with_context(|| format!("rank {} of {}", launch.rank, launch.size))?;
    let specs = layout(&sc.workload, &section, &met.table)
        .map_err(|m| anyhow::anyhow!("{}: {m}", sc.source_path.display()))?;
    let assignment = describe(&specs, receiver);
    section.ranks = specs;
    let mut scenario = sc.clone();
    scenario.verbs = Some(section);
    Ok(Started::Rank {
        scenario: Box::new(scenario),
        rank: launch.rank,
        listener: Some(met.listener),
        assignment,
        secret,
    })
}

/// The job's secret for rank `rank` of `size`: a lone rank admits no one, so it needs none of
/// the job's and gets a throwaway one.
///
/// # Errors
/// No usable secret for a rank of several, naming the rank and saying how to give one.
fn job_secret(secret: Result<JobSecret, SecretError>, rank: u32, size: u32) -> Result<JobSecret> {
    match secret {
        Err(_) if size <= 1 => Ok(JobSecret::generate()?),
        s => s.with_context(|| format!("rank {rank} of {size}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::{Coordinator, Source};
    use std::thread;

    fn launch(rank: u32, size: u32, port: u16) -> Launch {
        Launch {
            rank,
            size,
            local_rank: None,
            source: Source::Slurm,
            peers: Peers::Rendezvous(Coordinator {
                host: "127.0.0.1".into(),
                port,
                from: "SLURM_JOB_NODELIST",
            }),
        }
    }

    #[test]
    fn launched_ranks_lay_the_scenario_out_alike() {
        let dir = std::env::temp_dir().join(format!("xrdma-launch-start-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.yaml");
        let text = "name: s\nworkload:\n  incast: { senders: 4, receiver: 0, messages: [ { size: 1 } ] }\nverbs: { run-timeout: 10s }\n";
        std::fs::write(&path, text).unwrap();
        let sc = xrdma_scenario::load(&path).unwrap();
        let secret = JobSecret::generate().unwrap();
        // One rank: a single-process run, no rendezvous, no secret needed.
        assert!(matches!(
            start(
                &sc,
                &launch(0, 1, 1),
                Backend::Verbs,
                Err(SecretError::Missing)
            )
            .unwrap(),
            Started::Single
        ));
        // Too many ranks: refused before any wait.
        let e = start(&sc, &launch(1, 6, 1), Backend::Verbs, Ok(secret.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("6 ranks, but the workload has 5 hosts"), "{e}");
        // No secret: refused before any wait, saying how to give one.
        let e = format!(
            "{:#}",
            start(
                &sc,
                &launch(1, 3, 1),
                Backend::Verbs,
                Err(SecretError::Missing)
            )
            .unwrap_err()
        );
        assert!(
            e.contains("rank 1 of 3") && e.contains("XRDMA_JOB_SECRET"),
            "{e}"
        );
        let port = Listener::bind("127.0.0.1:0".parse().unwrap())
            .unwrap()
            .local_addr()
            .port();
        let others: Vec<_> = (1..3)
            .map(|r| {
                let (sc, secret) = (sc.clone(), secret.clone());
                thread::spawn(move || {
                    start(&sc, &launch(r, 3, port), Backend::Verbs, Ok(secret)).unwrap()
                })
            })
            .collect();
        let mut all = vec![start(&sc, &launch(0, 3, port), Backend::Verbs, Ok(secret)).unwrap()];
        all.extend(others.into_iter().map(|t| t.join().unwrap()));
        let mut layouts = Vec::new();
        for (r, s) in all.into_iter().enumerate() {
            let Started::Rank {
                scenario,
                rank,
                listener,
                assignment,
                ..
            } = s
            else {
                panic!("rank {r}: a single-process run")
            };
            assert_eq!(rank, r as u32);
            let ranks = scenario.verbs.clone().unwrap().ranks;
            assert_eq!(
                listener.unwrap().local_addr().port(),
                ranks[r].address.port()
            );
            assert_eq!(assignment.len(), 3);
            layouts.push(ranks);
        }
        assert!(layouts.iter().all(|l| *l == layouts[0]));
        let hosts: Vec<Vec<u32>> = layouts[0].iter().map(|s| s.hosts.clone()).collect();
        assert_eq!(hosts, vec![vec![0], vec![1, 2], vec![3, 4]]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ranks_at_the_block_addresses_need_the_job_secret_unless_alone() {
        let block = |ranks: &str| {
            let text = format!(
                "name: s\nworkload:\n  incast: {{ senders: 1, receiver: 0, messages: [ {{ size: 1 }} ] }}\nverbs:\n  ranks:\n{ranks}"
            );
            xrdma_scenario::parse(&text, std::path::Path::new("s.yaml")).unwrap()
        };
        let at_block = |rank, size| Launch {
            rank,
            size,
            local_rank: None,
            source: Source::CommandLine,
            peers: Peers::Scenario,
        };
        let two = block(
            "    - { address: \"127.0.0.1:1\", hosts: [0] }\n    - { address: \"127.0.0.1:2\", hosts: [1] }\n",
        );
        let e = format!(
            "{:#}",
            start(
                &two,
                &at_block(1, 2),
                Backend::Verbs,
                Err(SecretError::Missing)
            )
            .unwrap_err()
        );
        assert!(
            e.contains("rank 1 of 2") && e.contains("XRDMA_JOB_SECRET"),
            "{e}"
        );
        let secret = JobSecret::generate().unwrap();
        let Started::Rank { secret: got, .. } =
            start(&two, &at_block(1, 2), Backend::Verbs, Ok(secret.clone())).unwrap()
        else {
            panic!("a single-process run")
        };
        assert_eq!(got.to_hex(), secret.to_hex());
        let one = block("    - { address: \"127.0.0.1:1\", hosts: [0, 1] }\n");
        assert!(matches!(
            start(
                &one,
                &at_block(0, 1),
                Backend::Verbs,
                Err(SecretError::Missing)
            )
            .unwrap(),
            Started::Rank { .. }
        ));
    }
}
