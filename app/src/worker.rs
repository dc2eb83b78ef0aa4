//! A worker ([`Worker`]): one thread's xrdma, as an application uses it.

use crate::error::AppError;
use crate::net::Net;
use bytes::Bytes;
use std::cell::RefCell;
use std::rc::Rc;
use xrdma::{ConnId, Event, MsgId, Span, Time};
use xrdma_runner::fabric::Fabric;

/// One thread's xrdma (XRDMA's run-to-completion worker): its host's endpoint (connections,
/// QPs and their cache, the MR pool) on a fabric, driven only when the application calls in.
/// A call that waits ([`Worker::recv`], [`Worker::call`], [`Worker::flush`]) runs the
/// fabric's turns until what it waits for is there or its time is up; nothing runs between
/// calls. Make a worker on the thread that uses it (it is not `Send`).
///
/// On the simulator ([`Worker::simulated`]) the workers of one run share its fabric: while
/// one waits, the others' endpoints keep answering, and what they receive waits for them.
pub struct Worker<F: Fabric> {
    net: Rc<RefCell<Net<F>>>,
    host: u32,
}

/// Dropping a worker is its process exiting: its QPs are reset, as the kernel destroys an
/// exiting process's, and its endpoint runs no more (on the simulator the other workers' turns
/// skip it; its handler and listener go with it). A peer's messages to it then fail as they
/// would against a crashed host, once the RC retries run out: the peer's connection fails
/// with a typed error, never a silent success.
impl<F: Fabric> Drop for Worker<F> {
    fn drop(&mut self) {
        use xrdma::Transport as _;
        let Ok(mut net) = self.net.try_borrow_mut() else {
            return;
        };
        let net = &mut *net;
        let h = self.host as usize;
        if net.gone[h] {
            return;
        }
        net.gone[h] = true;
        net.handlers[h] = None;
        net.listeners[h] = None;
        let qpns = net.eps[h].live_qpns();
        let mut t = net.fabric.host(self.host);
        for qpn in qpns {
            // A QP the transport no longer knows needs nothing more.
            let _ = t.reset_qp(qpn);
        }
    }
}

/// Who a worker is ([`Worker::key`]): calls and requests carry it, so another worker's are
/// refused, not matched against this one's connections and ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct WorkerKey(usize, u32);

/// Refuses an endpoint configuration a worker cannot serve: it hands out whole messages, so
/// an endpoint that streams fragments ([`xrdma::Config::deliver_fragments`]) would never
/// complete a `recv` or a `call`.
pub(crate) fn check_config(cfg: &xrdma::Config) -> Result<(), AppError> {
    if cfg.deliver_fragments {
        return Err(AppError::Setup(
            "a worker delivers whole messages: deliver-fragments must be off".into(),
        ));
    }
    Ok(())
}

/// Whether `e` is a failure on `conn` (any connection when `None`) that a waiting call
/// reports.
fn failure_on(e: &Event, conn: Option<ConnId>) -> bool {
    let on = |c: &ConnId| conn.is_none_or(|x| x == *c);
    match e {
        Event::SendFailed { conn: c, .. }
        | Event::ConnectionFailed { conn: c, .. }
        | Event::PeerClosed { conn: c } => on(c),
        _ => false,
    }
}

/// Whether `e` is a failure on any connection other than a peer's close: what ends a
/// [`Worker::run_for`] or a [`Worker::flush`] (a closed peer still takes and ACKs what was
/// sent before its close reached this side).
fn failed_not_closed(e: &Event) -> bool {
    failure_on(e, None) && !matches!(e, Event::PeerClosed { .. })
}

/// The error a failure event reports; `None` for any other event.
pub(crate) fn as_error(e: Event) -> Option<AppError> {
    match e {
        Event::SendFailed { conn, error, .. } | Event::ConnectionFailed { conn, error } => {
            Some(AppError::ConnectionFailed { conn, error })
        }
        Event::PeerClosed { conn } => Some(AppError::PeerClosed { conn }),
        _ => None,
    }
}

