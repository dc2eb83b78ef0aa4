//! Many workers in a full mesh on the RDMA device (Pangu's thread-level full mesh): the
//! server process runs WORKERS threads, each a worker listening on BASE_PORT + its index;
//! the client process runs WORKERS threads, each a worker connected to every server worker,
//! sending MESSAGES 64 B messages round-robin over its connections. No lock is shared: every
//! worker owns its CQ, QPs and MRs. The client prints the messages/s of all its workers.
//! Given STAT_DIR, server worker i pins itself to CPU i (modulo the CPUs there are), prints
//! where it runs and answers `xrdma stat --socket STAT_DIR/worker-i.sock`.
//!
//! `mesh sim` runs the same mesh on the simulator, each worker a host of its own (its own
//! NIC and link to one switch), costed by a host profile (default `connectx6`), and prints
//! messages/s of simulated time.
//!
//! usage: mesh server BASE_PORT WORKERS [STAT_DIR]
//!        mesh client SERVER_HOST BASE_PORT WORKERS [MESSAGES PER WORKER (100000)]
//!        mesh sim WORKERS [MESSAGES PER WORKER (100000)] [HOST PROFILE (connectx6)]
//! WORKERS is per side: WORKERS × WORKERS connections, MESSAGES sent by each client worker.
//! (server and client: build with `--features verbs`; `XRDMA_VERBS_DEVICE` names the device)

use std::error::Error;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::thread;
use std::time::Instant;
use xrdma_app::{AppError, Config, Span, Worker};

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// Server worker `i`: take every message on `port`, answer none; pinned and watched when
/// given a stat directory.
fn serve(i: u16, port: u16, stat: Option<PathBuf>) -> Result<(), AppError> {
    let mut w = Worker::on_device(&Config::default())?;
    if let Some(dir) = stat {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        let p = w.pin(&[usize::from(i) % cpus])?;
        println!(
            "worker {i}: cpu {:?} numa node {:?}, device {:?} numa node {:?}, far {:?}",
            p.cpu, p.numa_node, p.device, p.device_numa_node, p.far_node
        );
        w.stat_socket(&dir.join(format!("worker-{i}.sock")))?;
    }
    w.listen(SocketAddr::from(([0, 0, 0, 0], port)))?;
    w.serve(|_conn, _msg| None);
    loop {
        w.run_for(Span::from_ms(1_000))?;
    }
}

/// A client worker: connect to every server worker, send `messages` round-robin over the
/// connections, wait for every ACK; the seconds that took.
fn send(servers: &[SocketAddr], messages: u64) -> Result<f64, AppError> {
    let mut w = Worker::on_device(&Config::default())?;
    let conns = servers
        .iter()
        .map(|&a| w.connect_addr(a, Span::from_ms(10_000)))
        .collect::<Result<Vec<_>, _>>()?;
    let payload = xrdma_app::Bytes::from_static(&[7u8; 64]);
    let start = Instant::now();
    for i in 0..messages {
        w.send(conns[(i % conns.len() as u64) as usize], payload.clone())?;
        // Keep the queues short: let the worker run every 256 messages.
        if i % 256 == 255 {
            w.run_for(Span::ZERO)?;
        }
    }
    w.flush(Span::from_ms(60_000))?;
    Ok(start.elapsed().as_secs_f64())
}

