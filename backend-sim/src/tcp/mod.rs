//! The TCP baseline: the model of one kernel TCP connection endpoint (both halves: the sender
//! of one byte stream and the receiver of the other), sans-IO like the rest of the simulator.
//!
//! [`TcpConn`] owns no packets, links or timers: the glue hands it the segments that arrive
//! ([`TcpConn::on_segment`]) and the timer expiries ([`TcpConn::on_timeout`] at
//! [`TcpConn::next_timeout`]), and after each event takes every segment it wants sent
//! ([`TcpConn::poll_transmit`] until `None`). The application side moves no bytes either:
//! [`TcpConn::write`] and [`TcpConn::read`] are byte counts, and the glue copies the bytes.
//!
//! What is modelled, with its sources: slow start and congestion avoidance with byte counting
//! (RFC 5681 §3.1, RFC 3465), fast retransmit and NewReno fast recovery (RFC 5681 §3.2,
//! RFC 6582), the retransmission timer with Karn's algorithm and backoff (RFC 6298), delayed
//! ACKs (RFC 1122 §4.2.3.2, RFC 5681 §4.2), receiver and sender silly-window avoidance and
//! zero-window probing (RFC 1122 §4.2.2.17, §4.2.3.3, §4.2.3.4), and DCTCP (RFC 8257). The
//! simplifications are listed on [`TcpConn`].

pub(crate) mod conn;
pub(crate) mod host;
mod settings;
#[cfg(test)]
mod tests;

pub(crate) use conn::{Segment, TcpConfig, TcpConn};
pub(crate) use host::Socket;
pub use host::TcpSocketState;
pub use settings::{TcpSettings, TCP_HEADER_BYTES};
