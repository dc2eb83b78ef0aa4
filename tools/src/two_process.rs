//! The two-process form of the perftest-style tools (`xrdma ping | bw --server | --connect`):
//! one end per process, one worker each, meeting through the TCP bootstrap.

use crate::{out, outln};
use anyhow::{bail, Result};
use std::process::ExitCode;

/// A perftest-style tool run as two processes: its options.
pub enum TwoProcess<'a> {
    /// `xrdma ping --server | --connect`: the options, the verb, `--json`.
    Ping(&'a crate::ping::PingOptions, crate::verb_ping::Verb, bool),
    /// `xrdma bw --server | --connect`.
    Bw(&'a crate::bw::BwOptions),
}

/// One end of a two-process tool on the RDMA device: the server when `server` is
/// Some(bind address), else the client of the server at `connect`; each waits at most
/// `timeout` for the other end and for the run.
///
/// # Errors
/// Neither `server` nor `connect`; no device (or a build without the verbs backend); the
/// bootstrap or a verb fails.
pub fn two_process(
    tool: TwoProcess<'_>,
    server: Option<std::net::SocketAddr>,
    connect: Option<std::net::SocketAddr>,
    timeout: xrdma::Span,
) -> Result<ExitCode> {
    let (mut fabric, wait) = one_worker_fabric(timeout)?;
    match (tool, server, connect) {
        (TwoProcess::Ping(opts, verb, _), Some(bind), _) => {
            outln!(
                "{}",
                crate::ping_out::serve(&mut fabric, bind, wait, verb, opts)?
            );
        }
        (TwoProcess::Bw(_), Some(bind), _) => {
            let r = crate::bw::serve(&mut fabric, bind, wait)?;
            outln!(
                "xrdma bw server: took {} message(s), {} byte(s) from the client at {}",
                r.messages,
                r.bytes,
                r.client
            );
        }
        (TwoProcess::Ping(opts, verb, json), None, Some(addr)) => {
            let (r, stats) = crate::ping_out::connect(&mut fabric, addr, wait, verb, opts)?;
            out!("{}", r.render(&stats, json)?);
        }
        (TwoProcess::Bw(opts), None, Some(addr)) => {
            let r = crate::bw::connect(&mut fabric, addr, wait, opts)?;
            outln!("xrdma bw (verbs, two processes, server {addr}): one xrdma connection");
            outln!("{}", crate::bw::BwReport::header());
            outln!("{}", r.row());
            outln!("{}", r.window_line());
        }
        (_, None, None) => bail!("a two-process run needs --server or --connect ADDR"),
    }
    Ok(ExitCode::SUCCESS)
}

/// One worker on the RDMA device the environment names, for one end of a two-process tool,
/// and how long the bootstrap waits for the other end.
fn one_worker_fabric(
    timeout: xrdma::Span,
) -> Result<(xrdma_runner::fabric::VerbsFabric, std::time::Duration)> {
    let fabric = xrdma_runner::fabric::VerbsFabric::for_tool(1, timeout)?;
    let wait = std::time::Duration::from_secs(timeout.as_ps() / 1_000_000_000_000);
    Ok((fabric, wait))
}
