//! # xrdma-app — xrdma as a library an application uses
//!
//! A [`Worker`] is one thread's xrdma: its endpoint (connections over RC QPs, their QP cache,
//! the MR pool) on a fabric, run to completion inside the calls the application makes. The
//! application sends and receives whole messages of any size up to
//! [`xrdma::Config::max_message_size`] (small ones eagerly, large ones by rendezvous in 64 KiB
//! fragments: the core decides), makes calls that wait for their reply, and hears every
//! failure as an [`AppError`], never as a hang: each waiting call takes a timeout.
//!
//! The same calls run on the simulator, so an application's tests need no hardware.
//!
//! ## Quick start: an echo on the simulator
//!
//! ```
//! use xrdma_app::{Bytes, Config, SimConfig, Span, Worker};
//!
//! # fn main() -> Result<(), xrdma_app::AppError> {
//! let mut hosts = Worker::simulated(SimConfig::default(), &Config::default())?;
//! let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
//! // The server answers each message with its bytes, inside the fabric's turns.
//! server.serve(|_conn, msg: Bytes| Some(msg));
//! let conn = client.connect(&server)?;
//! let reply = client.call(conn, &b"ping"[..], Span::from_ms(1))?;
//! assert_eq!(&reply[..], b"ping");
//! // Or message by message, each side asking in turn.
//! # let mut hosts = Worker::simulated(SimConfig::default(), &Config::default())?;
//! # let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
//! # let conn = client.connect(&server)?;
//! client.send(conn, &b"one way"[..])?;
//! let (at_server, msg) = server.recv(Span::from_ms(1))?;
//! assert_eq!((&msg[..], at_server.index()), (&b"one way"[..], 0));
//! # Ok(())
//! # }
//! ```
//!
//! ## Calls in flight
//!
//! A call's request and reply carry its id in the frame header ([`rpc`]): start many, on
//! one connection or many, and wait for each reply in any order; a server may take requests
//! ([`Worker::recv_call`]) and answer them in any order ([`Worker::reply`]).
//!
//! ```
//! # use xrdma_app::{Bytes, Config, SimConfig, Span, Worker};
//! # fn main() -> Result<(), xrdma_app::AppError> {
//! # let mut hosts = Worker::simulated(SimConfig::default(), &Config::default())?;
//! # let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
//! let conn = client.connect(&server)?;
//! let first = client.start_call(conn, &b"first"[..])?;
//! let second = client.start_call(conn, &b"second"[..])?;
//! let (a, b) = (server.recv_call(Span::from_ms(1))?, server.recv_call(Span::from_ms(1))?);
//! server.reply(b, &b"to second"[..])?; // newest first
//! server.reply(a, &b"to first"[..])?;
//! assert_eq!(&client.wait_reply(first, Span::from_ms(1))?[..], b"to first");
//! assert_eq!(&client.wait_reply(second, Span::from_ms(1))?[..], b"to second");
//! # Ok(())
//! # }
//! ```
//!
//! `examples/echo.rs` is the first echo as a program; `examples/kv.rs` a key-value store
//! over calls.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod address;
mod error;
mod exchange;
mod net;
mod placement;
pub mod rpc;
mod sim;
mod tag;
mod worker;

pub use bytes::Bytes;
pub use error::AppError;
pub use rpc::{Call, Request};
pub use worker::Worker;
pub use xrdma::{Config, ConnId, MsgId, SendBuffer, Span, Time, XrdmaError};
pub use xrdma_observe::placement::Placement;
pub use xrdma_runner::fabric::{Fabric, Polling, PollingStats, SimFabric, VerbsFabric};
pub use xrdma_sim::SimConfig;
