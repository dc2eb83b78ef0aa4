//! The process's CPU time, from `/proc/self/stat` (proc(5)).

use anyhow::{Context, Result};

/// Clock ticks per second of `/proc/<pid>/stat`'s `utime` and `stime`: Linux's `USER_HZ`,
/// which the kernel fixes at 100 for user space on every architecture it exports these
/// fields on (`sysconf(_SC_CLK_TCK)`; proc(5)).
pub const USER_HZ: u64 = 100;

/// `utime` and `stime` (clock ticks) from the text of a `/proc/<pid>/stat` file: fields 14 and
/// 15 (1-based). The second field, the command name in parentheses, may hold spaces and
/// parentheses itself, so fields are counted after the last `)`. `None` when malformed.
pub fn parse_stat(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so field 14 (utime) is index 11.
    let mut f = rest.split_whitespace().skip(11);
    let utime = f.next()?.parse().ok()?;
    let stime = f.next()?.parse().ok()?;
    Some((utime, stime))
}

/// CPU time this process has used in user and kernel mode (all threads), seconds, with the
/// resolution of one clock tick (1 / [`USER_HZ`] s).
///
/// # Errors
/// `/proc/self/stat` cannot be read or parsed (not Linux, or `/proc` not mounted).
pub fn process_cpu_seconds() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    let (u, s) = parse_stat(&text).context("parsing /proc/self/stat")?;
    Ok((u + s) as f64 / USER_HZ as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_the_command_name() {
        // A command name with a space and a ')' in it; utime 1234, stime 56 at fields 14, 15.
        let line = "4242 (a b) c)) S 1 4242 4242 0 -1 4194304 100 0 0 0 1234 56 0 0 20 0 1 0 \
                    300 1000000 200 18446744073709551615";
        assert_eq!(parse_stat(line), Some((1234, 56)));
        assert_eq!(parse_stat("4242 (x) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn this_process_has_a_cpu_time_that_grows() {
        let a = process_cpu_seconds().unwrap();
        // Spin until the count moves by a tick (10 ms of CPU); give up after 10 s of wall
        // time, which only a machine that never schedules this thread would reach.
        let t = std::time::Instant::now();
        let mut b = a;
        while b <= a && t.elapsed().as_secs() < 10 {
            b = process_cpu_seconds().unwrap();
        }
        assert!(b > a, "{b} ≤ {a}");
    }
}
