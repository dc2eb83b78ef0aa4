//! Which scenario hosts each rank runs when the launcher, not the file, says how many ranks
//! there are.
//!
//! The rule, for a workload of `H` hosts (one receiver or echo server, `H - 1` senders or
//! clients) launched as `N` ranks:
//!
//! - `N = 1`: rank 0 runs every host (a single-process run).
//! - `N ≥ 2`: rank 0 runs the receiver alone; the senders, in ascending host order, are cut
//!   into `N - 1` contiguous blocks for ranks 1 to `N - 1`, as even as can be (the first
//!   `(H - 1) mod (N - 1)` blocks have one more). `srun -N 9` on an 8-to-1 incast puts one
//!   host on each node; `-N 3` gives ranks 1 and 2 four senders each.
//! - `N > H` is refused: a rank would run nothing.
//!
//! The scenario file stays as the simulator reads it. A `verbs.ranks` block, when there is
//! one, says which hosts each rank runs instead (and then `N` must be its length); its
//! addresses give way to the ones the launcher's rendezvous found ([`layout`]).

use std::net::SocketAddr;
use xrdma_scenario::{RankSpec, VerbsSection, Workload};

/// The hosts of each rank under the rule above: `N` lists, rank order, each ascending but
/// rank 0's (the receiver first, then nothing when `N ≥ 2`).
///
/// # Errors
/// `n` is 0, or more than the workload's hosts.
pub fn assign(workload: &Workload, n: u32) -> Result<Vec<Vec<u32>>, String> {
    split(workload.hosts(), workload.receiver(), n)
}

/// [`assign`] for `hosts` hosts with receiver `receiver`.
fn split(hosts: u32, receiver: u32, n: u32) -> Result<Vec<Vec<u32>>, String> {
    if n == 0 {
        return Err("a run has at least one rank".into());
    }
    if n > hosts {
        return Err(format!(
            "{n} ranks, but the workload has {hosts} hosts: at most {hosts} ranks (the \
             receiver's and one per sender), or a `verbs.ranks` block"
        ));
    }
    if n == 1 {
        return Ok(vec![(0..hosts).collect()]);
    }
    let senders: Vec<u32> = (0..hosts).filter(|&h| h != receiver).collect();
    let blocks = n as usize - 1;
    let (q, rem) = (senders.len() / blocks, senders.len() % blocks);
    let mut out = vec![vec![receiver]];
    let mut at = 0;
    for b in 0..blocks {
        let len = q + usize::from(b < rem);
        out.push(senders[at..at + len].to_vec());
        at += len;
    }
    Ok(out)
}

/// The rank that runs the receiver (and so writes the report) when the scenario is launched
/// as `n` ranks: rank 0 under the rule above, the block's choice when `section` has `ranks`.
pub fn report_rank(workload: &Workload, section: &VerbsSection) -> u32 {
    section.rank_of(workload.receiver()).unwrap_or(0)
}

/// Every rank's [`RankSpec`]: the hosts of `section`'s `ranks` block when it has one, else
/// [`assign`]'s; the address of rank `r` is always `table[r]`, the launcher's (a block's
/// addresses are not used).
///
/// # Errors
/// A block whose length is not the launcher's rank count, or [`assign`]'s errors.
pub fn layout(
    workload: &Workload,
    section: &VerbsSection,
    table: &[SocketAddr],
) -> Result<Vec<RankSpec>, String> {
    let n = u32::try_from(table.len()).map_err(|_| "too many ranks".to_string())?;
    let hosts = if section.ranks.is_empty() {
        assign(workload, n)?
    } else if section.ranks.len() == table.len() {
        section.ranks.iter().map(|r| r.hosts.clone()).collect()
    } else {
        return Err(format!(
            "verbs.ranks lists {} ranks, but the launcher started {n}",
            section.ranks.len()
        ));
    };
    Ok(hosts
        .into_iter()
        .zip(table)
        .map(|(hosts, &address)| RankSpec { address, hosts })
        .collect())
}

/// One line per rank saying what it runs: `rank 1 at 10.0.0.2:18516: hosts 1-4 (senders)`.
pub fn describe(specs: &[RankSpec], receiver: u32) -> Vec<String> {
    specs
        .iter()
        .enumerate()
        .map(|(r, s)| {
            let role = match (s.hosts.contains(&receiver), s.hosts.len()) {
                (true, 1) => " (receiver)".to_string(),
                (true, n) => format!(" (receiver {receiver} and {} sender(s))", n - 1),
                (false, 1) => " (sender)".to_string(),
                (false, _) => " (senders)".to_string(),
            };
            let noun = if s.hosts.len() == 1 { "host" } else { "hosts" };
            format!(
                "rank {r} at {}: {noun} {}{role}",
                s.address,
                ranges(&s.hosts)
            )
        })
        .collect()
}

