//! Connections by address, between processes ([`Worker::listen`], [`Worker::connect_addr`]),
//! and workers on an RDMA device ([`Worker::on_device`]); the exchange itself is
//! [`crate::exchange`]'s.

use crate::error::AppError;
use crate::exchange::{swap, AddrListener, EXCHANGE};
use crate::worker::Worker;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use xrdma::{Config, ConnId, Endpoint, Span};
use xrdma_cluster::bootstrap::{Listener, Peer};
use xrdma_runner::fabric::{Fabric, Polling, PollingStats, VerbsFabric};

impl Worker<VerbsFabric> {
    /// A worker on the RDMA device the environment names (`XRDMA_VERBS_DEVICE`,
    /// `XRDMA_VERBS_PORT`, `XRDMA_VERBS_GID_INDEX`; else the first device and its first
    /// routable RoCE v2 GID), with its own CQ, QPs and MRs, its endpoint configured as `cfg`.
    ///
    /// It polls as XRDMA's workers do ([`Polling::HYBRID`]): it busy-polls while it has
    /// messages in flight and for 100 µs after the last completion, then sleeps on its
    /// completion channel until a completion or its next deadline, so an idle worker costs
    /// next to no CPU. [`Worker::set_polling`] changes that.
    ///
    /// # Errors
    /// [`AppError::Setup`]: no usable device (or a build without the verbs backend), an
    /// endpoint configuration its checks refuse, or one that streams fragments.
    pub fn on_device(cfg: &Config) -> Result<Worker<VerbsFabric>, AppError> {
        let mut fabric =
            VerbsFabric::for_tool(1, Span::MAX).map_err(|e| AppError::Setup(format!("{e:#}")))?;
        fabric.set_polling(Polling::HYBRID);
        alone(fabric, cfg)
    }

    /// Wait for completions as `polling` says: [`Polling::Busy`] spins on the CQ all the time
    /// (the lowest latency, a core per worker); [`Polling::Hybrid`] spins while messages are
    /// in flight and for its `spin` time after the last activity, then sleeps on the
    /// completion channel.
    pub fn set_polling(&mut self, polling: Polling) {
        self.with_net(|net, _| net.fabric.set_polling(polling));
    }

    /// What the hybrid loop has done (its blocks and wake-ups); `None` while busy-polling.
    pub fn polling_stats(&self) -> Option<PollingStats> {
        self.net_ref().fabric.polling_stats()
    }
}

/// The worker of `fabric`'s one host, its endpoint configured as `cfg`.
fn alone<F: Fabric>(fabric: F, cfg: &Config) -> Result<Worker<F>, AppError> {
    crate::worker::check_config(cfg)?;
    let cfg = xrdma_runner::fabric::config_for(cfg, &fabric);
    let ep = Endpoint::new(cfg).map_err(|e| AppError::Setup(e.to_string()))?;
    Worker::all(crate::net::Net::new(fabric, vec![ep]))
        .pop()
        .ok_or_else(|| AppError::Setup("a fabric without a host".into()))
}

impl<F: Fabric> Worker<F> {
    /// Listen on `addr` (port 0: any free port) for workers of other processes: from now on
    /// this worker accepts them inside its waiting calls ([`Worker::recv`],
    /// [`Worker::run_for`], ...), and a new connection shows itself with its first message.
    /// Returns the address bound.
    ///
    /// # Errors
    /// [`AppError::Setup`]: the address cannot be bound.
    pub fn listen(&mut self, addr: SocketAddr) -> Result<SocketAddr, AppError> {
        let listener = Listener::bind(addr).map_err(|e| AppError::Setup(e.to_string()))?;
        let bound = listener.local_addr();
        self.set_listener(AddrListener { listener });
        Ok(bound)
    }

    /// Connect to the worker listening at `addr` in another process (retrying until
    /// `timeout` passes, so the two may start in either order); the connection.
    ///
    /// # Errors
    /// [`AppError::Setup`]: nobody listens by then, or the other side runs another endpoint
    /// configuration; [`AppError::Refused`]: the transport refuses the QP.
    pub fn connect_addr(&mut self, addr: SocketAddr, timeout: Span) -> Result<ConnId, AppError> {
        let io = Duration::from_nanos(timeout.as_ps() / 1000);
        let mut peer = Peer::connect(addr, Instant::now() + io, EXCHANGE)
            .map_err(|e| AppError::Setup(e.to_string()))?;
        self.with_host(|fabric, h, ep| swap(fabric, h, ep, &mut peer, true))
    }
}
