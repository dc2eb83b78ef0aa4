//! The perftest-like tools' subcommands (`xrdma ping`, `bw`, `idle`, `soak`, `qp-setup`):
//! their arguments, the fabric each runs on (the simulator, with a host profile where one is
//! given, or the RDMA device the environment names) and their figures on the terminal. The
//! tools themselves are `xrdma_tools`'.

use crate::run_cli::rdma_backend_arg;
use anyhow::{bail, Result};
use clap::Args;
use std::process::ExitCode;
use xrdma_runner::check;
use xrdma_runner::fabric::{open_env_device, VerbsFabric};
use xrdma_runner::request::Backend;
use xrdma_tools as tools;
use xrdma_tools::output::EXIT_RESULT_FAILED;
use xrdma_tools::two_process::{two_process, TwoProcess};
use xrdma_tools::{out, outln};

/// `xrdma ping`'s arguments (the subcommand's help is on its `Command` variant).
#[derive(Args, Debug)]
pub struct PingArgs {
    /// Where to run it.
    #[arg(long, default_value = "sim", value_parser = rdma_backend_arg())]
    pub backend: Backend,
    /// Message size (`64B`, `4KiB`, ...).
    #[arg(long, default_value = "64B", value_parser = parse_size)]
    pub size: u64,
    /// Round trips measured (at most 10 M).
    #[arg(long, default_value_t = 10_000, value_parser = tools::parse_iters)]
    pub iters: u32,
    /// Round trips run first and not measured, at most 10 M [default: 1000, or `--iters`
    /// when fewer].
    #[arg(long, value_parser = tools::parse_warmup)]
    pub warmup: Option<u32>,
    /// What to ping: xrdma messages through the core, or verbs-level SEND, RDMA WRITE or
    /// RDMA READ like `ib_send_lat`, `ib_write_lat`, `ib_read_lat` (READ not halved).
    #[arg(long, value_enum, default_value_t = tools::verb_ping::Verb::Xrdma)]
    pub verb: tools::verb_ping::Verb,
    /// Print the figures as one JSON object instead of perftest's table.
    #[arg(long)]
    pub json: bool,
    /// Be the echo server of a two-process ping (`--backend verbs`): listen on `--bind`,
    /// serve one client, exit.
    #[arg(long, conflicts_with = "connect")]
    pub server: bool,
    /// The server's bootstrap address (TCP `IP:port`).
    #[arg(long, default_value = tools::ping::DEFAULT_BIND, requires = "server")]
    pub bind: std::net::SocketAddr,
    /// Be the client of a two-process ping: connect to the server at `IP:port`.
    #[arg(long)]
    pub connect: Option<std::net::SocketAddr>,
    /// The simulated host's cost profile.
    #[command(flatten)]
    pub host: tools::HostProfileArg,
}

/// `xrdma bw`'s arguments (the subcommand's help is on its `Command` variant).
#[derive(Args, Debug)]
pub struct BwArgs {
    /// Where to run it.
    #[arg(long, default_value = "sim", value_parser = rdma_backend_arg())]
    pub backend: Backend,
    /// Message size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    pub size: u64,
    /// Messages sent (at most 10 M).
    #[arg(long, default_value_t = 5_000, value_parser = tools::parse_iters)]
    pub iters: u32,
    /// Pin the send window at this size (not adaptive) [default: xrdma's adaptive window,
    /// 64 KiB growing to 256 KiB].
    #[arg(long, value_parser = parse_size)]
    pub window: Option<u64>,
    /// Be the receiving server of a two-process run (`--backend verbs`), like
    /// `ib_write_bw`'s: listen on `--bind`, take one client's stream, exit.
    #[arg(long, conflicts_with = "connect")]
    pub server: bool,
    /// The server's bootstrap address (TCP `IP:port`).
    #[arg(long, default_value = tools::ping::DEFAULT_BIND, requires = "server")]
    pub bind: std::net::SocketAddr,
    /// Be the streaming client of a two-process run: connect to the server at `IP:port`.
    #[arg(long)]
    pub connect: Option<std::net::SocketAddr>,
    /// The simulated host's cost profile.
    #[command(flatten)]
    pub host: tools::HostProfileArg,
}

/// `xrdma idle`'s arguments (the subcommand's help is on its `Command` variant).
#[derive(Args, Debug)]
pub struct IdleArgs {
    /// Where to run it (the simulator has no CPU cost to measure).
    #[arg(long, default_value = "verbs", value_parser = rdma_backend_arg())]
    pub backend: Backend,
    /// Length of the idle period, seconds.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
}