impl<F: Fabric> Worker<F> {
    /// The workers of `net`'s hosts, by host index.
    pub(crate) fn all(net: Net<F>) -> Vec<Worker<F>> {
        let hosts = net.eps.len() as u32;
        let net = Rc::new(RefCell::new(net));
        (0..hosts)
            .map(|host| Worker {
                net: Rc::clone(&net),
                host,
            })
            .collect()
    }

    /// Set this worker's listening socket (`Worker::listen`).
    pub(crate) fn set_listener(&mut self, l: crate::exchange::AddrListener) {
        self.net.borrow_mut().listeners[self.host as usize] = Some(l);
    }

    /// Run `f` on this worker's fabric, host index and endpoint.
    pub(crate) fn with_host<R>(
        &mut self,
        f: impl FnOnce(&mut F, u32, &mut xrdma::Endpoint) -> R,
    ) -> R {
        let mut net = self.net.borrow_mut();
        let net = &mut *net;
        f(&mut net.fabric, self.host, &mut net.eps[self.host as usize])
    }

    /// Messages this worker sent that are not yet ACKed by their peer nor failed: what an
    /// application that paces itself keeps below a bound (each holds its bytes until then).
    pub fn unacked(&self) -> u64 {
        self.net.borrow().unacked[self.host as usize]
    }

    /// Connections to this worker's listener ([`Worker::listen`]) dropped in the exchange
    /// (a stranger, another endpoint configuration, silence) so far.
    pub fn refused(&self) -> u64 {
        self.net.borrow().refused[self.host as usize]
    }

    /// This worker's host index on its fabric.
    pub fn host(&self) -> u32 {
        self.host
    }

    /// Now, on the worker's clock (simulated time on the simulator).
    pub fn now(&self) -> Time {
        self.net.borrow().fabric.now()
    }

    /// Connect this worker to `server` with one RC QP pair; the connection at this worker.
    /// The server learns of it when the first message arrives on it ([`Worker::recv`] names
    /// the connection).
    ///
    /// # Errors
    /// [`AppError::Setup`] when `server` is this worker or on another fabric;
    /// [`AppError::Refused`] when the transport refuses a QP or a registration.
    pub fn connect(&mut self, server: &Worker<F>) -> Result<ConnId, AppError> {
        if !Rc::ptr_eq(&self.net, &server.net) || server.host == self.host {
            return Err(AppError::Setup(
                "a worker connects to another worker of its own fabric".into(),
            ));
        }
        let mut net = self.net.borrow_mut();
        let net = &mut *net;
        let (a, b) = (self.host, server.host);
        xrdma_runner::run::connect(&mut net.fabric, &mut net.eps, a, b)
            .map(|(conn, _)| conn)
            .map_err(|e| match e.downcast::<xrdma::XrdmaError>() {
                Ok(x) => AppError::Refused(x),
                Err(e) => AppError::Setup(format!("{e:#}")),
            })
    }

    /// Queue `data` as one whole message on `conn`; it goes out on the next call that runs
    /// the fabric. The peer receives it whole; its buffers stay until the peer ACKs it.
    ///
    /// # Errors
    /// [`AppError::Refused`]: an unknown, failed or closed connection, or a message larger
    /// than [`xrdma::Config::max_message_size`].
    pub fn send(&mut self, conn: ConnId, data: impl Into<Bytes>) -> Result<MsgId, AppError> {
        self.send_tagged(conn, data.into(), 0)
    }

    /// [`Worker::send`] for a message that must not wait behind bulk traffic on `conn` (a
    /// heartbeat, a lease renewal): it goes ahead of every message not yet started and, when
    /// small, between two fragments of the one in progress ([`xrdma::Endpoint::send_urgent`]).
    /// It may arrive before messages sent earlier on `conn`.
    ///
    /// # Errors
    /// As [`Worker::send`].
    pub fn send_urgent(&mut self, conn: ConnId, data: impl Into<Bytes>) -> Result<MsgId, AppError> {
        let data = data.into();
        self.submit(|ep, now| ep.send_urgent(now, conn, data, 0))
    }

