//! # xrdma — the sans-IO core of an RDMA message middleware
//!
//! Modelled on the XRDMA library behind Alibaba's Pangu, ESSD and PolarDB: applications send
//! and receive whole messages; the core sends small ones eagerly into pre-posted receive
//! buffers and large ones by rendezvous (RDMA WRITE into a landing buffer the receiver
//! grants, in fragments), carries a sequence number in each frame's and fragment's immediate
//! data, keeps every send buffer until the receiver ACKs it, paces a per-connection send window
//! that grows with RTT history and shrinks on ECN, and keeps closed connections' QPs in a QP
//! cache for reuse.
//!
//! The core never reads a clock, sleeps, spawns threads, uses `unsafe` or calls the transport:
//! every input carries `now` ([`Time`], an instant in picoseconds; durations are [`Span`]s) and
//! every output is plain data ([`Op`]s: work requests to post, QPs to create or reset, memory
//! to register). [`driver`] performs the ops on a [`Transport`] and feeds their outcomes back.
//! Backends implement [`Transport`]: the packet-level simulator (`xrdma-sim`) and real ibverbs
//! (`xrdma-verbs`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capabilities;
pub mod rc;
pub mod time;
pub mod transport;

pub use capabilities::Capabilities;
pub use rc::RcParams;
pub use time::{Span, Time};
pub use transport::*;
pub use window_signals::WindowSignals;

pub mod config;
pub mod driver;
pub mod endpoint;
pub mod error;
pub mod event;
pub mod fault;
pub mod fragment;
pub mod landing;
pub mod layer;
pub mod messages;
pub mod mr_pool;
pub mod qp_cache;
pub mod ring;
pub mod send_buffer;
pub mod seq;
pub mod slab;
pub mod timer;
pub mod units;
pub mod window;
pub mod window_signals;

pub use config::{Config, ConfigError, MAX_MESSAGE_SIZE, MR_CHUNK_BYTES};
pub use endpoint::{
    ConnSnapshot, ConnState, Endpoint, EndpointSnapshot, QpObservations, SendTiming,
};
pub use error::{ConnId, XrdmaError};
pub use event::{ConnSetup, ConnStats, EndpointResources, Event, MsgId, Op, SetupProgress};
pub use messages::{AnyStack, Messages};
pub use send_buffer::{LentBuffer, SendBuffer};
pub use seq::Seq;