/// `xrdma soak`'s arguments (the subcommand's help is on its `Command` variant).
#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Where to run it.
    #[arg(long, default_value = "sim", value_parser = rdma_backend_arg())]
    pub backend: Backend,
    /// Messages streamed (sizes cycle through 64 B, 1 KiB and 8 KiB).
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u64,
    /// Close/connect cycles.
    #[arg(long, default_value_t = 10_000)]
    pub cycles: u32,
}

/// `xrdma qp-setup`'s arguments (the subcommand's help is on its `Command` variant).
#[derive(Args, Debug)]
pub struct QpSetupArgs {
    /// Where to run it (on the simulator the times are only its book-keeping).
    #[arg(long, default_value = "verbs", value_parser = rdma_backend_arg())]
    pub backend: Backend,
    /// Pairs set up each way (at most 10 M).
    #[arg(long, default_value_t = 100, value_parser = tools::parse_iters)]
    pub iters: u32,
}

/// `xrdma ping`: run the tool and print its figures.
///
/// # Errors
/// Bad options, a backend this build lacks, no device, a tool run that fails.
pub fn ping(args: PingArgs) -> Result<ExitCode> {
    let PingArgs {
        backend,
        size,
        iters,
        warmup,
        verb,
        json,
        server,
        bind,
        connect,
        host,
    } = args;
    backend.require()?;
    host.require_sim(backend == Backend::Sim)?;
    tools::verb_ping::require_ideal_host(verb, host.host_profile.as_deref())?;
    verb.check_size(size)?;
    ensure_fits(size)?;
    let opts = tools::ping::PingOptions {
        size,
        iters,
        warmup: warmup.unwrap_or(iters.min(1_000)),
    };
    if server || connect.is_some() {
        if backend != Backend::Verbs {
            bail!("--server and --connect run a two-process ping: they need --backend verbs");
        }
        let tool = TwoProcess::Ping(&opts, verb, json);
        return two_process(tool, server.then_some(bind), connect, TOOL_TIMEOUT);
    }
    let label = host.label(backend.name());
    let (r, stats) = match backend {
        Backend::Sim => tools::ping_out::run(&mut host.fabric()?, verb, &opts, label)?,
        Backend::Verbs => {
            let mut fabric = VerbsFabric::for_tool(2, TOOL_TIMEOUT)?;
            tools::ping_out::run(&mut fabric, verb, &opts, label)?
        }
        Backend::Sockets => return Err(sockets_refused("ping")),
    };
    out!("{}", r.render(&stats, json)?);
    Ok(ExitCode::SUCCESS)
}

/// `xrdma bw`: run the tool and print its figures.
///
/// # Errors
/// Bad options, a backend this build lacks, no device, a tool run that fails.
pub fn bw(args: BwArgs) -> Result<ExitCode> {
    let BwArgs {
        backend,
        size,
        iters,
        window,
        server,
        bind,
        connect,
        host,
    } = args;
    backend.require()?;
    host.require_sim(backend == Backend::Sim)?;
    let opts = tools::bw::BwOptions {
        size,
        iters,
        window,
    };
    tools::bw::check(&opts)?;
    ensure_fits(size)?;
    if server || connect.is_some() {
        if backend != Backend::Verbs {
            bail!("--server and --connect run a two-process bw: they need --backend verbs");
        }
        return two_process(
            TwoProcess::Bw(&opts),
            server.then_some(bind),
            connect,
            TOOL_TIMEOUT,
        );
    }
    let r = match backend {
        Backend::Sim => tools::bw::run(&mut host.fabric()?, &opts)?,
        Backend::Verbs => tools::bw::run(&mut VerbsFabric::for_tool(2, TOOL_TIMEOUT)?, &opts)?,
        Backend::Sockets => return Err(sockets_refused("bw")),
    };
    let w = tools::bw::config(window);
    outln!(
        "xrdma bw ({}): one-way stream, {} messages outstanding, window {} B{}",
        host.label(backend.name()),
        tools::bw::TX_DEPTH,
        w.initial_window,
        if w.adaptive_window {
            format!(" growing to {} B", w.max_window)
        } else {
            " (pinned)".into()
        }
    );
    outln!("{}", tools::bw::BwReport::header());
    outln!("{}", r.row());
    outln!("{}", r.window_line());
    Ok(ExitCode::SUCCESS)
}