/// The mesh on the simulator: `workers` server hosts and `workers` client hosts, each client
/// connected to every server, `messages` each; the simulated seconds until the last ACK.
fn simulated(workers: u32, messages: u64, profile: &str) -> Res<f64> {
    let sim = xrdma_app::SimConfig {
        hosts: 2 * workers,
        host: xrdma_sim::HostModel::from_profile(profile)?,
        ..xrdma_app::SimConfig::default()
    };
    let mut hosts = Worker::simulated(sim, &Config::default())?;
    let mut clients = hosts.split_off(workers as usize);
    // The servers take every message inside the turns, as `serve` does on a device.
    for s in &mut hosts {
        s.serve(|_conn, _msg| None);
    }
    let mut conns = Vec::new();
    for c in &mut clients {
        conns.push(
            hosts
                .iter()
                .map(|s| c.connect(s))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    let payload = xrdma_app::Bytes::from_static(&[7u8; 64]);
    let start = clients[0].now();
    for i in 0..messages {
        for (c, cs) in clients.iter_mut().zip(&conns) {
            c.send(cs[(i % cs.len() as u64) as usize], payload.clone())?;
            // Keep at most 4096 messages unACKed per worker: simulated time moves only
            // while a worker waits, so each runs the fabric a microsecond at a time until
            // its queue is short again (memory stays flat whatever MESSAGES is).
            while c.unacked() > 4096 {
                c.run_for(Span::from_us(1))?;
            }
        }
    }
    for c in &mut clients {
        c.flush(Span::from_ms(60_000))?;
    }
    Ok((clients[0].now() - start).as_us_f64() / 1e6)
}

/// BASE_PORT and WORKERS: at least one worker, every port within 65535.
fn ports(base: &str, workers: &str) -> Res<(u16, u16)> {
    let (base, workers): (u16, u16) = (num("BASE_PORT", base)?, num("WORKERS", workers)?);
    if workers == 0 || base.checked_add(workers - 1).is_none() {
        return Err(format!(
            "{workers} workers from port {base}: need 1 or more, ports up to 65535"
        )
        .into());
    }
    Ok((base, workers))
}

/// MESSAGES per worker (default 100 000): at least one.
fn count(arg: Option<&String>) -> Res<u64> {
    let n: u64 = arg.map_or(Ok(100_000), |m| num("MESSAGES", m))?;
    if n == 0 {
        return Err("MESSAGES must be at least 1".into());
    }
    Ok(n)
}

/// `s` as a number, or an error naming the argument.
fn num<T: std::str::FromStr>(name: &str, s: &str) -> Res<T>
where
    T::Err: std::fmt::Display,
{
    s.parse()
        .map_err(|e| format!("{name} {s:?} is not a number here: {e}").into())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("mesh: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: mesh server BASE_PORT WORKERS [STAT_DIR] | mesh client HOST BASE_PORT WORKERS [MESSAGES] | mesh sim WORKERS [MESSAGES] [PROFILE]";
    match args.first().map(String::as_str) {
        Some("server") if (3..=4).contains(&args.len()) => {
            let (base, workers) = ports(&args[1], &args[2])?;
            let stat = args.get(3).map(PathBuf::from);
            let threads: Vec<_> = (0..workers)
                .map(|i| {
                    let stat = stat.clone();
                    thread::spawn(move || serve(i, base + i, stat))
                })
                .collect();
            println!(
                "mesh: {workers} server workers on ports {base}..={}",
                base + (workers - 1)
            );
            for t in threads {
                t.join().map_err(|_| "a server worker panicked")??;
            }
            Ok(())
        }
        Some("client") if (4..=5).contains(&args.len()) => {
            let (base, workers) = ports(&args[2], &args[3])?;
            let messages = count(args.get(4))?;
            let servers = (0..workers)
                .map(|i| {
                    format!("{}:{}", args[1], base + i)
                        .to_socket_addrs()?
                        .next()
                        .ok_or("no address".into())
                })
                .collect::<Res<Vec<SocketAddr>>>()?;
            let threads: Vec<_> = (0..workers)
                .map(|_| {
                    let s = servers.clone();
                    thread::spawn(move || send(&s, messages))
                })
                .collect();
            let mut slowest = 0f64;
            for t in threads {
                slowest = slowest.max(t.join().map_err(|_| "a client worker panicked")??);
            }
            let total = messages * u64::from(workers);
            let rate = total as f64 / slowest;
            println!("mesh: workers={workers} connections={} messages={total} seconds={slowest:.3} messages_per_s={rate:.0}", u64::from(workers) * u64::from(workers));
            Ok(())
        }
        Some("sim") if (2..=4).contains(&args.len()) => {
            let workers: u32 = num("WORKERS", &args[1])?;
            if workers == 0 {
                return Err("WORKERS must be at least 1".into());
            }
            let messages = count(args.get(2))?;
            let profile = args.get(3).map_or("connectx6", String::as_str);
            let secs = simulated(workers, messages, profile)?;
            let total = messages * u64::from(workers);
            println!("mesh: sim profile={profile} workers={workers} connections={} messages={total} simulated_seconds={secs:.6} messages_per_s={:.0}", u64::from(workers) * u64::from(workers), total as f64 / secs);
            Ok(())
        }
        _ => Err(usage.into()),
    }
}
