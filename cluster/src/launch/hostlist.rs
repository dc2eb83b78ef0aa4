//! Slurm's hostlist syntax (`SLURM_JOB_NODELIST`, `SLURM_STEP_NODELIST`): a comma-separated
//! list of names, each with optional bracketed ranges, expanded in order.
//!
//! ```text
//! node[01-04,07],gpu3   ->  node01 node02 node03 node04 node07 gpu3
//! n[08-10]              ->  n08 n09 n10        (the lower bound's width pads every number)
//! rack[1-2]-n[1-2]      ->  rack1-n1 rack1-n2 rack2-n1 rack2-n2
//! ```
//!
//! As Slurm's `scontrol show hostnames` does: a number is zero-padded to the width of the
//! range's lower bound as written (`[1-10]` is not padded, `[01-10]` is), several bracket
//! groups in one name expand as their product (first group outermost), and commas inside
//! brackets separate ranges, not names.

/// Most names one list may expand to: far above any cluster, low enough that a typo such as
/// `n[0-999999999]` is refused instead of filling memory.
pub const MAX_HOSTS: usize = 1 << 20;

/// The names `list` stands for, in order.
///
/// # Errors
/// Why the list is malformed: an empty list or name, an unclosed or stray bracket, nested
/// brackets, a range bound that is not a number, a range whose upper bound is below its lower
/// one, or more than [`MAX_HOSTS`] names.
pub fn expand(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top(list)? {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("{list:?}: an empty name (two commas in a row?)"));
        }
        expand_name(item, &mut out).map_err(|e| format!("{list:?}: {e}"))?;
    }
    Ok(out)
}

/// `list` split at the commas outside brackets; checks that brackets pair up, unnested.
fn split_top(list: &str) -> Result<Vec<&str>, String> {
    if list.trim().is_empty() {
        return Err("an empty host list".into());
    }
    let mut items = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth > 0 => return Err(format!("{list:?}: nested `[` at byte {i}")),
            '[' => depth = 1,
            ']' if depth == 0 => return Err(format!("{list:?}: `]` without `[` at byte {i}")),
            ']' => depth = 0,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(format!("{list:?}: `[` is never closed"));
    }
    items.push(&list[start..]);
    Ok(items)
}

/// Append the names one item (`prefix[ranges]rest`) stands for.
fn expand_name(item: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = item.find('[') else {
        if item.chars().any(char::is_whitespace) {
            return Err(format!("{item:?}: a host name has no spaces"));
        }
        return push(out, item.to_string());
    };
    // split_top checked the pairing: the first `]` after `open` closes it.
    let close = open + item[open..].find(']').ok_or("unclosed `[`")?;
    let (prefix, inner, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let numbers = expand_ranges(inner)?;
    let mut tails = Vec::new();
    if rest.is_empty() {
        tails.push(String::new());
    } else {
        expand_name(rest, &mut tails)?;
    }
    for n in &numbers {
        for t in &tails {
            push(out, format!("{prefix}{n}{t}"))?;
        }
    }
    Ok(())
}

fn push(out: &mut Vec<String>, name: String) -> Result<(), String> {
    if out.len() >= MAX_HOSTS {
        return Err(format!("more than {MAX_HOSTS} names"));
    }
    out.push(name);
    Ok(())
}

/// The numbers of a bracket's inside (`01-04,07`), padded as written.
fn expand_ranges(inner: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in inner.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let number = |s: &str| -> Result<u64, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "[{inner}]: {part:?} is not a number or a range `a-b`"
                ));
            }
            s.parse::<u64>()
                .map_err(|_| format!("[{inner}]: {s} is too large"))
        };
        let (a, b) = (number(lo)?, number(hi)?);
        if b < a {
            return Err(format!("[{inner}]: the range {part} runs backwards"));
        }
        if b - a >= MAX_HOSTS as u64 {
            return Err(format!("[{inner}]: {part} is more than {MAX_HOSTS} names"));
        }
        let width = lo.len();
        for n in a..=b {
            push(&mut out, format!("{n:0width$}"))?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> Vec<String> {
        expand(list).unwrap_or_else(|e| panic!("{list}: {e}"))
    }

    #[test]
    fn expands_ranges_padding_and_plain_names() {
        let table: &[(&str, &[&str])] = &[
            ("localhost", &["localhost"]),
            ("127.0.0.1", &["127.0.0.1"]),
            (
                "node[01-04,07],gpu3",
                &["node01", "node02", "node03", "node04", "node07", "gpu3"],
            ),
            ("n[08-10]", &["n08", "n09", "n10"]),
            ("n[8-10]", &["n8", "n9", "n10"]),
            ("n[098-100]", &["n098", "n099", "n100"]),
            ("a[1,3,5]", &["a1", "a3", "a5"]),
            ("a[2]", &["a2"]),
            ("a[1-2],b,c[3-3]", &["a1", "a2", "b", "c3"]),
            ("x[1-2]y", &["x1y", "x2y"]),
            (
                "rack[1-2]-n[1-2]",
                &["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"],
            ),
            (" a , b ", &["a", "b"]),
        ];
        for (list, want) in table {
            assert_eq!(names(list), *want, "{list}");
        }
    }

    #[test]
    fn malformed_lists_are_refused_with_the_reason() {
        let table: &[(&str, &str)] = &[
            ("", "empty host list"),
            ("a,,b", "empty name"),
            ("n[1-3", "never closed"),
            ("n1-3]", "without `[`"),
            ("n[1-[2]]", "nested"),
            ("n[3-1]", "runs backwards"),
            ("n[a-3]", "not a number"),
            ("n[1-]", "not a number"),
            ("n[]", "not a number"),
            ("n[0-99999999999]", "more than"),
            ("my node", "no spaces"),
        ];
        for (list, want) in table {
            let e = expand(list).unwrap_err();
            assert!(e.contains(want), "{list:?}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_range_expands_to_its_padded_numbers(lo in 0u32..5000, len in 0u32..50, width in 1usize..7) {
            let hi = lo + len;
            let list = format!("h[{lo:0width$}-{hi}]");
            let got = expand(&list).unwrap();
            proptest::prop_assert_eq!(got.len() as u32, len + 1);
            let w = format!("{lo:0width$}").len();
            for (i, name) in got.iter().enumerate() {
                proptest::prop_assert_eq!(name, &format!("h{:0w$}", lo + i as u32));
            }
        }
    }
}