    /// `len` zeroed bytes to fill and send (`buffer.freeze()` is the message): zero copy for
    /// a large message on a device. Above [`xrdma::Config::eager_limit`] the buffer is
    /// registered memory of the backend's send arena, and the message is written by RDMA
    /// straight from it, with no staging copy; it returns to the arena once the message and
    /// every copy of its bytes are dropped (the core holds them until the peer's ACK). Small
    /// messages, and every message on the simulator, are ordinary memory, staged when sent.
    ///
    /// ```
    /// # use xrdma_app::{Config, SimConfig, Span, Worker};
    /// # fn main() -> Result<(), xrdma_app::AppError> {
    /// # let mut hosts = Worker::simulated(SimConfig::default(), &Config::default())?;
    /// # let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
    /// let conn = client.connect(&server)?;
    /// let mut block = client.buffer(1 << 20);
    /// block[..5].copy_from_slice(b"block");
    /// client.send(conn, block.freeze())?;
    /// let (_, got) = server.recv(Span::from_ms(10))?;
    /// assert_eq!((&got[..5], got.len()), (&b"block"[..], 1 << 20));
    /// # Ok(())
    /// # }
    /// ```
    pub fn buffer(&mut self, len: usize) -> xrdma::SendBuffer {
        use xrdma::LocalMemory as _;
        self.with_host(|fabric, h, ep| {
            let large = len as u64 > ep.config().eager_limit;
            large
                .then(|| fabric.host(h).send_buffer(len))
                .flatten()
                .unwrap_or_else(|| xrdma::SendBuffer::new(len))
        })
    }

    /// [`Worker::send`] with the tag the core carries ([`crate::rpc`] gives tags their
    /// meaning).
    pub(crate) fn send_tagged(
        &mut self,
        conn: ConnId,
        data: Bytes,
        tag: u32,
    ) -> Result<MsgId, AppError> {
        self.submit(|ep, now| ep.send_tagged(now, conn, data, tag))
    }

    /// Queue a message with `send` on this worker's endpoint, counted until it is ACKed.
    fn submit(
        &mut self,
        send: impl FnOnce(&mut xrdma::Endpoint, Time) -> Result<MsgId, xrdma::XrdmaError>,
    ) -> Result<MsgId, AppError> {
        self.with_net(|net, h| {
            let now = net.fabric.now();
            let id = send(&mut net.eps[h], now)?;
            net.unacked[h] += 1;
            Ok(id)
        })
    }

    /// Who this worker is, among every worker of the process: its net and host.
    pub(crate) fn key(&self) -> WorkerKey {
        WorkerKey(Rc::as_ptr(&self.net) as *const () as usize, self.host)
    }

