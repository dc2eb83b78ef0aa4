//! Hostfiles as `mpirun --hostfile` reads them: one host a line, an optional `slots=N`
//! (default 1), `#` comments, blank lines ignored.
//!
//! ```text
//! # rank 0 (the receiver) first
//! node01 slots=1
//! node02 slots=4   # four senders
//! node03 slots=4 max_slots=8
//! ```
//!
//! Ranks fill the hosts' slots in order, as Open MPI maps by slot: with the file above rank 0
//! is on `node01`, ranks 1–4 on `node02` (local ranks 0–3), ranks 5–8 on `node03`. A host
//! written twice has the slots of both lines, at its first place. `max_slots` is accepted
//! and ignored (oversubscription is the launcher's business).

/// One host of a hostfile and its slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSlots {
    /// The host name or address, as written.
    pub host: String,
    /// Ranks it runs, ≥ 1.
    pub slots: u32,
}

/// A parsed hostfile: its hosts in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hostfile {
    /// The hosts, first written first; non-empty.
    pub hosts: Vec<HostSlots>,
}

/// A hostfile line that is not `HOST [slots=N] [max_slots=N]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct HostfileError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl Hostfile {
    /// Parse a hostfile's text.
    ///
    /// # Errors
    /// A line with an unknown field, a `slots` that is not a whole number ≥ 1, a total of
    /// slots above `u32::MAX`, or a file with no host.
    pub fn parse(text: &str) -> Result<Self, HostfileError> {
        let mut hosts: Vec<HostSlots> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |reason: String| HostfileError { line, reason };
            let body = raw.split('#').next().unwrap_or("");
            let mut words = body.split_whitespace();
            let Some(host) = words.next() else {
                continue;
            };
            if host.contains('=') {
                return Err(err(format!("{host:?}: a line starts with the host name")));
            }
            let mut slots = 1u32;
            for w in words {
                let (key, value) = w
                    .split_once('=')
                    .ok_or_else(|| err(format!("{w:?}: expected `slots=N`")))?;
                let n = value.parse::<u32>().ok().filter(|&n| n >= 1);
                match (key, n) {
                    ("slots", Some(n)) => slots = n,
                    ("max_slots" | "max-slots", Some(_)) => {}
                    ("slots" | "max_slots" | "max-slots", None) => {
                        return Err(err(format!("{w}: {key} is a whole number ≥ 1")))
                    }
                    _ => {
                        return Err(err(format!(
                            "{w:?}: unknown field (a host takes `slots=N`)"
                        )))
                    }
                }
            }
            match hosts.iter_mut().find(|h| h.host == host) {
                Some(h) => {
                    h.slots = h
                        .slots
                        .checked_add(slots)
                        .ok_or_else(|| err(format!("{host} has more than {} slots", u32::MAX)))?;
                }
                None => hosts.push(HostSlots {
                    host: host.to_string(),
                    slots,
                }),
            }
        }
        if hosts.is_empty() {
            return Err(HostfileError {
                line: 0,
                reason: "no host in the file".into(),
            });
        }
        let file = Hostfile { hosts };
        if file
            .hosts
            .iter()
            .try_fold(0u32, |a, h| a.checked_add(h.slots))
            .is_none()
        {
            return Err(HostfileError {
                line: 0,
                reason: format!("more than {} slots in all", u32::MAX),
            });
        }
        Ok(file)
    }

    /// Slots in all: the rank count the file stands for.
    pub fn slots(&self) -> u32 {
        self.hosts.iter().map(|h| h.slots).sum()
    }

    /// The host of rank `rank` and its local rank there, filling slots in order; `None`
    /// when `rank` is past the last slot.
    pub fn place(&self, rank: u32) -> Option<(&str, u32)> {
        let mut first = 0u32;
        for h in &self.hosts {
            if rank < first + h.slots {
                return Some((&h.host, rank - first));
            }
            first += h.slots;
        }
        None
    }

    /// The host rank 0 runs on: the first one.
    pub fn first(&self) -> &str {
        &self.hosts[0].host
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_slots_and_comments() {
        let f = Hostfile::parse(
            "# the receiver first\nnode01\n\n  node02 slots=4   # senders\nnode03 slots=2 max_slots=8\nnode02 slots=1\n",
        )
        .unwrap();
        let got: Vec<(&str, u32)> = f.hosts.iter().map(|h| (h.host.as_str(), h.slots)).collect();
        assert_eq!(got, vec![("node01", 1), ("node02", 5), ("node03", 2)]);
        assert_eq!(f.slots(), 8);
        assert_eq!(f.first(), "node01");
        assert_eq!(f.place(0), Some(("node01", 0)));
        assert_eq!(f.place(1), Some(("node02", 0)));
        assert_eq!(f.place(5), Some(("node02", 4)));
        assert_eq!(f.place(6), Some(("node03", 0)));
        assert_eq!(f.place(7), Some(("node03", 1)));
        assert_eq!(f.place(8), None);
    }

    #[test]
    fn malformed_lines_name_their_number() {
        let table: &[(&str, usize, &str)] = &[
            ("", 0, "no host"),
            ("# only a comment\n\n", 0, "no host"),
            ("a\nb slots=0\n", 2, "whole number"),
            ("a slots=x\n", 1, "whole number"),
            ("a cpus=2\n", 1, "unknown field"),
            ("a 4\n", 1, "expected `slots=N`"),
            ("slots=2\n", 1, "starts with the host name"),
            ("a slots=4294967295\nb slots=1\n", 0, "slots in all"),
        ];
        for (text, line, want) in table {
            let e = Hostfile::parse(text).unwrap_err();
            assert_eq!(e.line, *line, "{text:?}: {e}");
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
    }
}
