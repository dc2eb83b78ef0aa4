//! Calls ([`Worker::call`], [`Worker::start_call`]): requests and replies matched by a
//! correlation id the core carries as the message's tag ([`xrdma::Endpoint::send_tagged`],
//! in the frame header: no byte added to the payload).
//!
//! Tags: 0 is a plain message ([`Worker::send`], [`Worker::recv`]); `1..2^31` a request
//! with that call id; a request's id with bit 31 set its reply. Call ids are per worker, so a
//! reply is matched by its connection and id: calls in flight on many connections at once,
//! or answered out of order on one ([`Worker::recv_call`], [`Worker::reply`]), each get
//! their own reply.

use crate::error::AppError;
use crate::tag::{Tagged, REPLY};
use crate::worker::{as_error, Worker, WorkerKey};
use bytes::Bytes;
use xrdma::{ConnId, Event, MsgId, Span};
use xrdma_runner::fabric::Fabric;

/// A call in flight ([`Worker::start_call`]): wait for its reply with
/// [`Worker::wait_reply`], once (it takes the call), on the worker that started it.
#[derive(Debug, PartialEq, Eq, Hash)]
#[must_use = "a call's reply is only had by waiting for it"]
pub struct Call {
    conn: ConnId,
    id: u32,
    worker: WorkerKey,
}

impl Call {
    /// The connection the call went on.
    pub fn conn(&self) -> ConnId {
        self.conn
    }
}

/// A request taken by [`Worker::recv_call`]: answer it with [`Worker::reply`], once (it takes
/// the request), in any order, on the worker that took it.
#[derive(Debug)]
pub struct Request {
    /// The connection it came on.
    pub conn: ConnId,
    /// Its bytes.
    pub data: Bytes,
    id: u32,
    worker: WorkerKey,
}

/// Whether `e` is the reply to `call`.
fn is_reply(e: &Event, call: &Call) -> bool {
    matches!(e, Event::Message { conn, tag, .. }
        if *conn == call.conn && Tagged::of(*tag) == Tagged::Reply(call.id))
}

impl<F: Fabric> Worker<F> {
    /// Send `request` on `conn` as a call and wait up to `timeout` for its reply: the peer's
    /// [`Worker::serve`] handler's answer, or its [`Worker::reply`]. Messages that are not
    /// this reply wait for the calls that take them. A reply the server's core refuses (one
    /// above its `max_message_size`, say) never comes: the call times out, and the server's
    /// next waiting call reports [`AppError::Refused`].
    ///
    /// # Errors
    /// As [`Worker::start_call`] and [`Worker::wait_reply`].
    pub fn call(
        &mut self,
        conn: ConnId,
        request: impl Into<Bytes>,
        timeout: Span,
    ) -> Result<Bytes, AppError> {
        let call = self.start_call(conn, request)?;
        self.wait_reply(call, timeout)
    }

    /// Send `request` on `conn` as a call and return at once: many calls may be in flight,
    /// on one connection or many; each reply is matched to its call by id.
    ///
    /// # Errors
    /// As [`Worker::send`].
    pub fn start_call(
        &mut self,
        conn: ConnId,
        request: impl Into<Bytes>,
    ) -> Result<Call, AppError> {
        let id = self.with_net(|net, h| {
            let next = &mut net.next_call[h];
            let id = *next;
            // Ids run 1..2^31 and wrap, skipping 0 (a plain message's tag).
            *next = if id + 1 >= REPLY { 1 } else { id + 1 };
            id
        });
        self.send_tagged(conn, request.into(), id)?;
        Ok(Call {
            conn,
            id,
            worker: self.key(),
        })
    }

    /// Wait up to `timeout` for `call`'s reply. A call that times out is given up: its reply,
    /// if it still comes, is dropped.
    ///
    /// # Errors
    /// [`AppError::Timeout`]; [`AppError::ConnectionFailed`] or [`AppError::PeerClosed`] when
    /// the call's connection failed or closed first (a failure on another connection does
    /// not end the wait); [`AppError::Foreign`] for a call another worker started.
    pub fn wait_reply(&mut self, call: Call, timeout: Span) -> Result<Bytes, AppError> {
        if call.worker != self.key() {
            return Err(AppError::Foreign("call"));
        }
        match self.wait(timeout, Some(call.conn), |e| is_reply(e, &call)) {
            Ok(Event::Message { data, .. }) => Ok(data),
            Ok(e) => Err(as_error(e).unwrap_or(AppError::Timeout { waited: timeout })),
            Err(e @ AppError::Timeout { .. }) => {
                self.with_net(|net, h| net.abandoned[h].insert((call.conn, call.id)));
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The next request that arrived at this worker, on any connection; waits up to
    /// `timeout`. Requests a [`Worker::serve`] handler answers do not come here.
    ///
    /// # Errors
    /// As [`Worker::recv`].
    pub fn recv_call(&mut self, timeout: Span) -> Result<Request, AppError> {
        let is_request = |e: &Event| match e {
            Event::Message { tag, .. } => matches!(Tagged::of(*tag), Tagged::Request(_)),
            _ => false,
        };
        match self.wait(timeout, None, is_request)? {
            Event::Message { conn, tag, data } => Ok(Request {
                conn,
                data,
                id: tag,
                worker: self.key(),
            }),
            e => Err(as_error(e).unwrap_or(AppError::Timeout { waited: timeout })),
        }
    }

    /// Answer `request` with `data`: its caller's [`Worker::wait_reply`] gets it, whatever
    /// the order of the replies on the connection.
    ///
    /// # Errors
    /// As [`Worker::send`]; [`AppError::Foreign`] for a request another worker took.
    pub fn reply(&mut self, request: Request, data: impl Into<Bytes>) -> Result<MsgId, AppError> {
        if request.worker != self.key() {
            return Err(AppError::Foreign("request"));
        }
        self.send_tagged(request.conn, data.into(), Tagged::answer(request.id))
    }
}