/// `xrdma idle`: run the tool and print its figures.
///
/// # Errors
/// Bad options, a backend this build lacks, no device, a tool run that fails.
pub fn idle(args: IdleArgs) -> Result<ExitCode> {
    let IdleArgs { backend, seconds } = args;
    if backend == Backend::Sim {
        bail!(
            "idle measures the CPU a real worker burns while it waits for completions; \
             the simulator has no such cost: use --backend verbs"
        );
    }
    tools::idle::cli(seconds, TOOL_TIMEOUT)
}

/// `xrdma soak`: run the tool and print its figures.
///
/// # Errors
/// Bad options, a backend this build lacks, no device, a tool run that fails.
pub fn soak(args: SoakArgs) -> Result<ExitCode> {
    let SoakArgs {
        backend,
        messages,
        cycles,
    } = args;
    let opts = tools::soak::SoakOptions {
        messages,
        cycles,
        ..tools::soak::SoakOptions::default()
    };
    let started = std::time::Instant::now();
    let r = match backend {
        Backend::Sim => tools::soak::run(&mut tools::sim_fabric()?, &opts)?,
        Backend::Verbs => tools::soak::run(&mut VerbsFabric::for_tool(2, TOOL_TIMEOUT)?, &opts)?,
        Backend::Sockets => return Err(sockets_refused("soak")),
    };
    outln!(
        "xrdma soak ({}): {messages} messages, {cycles} cycles, {:.1} s wall",
        if backend == Backend::Sim {
            "sim"
        } else {
            "verbs"
        },
        started.elapsed().as_secs_f64()
    );
    for l in r.lines() {
        outln!("{l}");
    }
    for g in r.growth() {
        outln!("GREW: {g}");
    }
    if r.passed() {
        outln!("soak: 1 passed, 0 failed");
        Ok(ExitCode::SUCCESS)
    } else {
        outln!("soak: 0 passed, 1 failed");
        Ok(ExitCode::from(EXIT_RESULT_FAILED))
    }
}

/// `xrdma qp-setup`: run the tool and print its figures.
///
/// # Errors
/// Bad options, a backend this build lacks, no device, a tool run that fails.
pub fn qp_setup(args: QpSetupArgs) -> Result<ExitCode> {
    let QpSetupArgs { backend, iters } = args;
    let r = match backend {
        Backend::Sim => tools::qp_setup::run(tools::sim_fabric, iters)?,
        Backend::Verbs => {
            let dev = open_env_device()?;
            tools::qp_setup::run(|| VerbsFabric::with_device(&dev, 2, TOOL_TIMEOUT), iters)?
        }
        Backend::Sockets => return Err(sockets_refused("qp-setup")),
    };
    outln!(
        "xrdma qp-setup ({backend:?}): QP pair connect, fresh (create_qp + connect_qp) vs \
         from the QP cache (reset_qp + connect_qp); wall clock"
    );
    outln!("{}", tools::qp_setup::QpSetupReport::header());
    outln!("{}", r.row());
    Ok(ExitCode::SUCCESS)
}

/// A size as the scenarios write it (`64B`, `4KiB`), for a clap parser.
fn parse_size(text: &str) -> Result<u64, String> {
    xrdma_scenario::units::parse_size(text).map_err(|e| e.to_string())
}

/// Wall-clock limit of one tool run on an RDMA device.
const TOOL_TIMEOUT: xrdma::Span = xrdma::Span::from_ms(300_000);

/// Refuse a message size whose buffers (payload, staging rings, reassembly, about six copies)
/// would not fit in the memory available.
fn ensure_fits(size: u64) -> Result<()> {
    let need = size.saturating_mul(6);
    if let Some(avail) = check::available_memory() {
        if need > avail {
            bail!(
                "--size {size} B needs about {} of memory for its buffers, but only {} is \
                 available",
                xrdma_reports::format_bytes(need),
                xrdma_reports::format_bytes(avail)
            );
        }
    }
    Ok(())
}

/// The error of a tool asked to run on the sockets backend (the command line does not offer
/// it: [`rdma_backend_arg`]).
fn sockets_refused(tool: &str) -> anyhow::Error {
    match Backend::Sockets.require_rdma(&format!("xrdma {tool}")) {
        Err(e) => e,
        Ok(()) => anyhow::anyhow!("xrdma {tool} needs an RDMA backend"),
    }
}
