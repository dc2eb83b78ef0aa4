//! Leases: a landed message handed to the application as a [`Bytes`] over its landing buffer in
//! registered memory, with no copy ([`xrdma::LocalMemory::lend`]).
//!
//! A [`Lease`] keeps its MR (and so the allocation, the registration and the PD) alive through
//! an `Arc`, and sends its address back on a channel when dropped, on whatever thread drops it.
//! Until the transport takes that address off the channel ([`Leases::poll_returned`]) the range
//! is lent, and the transport refuses every way it could itself let the range be written:
//! [`xrdma::LocalMemory::write`], a receive posted over it, an RDMA READ into it
//! ([`Leases::check_unlent`]).

use crate::resources::Mr;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use xrdma::TransportError;

/// The owner of a lent range: [`Bytes::from_owner`] reads it through `AsRef<[u8]>`.
struct Lease {
    mr: Arc<Mr>,
    /// Offset of the range in the MR, bytes.
    off: usize,
    len: usize,
    /// The range's address, sent back on drop.
    addr: u64,
    back: Sender<u64>,
}

impl AsRef<[u8]> for Lease {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `off..off + len` lies inside the MR's allocation (checked by `Leases::lend`
        // with `Mr::offset_of`), which stays allocated and initialised while `self.mr` holds
        // the `Arc` (it is freed only in `Mr`'s `Drop`). Nothing writes the range while this
        // lease lives: the transport keeps it in `Leases::lent` until its address comes back
        // on the channel, which happens only in this lease's `Drop`, and refuses every write
        // of its own over a lent range (`LocalMemory::write`, `post_recv`, an RDMA READ's
        // local SGE: `Leases::check_unlent`). The device writes memory of this process only
        // for those WRs, or for a peer's RDMA WRITE through the MR's rkey: the core lends only
        // a landing buffer whose message has wholly landed and grants it to no peer until the
        // lease is back, so no peer has the right to write it. (A peer that writes outside its
        // grant can change these bytes; no RDMA buffer is protected from that without memory
        // windows.)
        unsafe { std::slice::from_raw_parts(self.mr.ptr().add(self.off), self.len) }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // The transport may be gone already: then no one waits for the range.
        let _ = self.back.send(self.addr);
    }
}

/// The ranges a transport lent out and the channel their leases come back on.
#[derive(Debug)]
pub(crate) struct Leases {
    /// Lent ranges: address to length, bytes.
    lent: BTreeMap<u64, u64>,
    back: Sender<u64>,
    returned: Receiver<u64>,
}

impl Default for Leases {
    fn default() -> Self {
        let (back, returned) = channel();
        Leases {
            lent: BTreeMap::new(),
            back,
            returned,
        }
    }
}

impl Leases {
    /// Lend `len` bytes at `addr` of `mr`; `None` when the range is not inside `mr`, is empty
    /// or overlaps a range lent already.
    pub(crate) fn lend(&mut self, mr: &Arc<Mr>, addr: u64, len: usize) -> Option<Bytes> {
        let off = mr.offset_of(addr, len as u64)?;
        if len == 0 || self.overlaps(addr, len as u64) {
            return None;
        }
        self.lent.insert(addr, len as u64);
        Some(Bytes::from_owner(Lease {
            mr: Arc::clone(mr),
            off,
            len,
            addr,
            back: self.back.clone(),
        }))
    }

    /// The address of a lease dropped since the last call, its range no longer lent.
    pub(crate) fn poll_returned(&mut self) -> Option<u64> {
        let addr = self.returned.try_recv().ok()?;
        self.lent.remove(&addr);
        Some(addr)
    }

    fn overlaps(&self, addr: u64, len: u64) -> bool {
        let end = addr.saturating_add(len);
        self.lent
            .range(..end)
            .next_back()
            .is_some_and(|(&a, &l)| a.saturating_add(l) > addr)
    }

    /// Refuse `verb` on `len` bytes at `addr` when they overlap a lent range (the application
    /// holds a shared view of it).
    ///
    /// # Errors
    /// [`TransportError::Other`] naming `verb` and the range.
    pub(crate) fn check_unlent(
        &self,
        verb: &'static str,
        addr: u64,
        len: u64,
    ) -> Result<(), TransportError> {
        if self.lent.is_empty() || len == 0 || !self.overlaps(addr, len) {
            return Ok(());
        }
        Err(TransportError::Other {
            verb,
            reason: format!(
                "{len} bytes at {addr:#x} overlap registered memory lent to the application"
            ),
        })
    }
}
