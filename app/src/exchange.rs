//! The exchange behind connections by address (`Worker::listen`, `Worker::connect_addr`):
//! the two workers swap their QP's address over a short TCP exchange (the cluster's
//! bootstrap, [`xrdma_cluster::bootstrap`]: a hello naming the library and its endpoint
//! configuration, then each side's [`ConnInfo`]), as `rdma_cm` would, then talk over RC QPs
//! only. The exchange is open, as perftest's is: whoever reaches the port with the same
//! configuration is served.

use crate::error::AppError;
use std::time::{Duration, Instant};
use xrdma::driver::{self, ConnInfo};
use xrdma::{Config, ConnId, Endpoint};
use xrdma_cluster::bootstrap::{content_hash, Auth, ConnRecord, Hello, Listener, Peer};
use xrdma_runner::fabric::Fabric;

/// The name both sides' hellos carry.
const NAME: &str = "xrdma-app";
/// The labels of the two sides in the connection records.
const CLIENT: u32 = 0;
const SERVER: u32 = 1;
/// How long an accepted connection may take to say hello and swap its QP's address.
pub(crate) const EXCHANGE: Duration = Duration::from_secs(5);

/// The hello of a worker whose endpoint is configured as `cfg`: both sides must agree on it
/// (a receive slot of one size on both ends, say).
fn hello(cfg: &Config, side: u32) -> Hello {
    Hello::new(NAME, &content_hash(format!("{cfg:?}").as_bytes()), side)
}

/// A worker's listening socket (`Worker::listen`).
pub(crate) struct AddrListener {
    pub(crate) listener: Listener,
}

impl AddrListener {
    /// Take every connection waiting now: say hello, swap QP addresses with host `h`'s
    /// endpoint `ep`, connect. One that fails (a stranger, another configuration, silence)
    /// is dropped and counted in `refused`.
    pub(crate) fn accept_waiting<F: Fabric>(
        &self,
        fabric: &mut F,
        h: u32,
        ep: &mut Endpoint,
        refused: &mut u64,
    ) {
        while let Ok(mut peer) = self.listener.accept(Instant::now(), EXCHANGE) {
            if swap(fabric, h, ep, &mut peer, false).is_err() {
                *refused += 1;
            }
        }
    }
}

/// Say hello over `peer` and swap host `h`'s new connection's QP address for the other
/// side's; the connection.
pub(crate) fn swap<F: Fabric>(
    fabric: &mut F,
    h: u32,
    ep: &mut Endpoint,
    peer: &mut Peer,
    client: bool,
) -> Result<ConnId, AppError> {
    let setup = |e: xrdma_cluster::bootstrap::BootstrapError| AppError::Setup(e.to_string());
    let (ours, theirs) = if client {
        (CLIENT, SERVER)
    } else {
        (SERVER, CLIENT)
    };
    peer.handshake_until(
        &hello(ep.config(), ours),
        Auth::Open,
        Instant::now() + EXCHANGE,
    )
    .map_err(setup)?;
    let half = driver::open(ep, &mut fabric.host(h))?;
    let (sender, receiver) = if client {
        (ours, theirs)
    } else {
        (theirs, ours)
    };
    let mine = ConnRecord::new(sender, receiver, &half.info).map_err(setup)?;
    let got = peer.exchange_conns(vec![mine], client).map_err(setup)?;
    let info: ConnInfo = got
        .first()
        .ok_or_else(|| AppError::Setup(format!("{} sent no QP address", peer.addr())))?
        .decode(peer.addr())
        .map_err(setup)?;
    Ok(driver::establish(
        ep,
        &mut fabric.host(h),
        half,
        &info,
        theirs,
    )?)
}
