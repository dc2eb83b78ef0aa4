//! Transports stacked on another transport: [`TransportLayer`] and the one place that forwards
//! every [`Transport`] and [`LocalMemory`] method of a layer.
//!
//! A wrapper (fault injection, host faults, CPU charging, a test's logger, a borrow) names the
//! transport it wraps ([`TransportLayer::inner`], [`TransportLayer::inner_mut`]) and overrides
//! only the calls it intercepts; every other call goes to the wrapped transport. The blanket
//! implementations below are the only code that forwards: each lists every method of both
//! traits, and as the traits provide no bodies, a method added to them fails to compile here
//! until it is forwarded, so no wrapper can leave one out. A type that is a layer cannot also
//! implement [`Transport`] itself (the implementations would conflict).
//!
//! Every hook carries the name of the method it stands for. A layer is called through
//! [`Transport`]; import [`TransportLayer`] only where a layer is implemented, as with both
//! traits in scope a method call on a layer is ambiguous.

use crate::{
    Capabilities, ChainError, LocalMemory, MemoryRegion, QpAddress, QpCaps, QpNum, QpObservation,
    RcParams, RecvWr, SendWr, Time, Transport, TransportError, WorkCompletion,
};
use bytes::Bytes;

/// A transport that wraps another one: it intercepts the calls whose hooks it overrides and
/// passes every other one to [`TransportLayer::inner`] / [`TransportLayer::inner_mut`]. Every
/// type implementing it is a [`Transport`] (and [`LocalMemory`]) through this module's
/// blanket implementations.
///
/// Each hook's provided body calls the same method on the wrapped transport.
pub trait TransportLayer {
    /// The wrapped transport.
    type Inner: Transport + ?Sized;

    /// The wrapped transport.
    fn inner(&self) -> &Self::Inner;

    /// The wrapped transport, mutably.
    fn inner_mut(&mut self) -> &mut Self::Inner;

    /// [`LocalMemory::read_into`] through this layer.
    ///
    /// # Errors
    /// Those of [`LocalMemory::read_into`].
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        self.inner().read_into(addr, out)
    }

    /// [`LocalMemory::read_bytes`] through this layer.
    ///
    /// # Errors
    /// Those of [`LocalMemory::read_bytes`].
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        self.inner().read_bytes(addr, len)
    }

    /// [`LocalMemory::write`] through this layer.
    ///
    /// # Errors
    /// Those of [`LocalMemory::write`].
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        self.inner_mut().write(addr, parts)
    }

    /// [`LocalMemory::lend`] through this layer.
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        self.inner_mut().lend(addr, len)
    }

    /// [`LocalMemory::poll_returned`] through this layer.
    fn poll_returned(&mut self) -> Option<u64> {
        self.inner_mut().poll_returned()
    }

    /// [`LocalMemory::registered_lkey`] through this layer.
    fn registered_lkey(&self, data: &[u8]) -> Option<u32> {
        self.inner().registered_lkey(data)
    }

    /// [`LocalMemory::send_buffer`] through this layer.
    fn send_buffer(&mut self, len: usize) -> Option<crate::SendBuffer> {
        self.inner_mut().send_buffer(len)
    }

    /// [`Transport::now`] through this layer.
    fn now(&self) -> Time {
        self.inner().now()
    }

    /// [`Transport::register_memory`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::register_memory`].
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        self.inner_mut().register_memory(len)
    }

    /// [`Transport::create_qp`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::create_qp`].
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        self.inner_mut().create_qp(caps)
    }

    /// [`Transport::connect_qp`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::connect_qp`].
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        self.inner_mut().connect_qp(qpn, remote)
    }

    /// [`Transport::reset_qp`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::reset_qp`].
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        self.inner_mut().reset_qp(qpn)
    }

    /// [`Transport::post_send`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::post_send`].
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        self.inner_mut().post_send(qpn, wr)
    }

    /// [`Transport::post_send_chain`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::post_send_chain`].
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        self.inner_mut().post_send_chain(qpn, wrs)
    }

    /// [`Transport::post_recv`] through this layer.
    ///
    /// # Errors
    /// Those of [`Transport::post_recv`].
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        self.inner_mut().post_recv(qpn, wr)
    }

    /// [`Transport::poll_cq`] through this layer.
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        self.inner_mut().poll_cq(out, max)
    }

    /// [`Transport::poll_congestion`] through this layer.
    fn poll_congestion(&mut self) -> Option<QpNum> {
        self.inner_mut().poll_congestion()
    }

    /// [`Transport::poll_port_cnps`] through this layer.
    fn poll_port_cnps(&mut self, now: Time) -> u64 {
        self.inner_mut().poll_port_cnps(now)
    }

    /// [`Transport::rc_params`] through this layer.
    fn rc_params(&self) -> RcParams {
        self.inner().rc_params()
    }

    /// [`Transport::capabilities`] through this layer.
    fn capabilities(&self) -> Capabilities {
        self.inner().capabilities()
    }

    /// [`Transport::observe_qp`] through this layer.
    fn observe_qp(&self, qpn: QpNum) -> QpObservation {
        self.inner().observe_qp(qpn)
    }
}

impl<L: TransportLayer + ?Sized> LocalMemory for L {
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        TransportLayer::read_into(self, addr, out)
    }
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        TransportLayer::read_bytes(self, addr, len)
    }
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        TransportLayer::write(self, addr, parts)
    }
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        TransportLayer::lend(self, addr, len)
    }
    fn poll_returned(&mut self) -> Option<u64> {
        TransportLayer::poll_returned(self)
    }
    fn registered_lkey(&self, data: &[u8]) -> Option<u32> {
        TransportLayer::registered_lkey(self, data)
    }
    fn send_buffer(&mut self, len: usize) -> Option<crate::SendBuffer> {
        TransportLayer::send_buffer(self, len)
    }
}

impl<L: TransportLayer + ?Sized> Transport for L {
    fn now(&self) -> Time {
        TransportLayer::now(self)
    }
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        TransportLayer::register_memory(self, len)
    }
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        TransportLayer::create_qp(self, caps)
    }
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        TransportLayer::connect_qp(self, qpn, remote)
    }
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        TransportLayer::reset_qp(self, qpn)
    }
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        TransportLayer::post_send(self, qpn, wr)
    }
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        TransportLayer::post_send_chain(self, qpn, wrs)
    }
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        TransportLayer::post_recv(self, qpn, wr)
    }
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        TransportLayer::poll_cq(self, out, max)
    }
    fn poll_congestion(&mut self) -> Option<QpNum> {
        TransportLayer::poll_congestion(self)
    }
    fn poll_port_cnps(&mut self, now: Time) -> u64 {
        TransportLayer::poll_port_cnps(self, now)
    }
    fn rc_params(&self) -> RcParams {
        TransportLayer::rc_params(self)
    }
    fn capabilities(&self) -> Capabilities {
        TransportLayer::capabilities(self)
    }
    fn observe_qp(&self, qpn: QpNum) -> QpObservation {
        TransportLayer::observe_qp(self, qpn)
    }
}

/// A mutable borrow of a transport is a transport, so a driver can hold `&mut T` where a
/// backend hands out its transports by reference: a layer that intercepts nothing.
impl<T: Transport + ?Sized> TransportLayer for &mut T {
    type Inner = T;
    fn inner(&self) -> &T {
        self
    }
    fn inner_mut(&mut self) -> &mut T {
        self
    }
}
