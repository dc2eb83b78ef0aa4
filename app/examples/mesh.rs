//! Many workers in a full mesh on the RDMA device (Pangu's thread-level full mesh): the
//! server process runs WORKERS threads, each a worker listening on BASE_PORT + its index;
//! the client process runs WORKERS threads, each a worker connected to every server worker,
//! sending MESSAGES 64 B messages round-robin over its connections. No lock is shared: every
//! worker owns its CQ, QPs and MRs. The client prints the messages/s of all its workers.
//!
//! usage: mesh server BASE_PORT WORKERS
//!        mesh client SERVER_HOST BASE_PORT WORKERS [MESSAGES PER WORKER (100000)]
//! (build with `--features verbs`; `XRDMA_VERBS_DEVICE` names the device)

use std::error::Error;
use std::net::{SocketAddr, ToSocketAddrs};
use std::thread;
use std::time::Instant;
use xrdma_app::{AppError, Config, Span, Worker};

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// A server worker: take every message on `port`, answer none.
fn serve(port: u16) -> Result<(), AppError> {
    let mut w = Worker::on_device(&Config::default())?;
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

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: mesh server BASE_PORT WORKERS | mesh client HOST BASE_PORT WORKERS [MESSAGES]";
    match args.first().map(String::as_str) {
        Some("server") if args.len() == 3 => {
            let (base, workers): (u16, u16) = (args[1].parse()?, args[2].parse()?);
            let threads: Vec<_> = (0..workers)
                .map(|i| thread::spawn(move || serve(base + i)))
                .collect();
            println!(
                "mesh: {workers} server workers on ports {base}..{}",
                base + workers
            );
            for t in threads {
                t.join().map_err(|_| "a server worker panicked")??;
            }
            Ok(())
        }
        Some("client") if (4..=5).contains(&args.len()) => {
            let (base, workers): (u16, u16) = (args[2].parse()?, args[3].parse()?);
            let messages: u64 = args.get(4).map_or(Ok(100_000), |m| m.parse())?;
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
        _ => Err(usage.into()),
    }
}