/// `hosts` written with runs collapsed: `[0, 1, 2, 3, 7]` is `0-3,7`.
fn ranges(hosts: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < hosts.len() {
        let mut j = i;
        while j + 1 < hosts.len() && hosts[j + 1] == hosts[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", hosts[i], hosts[j])
        } else {
            hosts[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::Path;

    fn incast(senders: u32, receiver: u32, verbs: &str) -> xrdma_scenario::Scenario {
        let text = format!(
            "name: t\nworkload:\n  incast: {{ senders: {senders}, receiver: {receiver}, messages: [ {{ size: 4KiB }} ] }}\n{verbs}"
        );
        xrdma_scenario::parse(&text, Path::new("t.yaml")).unwrap()
    }

    fn table(n: u16) -> Vec<SocketAddr> {
        (0..n)
            .map(|r| SocketAddr::from(([10, 0, 0, 1 + r as u8], 18516)))
            .collect()
    }

    #[test]
    fn the_receiver_alone_on_rank_0_and_senders_in_blocks() {
        let sc = incast(8, 0, "");
        let w = &sc.workload;
        assert_eq!(assign(w, 1).unwrap(), vec![(0..9).collect::<Vec<u32>>()]);
        assert_eq!(assign(w, 2).unwrap(), vec![vec![0], (1..9).collect()]);
        assert_eq!(
            assign(w, 3).unwrap(),
            vec![vec![0], vec![1, 2, 3, 4], vec![5, 6, 7, 8]]
        );
        assert_eq!(
            assign(w, 4).unwrap(),
            vec![vec![0], vec![1, 2, 3], vec![4, 5, 6], vec![7, 8]]
        );
        let nine = assign(w, 9).unwrap();
        assert_eq!(nine, (0..9).map(|h| vec![h]).collect::<Vec<_>>());
        let e = assign(w, 10).unwrap_err();
        assert!(e.contains("10 ranks, but the workload has 9 hosts"), "{e}");
        assert!(assign(w, 0).is_err());
        // A receiver in the middle: senders skip it.
        let sc = incast(4, 2, "");
        assert_eq!(
            assign(&sc.workload, 3).unwrap(),
            vec![vec![2], vec![0, 1], vec![3, 4]]
        );
    }

    proptest! {
        #[test]
        fn every_host_is_on_exactly_one_rank(hosts in 2u32..300, recv in any::<u32>(), n in any::<u32>()) {
            let receiver = recv % hosts;
            let n = 1 + n % hosts;
            let ranks = split(hosts, receiver, n).unwrap();
            prop_assert_eq!(ranks.len() as u32, n);
            let mut all: Vec<u32> = ranks.iter().flatten().copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..hosts).collect::<Vec<u32>>());
            prop_assert!(ranks.iter().all(|r| !r.is_empty()));
            prop_assert!(ranks[0].contains(&receiver));
            if n >= 2 {
                prop_assert_eq!(&ranks[0], &vec![receiver]);
                let lens: Vec<usize> = ranks[1..].iter().map(Vec::len).collect();
                let (lo, hi) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
                prop_assert!(hi - lo <= 1, "uneven blocks {:?}", lens);
            }
            prop_assert!(split(hosts, receiver, hosts + 1).is_err());
        }
    }

    #[test]
    fn a_ranks_block_gives_the_hosts_and_the_launcher_the_addresses() {
        let sc = incast(
            3,
            1,
            "verbs:\n  ranks:\n    - { address: \"192.0.2.1:9\", hosts: [2, 0] }\n    - { address: \"192.0.2.2:9\", hosts: [1, 3] }\n",
        );
        let v = sc.verbs.clone().unwrap();
        let t = table(2);
        let specs = layout(&sc.workload, &v, &t).unwrap();
        assert_eq!(specs[0].hosts, vec![2, 0]);
        assert_eq!(specs[1].hosts, vec![1, 3]);
        assert_eq!(specs[0].address, t[0], "the launcher's address wins");
        assert_eq!(specs[1].address, t[1]);
        assert_eq!(report_rank(&sc.workload, &v), 1);
        let e = layout(&sc.workload, &v, &table(3)).unwrap_err();
        assert!(
            e.contains("verbs.ranks lists 2 ranks, but the launcher started 3"),
            "{e}"
        );
        // Without a block: the rule, and rank 0 writes the report.
        let sc = incast(3, 1, "");
        let v = VerbsSection::default();
        let specs = layout(&sc.workload, &v, &table(2)).unwrap();
        assert_eq!(specs[0].hosts, vec![1]);
        assert_eq!(specs[1].hosts, vec![0, 2, 3]);
        assert_eq!(report_rank(&sc.workload, &v), 0);
        assert_eq!(
            describe(&specs, 1),
            vec![
                "rank 0 at 10.0.0.1:18516: host 1 (receiver)".to_string(),
                "rank 1 at 10.0.0.2:18516: hosts 0,2-3 (senders)".to_string(),
            ]
        );
    }
}
