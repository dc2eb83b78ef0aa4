//! The send arena: registered buffers an application fills and sends, so a large message is
//! posted from where it was written ([`xrdma::LocalMemory::send_buffer`]).
//!
//! Each buffer is an MR of its own, registered with no write access at all: the device can
//! only read it (as a WR's local SGE), never write it, so handing the application a `&mut [u8]`
//! over it is sound. Buffers come in power-of-two size classes of at least [`MIN_CLASS`]
//! bytes; a dropped buffer comes back on a channel and serves the next request of its class,
//! so a steady sender registers memory once. The transport refuses every access of its own to
//! an arena MR (`LocalMemory` reads, writes and leases): the application's buffer is the only
//! view of it.

use crate::resources::{Mr, Pd};
use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use xrdma::{LentBuffer, SendBuffer};

/// The smallest size class, bytes (one default fragment).
pub(crate) const MIN_CLASS: usize = 64 << 10;

/// One arena buffer lent to the application: the first `len` bytes of `mr`.
struct ArenaBuf {
    mr: Option<Arc<Mr>>,
    len: usize,
    back: Sender<Arc<Mr>>,
}

impl ArenaBuf {
    fn ptr(&self) -> *mut u8 {
        self.mr
            .as_ref()
            .map_or(std::ptr::NonNull::dangling().as_ptr(), |m| {
                m.ptr().cast_mut()
            })
    }
}

impl AsRef<[u8]> for ArenaBuf {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `mr` is `Some` until `Drop` (and a dangling pointer with `len` 0 is never
        // built: `Arena::take` makes buffers of at least one byte only from a live MR). The
        // first `len` bytes lie inside the MR's initialised allocation (`len <= mr.len`),
        // kept alive by the `Arc`. No one writes them but through this buffer's `&mut self`:
        // the MR is registered without write access (the device cannot write it), the
        // transport refuses its own reads, writes and leases of a read-only MR, and the
        // buffer is in no free list while it is lent.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len) }
    }
}

impl AsMut<[u8]> for ArenaBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `as_ref`; `&mut self` makes this the only reference, and the device
        // may at most read the bytes (a WR of an earlier message posted from them, which the
        // core let go of only after its ACK).
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), self.len) }
    }
}

impl LentBuffer for ArenaBuf {}

impl Drop for ArenaBuf {
    fn drop(&mut self) {
        if let Some(mr) = self.mr.take() {
            // The transport may be gone: then the MR is deregistered with the last `Arc`.
            let _ = self.back.send(mr);
        }
    }
}

/// Free arena buffers by size class, and the channel lent ones come back on.
#[derive(Debug)]
pub(crate) struct Arena {
    free: BTreeMap<usize, Vec<Arc<Mr>>>,
    back: Sender<Arc<Mr>>,
    returned: Receiver<Arc<Mr>>,
}

impl Default for Arena {
    fn default() -> Self {
        let (back, returned) = channel();
        Arena {
            free: BTreeMap::new(),
            back,
            returned,
        }
    }
}

/// The size class of a `len`-byte buffer: the next power of two, at least [`MIN_CLASS`].
fn class_of(len: usize) -> Option<usize> {
    len.max(MIN_CLASS).checked_next_power_of_two()
}

impl Arena {
    /// A zeroed buffer of `len` bytes (at least 1): a free one of its class, zeroed again, or
    /// a new MR registered on `pd` with `register`, which the caller also keeps in its map of
    /// MRs (so WRs posted from the buffer find its lkey). `None` when registration fails.
    pub(crate) fn take(
        &mut self,
        pd: &Arc<Pd>,
        len: usize,
        mut register: impl FnMut(Arc<Mr>),
    ) -> Option<SendBuffer> {
        while let Ok(mr) = self.returned.try_recv() {
            self.free.entry(mr.len as usize).or_default().push(mr);
        }
        let class = class_of(len.max(1))?;
        let mr = match self.free.get_mut(&class).and_then(Vec::pop) {
            Some(mr) => mr,
            None => {
                let mr = Arc::new(Mr::new(Arc::clone(pd), class as u64, true).ok()?);
                register(Arc::clone(&mr));
                mr
            }
        };
        let mut buf = ArenaBuf {
            mr: Some(mr),
            len,
            back: self.back.clone(),
        };
        buf.as_mut().fill(0);
        Some(SendBuffer::lent(Box::new(buf)))
    }
}
