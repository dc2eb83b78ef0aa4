//! # xrdma-verbs — the real-RDMA backend of xrdma
//!
//! Implements [`xrdma::Transport`] over ibverbs (`rdma-sys`), for ConnectX NICs and
//! Soft-RoCE (`rdma_rxe`):
//!
//! - [`Device`]: opens a device by name (or the first one), queries the port, chooses the
//!   source GID (an explicit index, else the first RoCE v2 GID with an IPv4-mapped address,
//!   else one with a unique-local or global IPv6 address, never a link-local one; an error
//!   listing the GID table when none fits) and allocates the protection domain, and tells
//!   the port's rate ([`Device::link_rate_bps`], [`rate`]: the decoded speed × width on
//!   InfiniBand, the netdev's speed on RoCE, `None` when unknown) for the delay signal of
//!   the send window;
//! - [`VerbsTransport`]: one worker's CQ (with a completion channel), RC QPs and MRs, with
//!   the same verbs semantics as the simulator backend, so the same core runs on both;
//! - [`Clock`]: the wall clock a fabric and its transports share, so an endpoint is never
//!   handed instants of two clocks;
//! - congestion signals ([`rate`], [`port_cnps`]): the port's rate, which the send window's
//!   delay law needs, and the port's CNP count (mlx5's `rp_cnp_handled`), declared as
//!   [`xrdma::Capabilities::cnp_per_port`] only where the device has it. rxe has no CNP
//!   counter, and on a virtio-net NIC that declares no speed no rate either;
//! - [`Hybrid`]: busy-poll while traffic flows, block on the completion channels when idle
//!   ([`hybrid::wait_any`]).
//!
//! Device and GID can be chosen from the environment ([`DeviceConfig::from_env`]):
//! `XRDMA_VERBS_DEVICE`, `XRDMA_VERBS_PORT`, `XRDMA_VERBS_GID_INDEX`.
//!
//! ## Registered memory is lent out only as a lease
//!
//! The NIC may write into a registered MR at any time (a peer's RDMA WRITE, an incoming SEND),
//! so no safe API hands out a `&mut [u8]` over MR memory, nor a `&[u8]` the transport could
//! still let the device write: such a borrow would promise Rust the bytes do not change while
//! the device changes them. Bytes go in and out by copy ([`xrdma::LocalMemory::read_into`],
//! [`xrdma::LocalMemory::read_bytes`], [`xrdma::LocalMemory::write`]):
//!
//! ```no_run
//! use xrdma::{LocalMemory, Transport};
//! # fn f(t: &mut xrdma_verbs::VerbsTransport) -> Result<(), xrdma::TransportError> {
//! let mr = t.register_memory(4096)?;
//! t.write(mr.addr, &[b"ping"])?;
//! let mut out = [0u8; 4];
//! t.read_into(mr.addr, &mut out)?;
//! # Ok(()) }
//! ```
//!
//! The one exception is [`xrdma::LocalMemory::lend`]: a large message that has wholly landed
//! is handed to the application as a `Bytes` over its landing buffer, with no copy. While the
//! lease lives the transport refuses to write the range, to post a receive over it and to READ
//! into it, and the core grants the buffer to no peer; dropping the lease gives it back
//! ([`xrdma::LocalMemory::poll_returned`]).
//!
//! Borrowing a slice of an MR does not compile:
//!
//! ```compile_fail
//! use xrdma::LocalMemory;
//! fn peek(t: &xrdma_verbs::VerbsTransport, addr: u64) -> &[u8] {
//!     t.read(addr, 4).unwrap()
//! }
//! ```
//!
//! This is the workspace's only crate with `unsafe`; every block states why it is sound.
//! Verbs objects are owned by wrappers that destroy them on drop, and each child keeps its
//! parent alive through an `Arc` (MR and QP → PD → context; QP → CQ → completion channel), so
//! teardown runs in the order verbs requires.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

mod arena;
pub mod clock;
pub mod device;
pub mod error;
pub mod gid;
pub mod hybrid;
mod lease;
pub mod port_cnps;
pub mod qp;
pub mod rate;
mod resources;
pub mod soft_roce;
pub mod transport;
pub mod wc;

pub use clock::Clock;
pub use device::{device_names, Device, DeviceConfig, PortInfo};
pub use error::VerbsError;
pub use gid::{GidEntry, GidScope, GidType};
pub use hybrid::{Hybrid, HybridPolicy, HybridStats};
pub use qp::ConnectParams;
pub use rate::NetdevSpeed;
pub use resources::PAGE_BYTES;
pub use transport::{TransportConfig, VerbsTransport};