    /// This worker's net, borrowed.
    pub(crate) fn net_ref(&self) -> std::cell::Ref<'_, Net<F>> {
        self.net.borrow()
    }

    /// Run `f` on this worker's net and host index.
    pub(crate) fn with_net<R>(&mut self, f: impl FnOnce(&mut Net<F>, usize) -> R) -> R {
        f(&mut self.net.borrow_mut(), self.host as usize)
    }

    /// Close `conn` gracefully: what is queued still goes out, then the peer hears
    /// [`AppError::PeerClosed`].
    ///
    /// # Errors
    /// [`AppError::Refused`]: an unknown, failed or not yet established connection.
    pub fn close(&mut self, conn: ConnId) -> Result<(), AppError> {
        Ok(self.net.borrow_mut().eps[self.host as usize].close(conn)?)
    }

    /// The next plain message ([`Worker::send`]: not a call's request or reply) that arrived
    /// at this worker, on any connection, with its connection; waits up to `timeout`.
    ///
    /// # Errors
    /// [`AppError::Timeout`]; [`AppError::ConnectionFailed`] or [`AppError::PeerClosed`]
    /// when a connection failed or closed before the next message (the messages after it
    /// wait for the next call).
    pub fn recv(&mut self, timeout: Span) -> Result<(ConnId, Bytes), AppError> {
        let plain = |e: &Event| matches!(e, Event::Message { tag: 0, .. });
        match self.wait(timeout, None, plain)? {
            Event::Message { conn, data, .. } => Ok((conn, data)),
            e => Err(as_error(e).unwrap_or(AppError::Timeout { waited: timeout })),
        }
    }

    /// From now on, answer every request and plain message that arrives at this worker with
    /// `handler`'s reply (`None`: no reply), sent on the message's connection (a request's
    /// as the reply to its call, [`Worker::call`]): a server in XRDMA's
    /// run-to-completion style. The handler runs inside the turns of any waiting call on
    /// the fabric: this worker's own ([`Worker::run_for`]), and on the simulator any other
    /// worker's, so a client's [`Worker::call`] gets its reply in one thread. Messages it
    /// answers do not reach [`Worker::recv`].
    pub fn serve(&mut self, handler: impl FnMut(ConnId, Bytes) -> Option<Bytes> + 'static) {
        self.net.borrow_mut().handlers[self.host as usize] = Some(Box::new(handler));
    }

    /// Run the fabric for `span` (a server answering with its handler, [`Worker::serve`]).
    /// A peer closing its connection is a connection's normal end here: it is not reported.
    ///
    /// # Errors
    /// The first connection failure the worker heard meanwhile, or [`AppError::Refused`]
    /// for a reply of its handler the core refused (one too large, say).
    pub fn run_for(&mut self, span: Span) -> Result<(), AppError> {
        let (deadline, me) = (self.now() + span, self.host);
        let mut net = self.net.borrow_mut();
        let failed = failed_not_closed;
        net.run_until(me, deadline, false, |q, _| q.iter().any(failed));
        if let Some(e) = net.errors[me as usize].pop_front() {
            return Err(e);
        }
        let inbox = &mut net.inbox[me as usize];
        inbox.retain(|e| !matches!(e, Event::PeerClosed { .. } | Event::Closed { .. }));
        match inbox.iter().position(failed) {
            Some(i) => match inbox.remove(i).and_then(as_error) {
                Some(e) => Err(e),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Wait up to `timeout` until every message this worker sent is ACKed by its peer (its
    /// buffers free). A peer that closed still takes and ACKs what was sent before its close
    /// reached this side: that is no failure here (a later [`Worker::recv`] reports it).
    ///
    /// # Errors
    /// [`AppError::Timeout`], or the failure of a connection with messages in flight.
    pub fn flush(&mut self, timeout: Span) -> Result<(), AppError> {
        let (deadline, me) = (self.now() + timeout, self.host);
        let mut net = self.net.borrow_mut();
        let failed = failed_not_closed;
        net.run_until(me, deadline, true, |q, unacked| {
            unacked == 0 || q.iter().any(failed)
        });
        let inbox = &mut net.inbox[me as usize];
        if let Some(i) = inbox.iter().position(failed) {
            if let Some(e) = inbox.remove(i).and_then(as_error) {
                return Err(e);
            }
        }
        if net.unacked[me as usize] == 0 {
            Ok(())
        } else {
            Err(AppError::Timeout { waited: timeout })
        }
    }

    /// Run the fabric until this worker's inbox holds an event `want` takes, or a failure on
    /// `conn` (any connection when `None`), whichever comes first; take and return it.
    pub(crate) fn wait(
        &mut self,
        timeout: Span,
        conn: Option<ConnId>,
        want: impl Fn(&Event) -> bool,
    ) -> Result<Event, AppError> {
        let (deadline, me) = (self.now() + timeout, self.host);
        let mut net = self.net.borrow_mut();
        let hit = |e: &Event| want(e) || failure_on(e, conn);
        net.run_until(me, deadline, true, |q, _| q.iter().any(hit));
        if let Some(e) = net.errors[me as usize].pop_front() {
            return Err(e);
        }
        let inbox = &mut net.inbox[me as usize];
        // Events nobody waits for (a close completed, say) do not pile up.
        inbox.retain(|e| !matches!(e, Event::Closed { .. }));
        match inbox.iter().position(hit).and_then(|i| inbox.remove(i)) {
            Some(e) => Ok(e),
            None => Err(AppError::Timeout { waited: timeout }),
        }
    }
}
