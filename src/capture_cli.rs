//! `xrdma run --capture HOSTS` and the scenario's `sim.capture`: the hosts given on the
//! command line (the run itself is a [`xrdma_runner::request::RunRequest`] with
//! `capture_hosts`), and one pcap file per captured host link written into the run's
//! directory (staged and committed with the run's other files), named in the result and its
//! summary.

use anyhow::{Context, Result};
use std::path::PathBuf;
use xrdma_reports::{CaptureFile, RunDir, RunResult};
use xrdma_sim::LinkCapture;

/// The hosts of `--capture`: a comma-separated list of host indices (`0,8`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureHosts(pub Vec<u32>);

/// Parse `--capture`'s value.
///
/// # Errors
/// An empty list, an item that is not a host index, or a host listed twice.
pub fn parse_hosts(s: &str) -> Result<CaptureHosts, String> {
    let mut hosts = Vec::new();
    for item in s.split(',').map(str::trim) {
        let h: u32 = item
            .parse()
            .map_err(|_| format!("{item:?} is not a host index (write e.g. `0,8`)"))?;
        if hosts.contains(&h) {
            return Err(format!("host {h} is listed twice"));
        }
        hosts.push(h);
    }
    Ok(CaptureHosts(hosts))
}

/// The file name of host `host`'s capture ([`CaptureFile::name_for`]).
pub fn file_name(host: u32) -> String {
    CaptureFile::name_for(host)
}

/// Stage each capture as `capture-host<H>.pcap` in `dir`'s staging directory (the commit of
/// the run moves it in) and list it in `result`'s simulator section; the paths the files will
/// have in the results directory.
///
/// # Errors
/// A file that cannot be written.
pub fn write(dir: &RunDir, result: &mut RunResult, caps: &[LinkCapture]) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for c in caps {
        let name = file_name(c.host);
        let staged = dir.staging().join(&name);
        let path = dir.dir().join(&name);
        xrdma_reports::write_atomic(&staged, &c.pcap)
            .with_context(|| format!("writing the capture {}", path.display()))?;
        if let Some(sim) = result.sim.as_mut() {
            sim.captures.push(CaptureFile {
                host: c.host,
                file: name,
                packets: c.packets,
                skipped: c.skipped,
            });
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse() {
        assert_eq!(parse_hosts("0, 8"), Ok(CaptureHosts(vec![0, 8])));
        assert!(parse_hosts("").is_err());
        assert!(parse_hosts("1,x").is_err());
        assert!(parse_hosts("3,3").unwrap_err().contains("twice"));
    }
}
