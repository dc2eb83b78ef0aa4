//! A transport wrapper that logs the send WRs posted through it and counts the completions
//! polled from it, and a settle loop of a [`World`] that checks the signalling rule after
//! every turn.

use super::world::World;
use xrdma::driver;
use xrdma::layer::TransportLayer;
use xrdma::*;

/// What one host posted and polled.
#[derive(Debug, Default)]
pub struct Log {
    /// Every send WR posted, with its QP, in posting order.
    pub posted: Vec<(QpNum, SendWr)>,
    /// The length of every chain posted with `post_send_chain` (WRs accepted).
    pub chains: Vec<usize>,
    /// Send completions polled (CQEs of send WRs), successful or not.
    pub send_cqes: u64,
    /// Of those, the ones in error (flushes included).
    pub send_errors: u64,
    /// Receive completions polled.
    pub recv_cqes: u64,
    /// Calls of `poll_congestion`.
    pub congestion_polls: u64,
    /// What the wrapper declares instead of the inner transport's capabilities, if set.
    pub declare: Option<Capabilities>,
    /// CNPs the port counted, handed out (and cleared) by the next `poll_port_cnps`.
    pub port_cnps: u64,
    /// Calls of `poll_port_cnps`.
    pub port_polls: u64,
}

impl Log {
    /// Send WRs posted that asked for a completion.
    pub fn signaled(&self) -> usize {
        self.posted.iter().filter(|(_, wr)| wr.signaled).count()
    }
}

/// `inner` with every send WR and every completion recorded in `log`.
pub struct Logged<'a, T> {
    pub inner: T,
    pub log: &'a mut Log,
}

/// Logs the send posts, the completions and the congestion polls, and declares `log.declare`
/// when set; every other call goes to the inner transport.
impl<T: Transport> TransportLayer for Logged<'_, T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        self.inner.post_send(qpn, wr)?;
        self.log.posted.push((qpn, *wr));
        Ok(())
    }
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        let r = self.inner.post_send_chain(qpn, wrs);
        let posted = r.as_ref().map_or_else(|e| e.posted, |()| wrs.len());
        self.log.chains.push(posted);
        self.log
            .posted
            .extend(wrs[..posted].iter().map(|wr| (qpn, *wr)));
        r
    }
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let from = out.len();
        let n = self.inner.poll_cq(out, max);
        for wc in &out[from..] {
            match wc.opcode {
                WcOpcode::Recv | WcOpcode::RecvRdmaWithImm => self.log.recv_cqes += 1,
                _ => {
                    self.log.send_cqes += 1;
                    if wc.status != WcStatus::Success {
                        self.log.send_errors += 1;
                    }
                }
            }
        }
        n
    }
    fn poll_congestion(&mut self) -> Option<QpNum> {
        self.log.congestion_polls += 1;
        self.inner.poll_congestion()
    }
    fn poll_port_cnps(&mut self, now: Time) -> u64 {
        self.log.port_polls += 1;
        std::mem::take(&mut self.log.port_cnps) + self.inner.poll_port_cnps(now)
    }
    fn capabilities(&self) -> Capabilities {
        self.log
            .declare
            .unwrap_or_else(|| self.inner.capabilities())
    }
}

/// One driver turn of host `h` of `w` through a [`Logged`] transport; then checks the rule
/// every turn must keep: the last send WR posted on each QP in the turn is signaled, and no
/// QP has more than `signal_interval − 1` unsignaled WRs in a row.
pub fn turn_logged(w: &mut World, h: usize, log: &mut Log) {
    let now = w.pair.now;
    let from = log.posted.len();
    let mut t = Logged {
        inner: w.pair.side(h),
        log,
    };
    driver::turn(now, &mut w.eps[h], &mut t, &mut w.apps[h], &mut w.scratch);
    let interval = w.eps[h].config().signal_interval as usize;
    let turn = &log.posted[from..];
    let mut qps: Vec<QpNum> = turn.iter().map(|(q, _)| *q).collect();
    qps.sort_unstable();
    qps.dedup();
    for q in qps {
        let wrs: Vec<&SendWr> = turn
            .iter()
            .filter(|(p, _)| *p == q)
            .map(|(_, w)| w)
            .collect();
        assert!(
            wrs.last().is_some_and(|wr| wr.signaled),
            "host {h}: the last WR of QP {q} in a turn is unsignaled: {wrs:?}"
        );
        let mut run = 0;
        for wr in wrs {
            run = if wr.signaled { 0 } else { run + 1 };
            assert!(
                run < interval,
                "host {h}: {run} unsignaled WRs in a row on QP {q}"
            );
        }
    }
}

/// [`World::settle`] through [`turn_logged`].
pub fn settle_logged(w: &mut World, logs: &mut [Log; 2]) {
    for _ in 0..10_000 {
        for (h, log) in logs.iter_mut().enumerate() {
            turn_logged(w, h, log);
        }
        if !w.pair.busy() {
            return;
        }
    }
    panic!("did not settle");
}
