//! Owned ibverbs objects: device context, protection domain (PD), completion channel,
//! completion queue (CQ) and memory region (MR).
//!
//! Each wrapper owns one raw object and destroys it on drop. Children hold their parents in
//! an [`Arc`] (MR → PD → context, CQ → channel → context), so a parent is destroyed only
//! after its last child, which is the order `ibv_dealloc_pd(3)` and `ibv_close_device(3)`
//! require (they fail with `EBUSY` while children exist).

use crate::error::VerbsError;
use rdma_sys::*;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::Arc;

/// Page size used to align registered memory, bytes.
pub const PAGE_BYTES: usize = 4096;

/// An open device context (`ibv_open_device`).
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) raw: NonNull<ibv_context>,
}

// SAFETY: libibverbs contexts may be used from any thread (libibverbs is thread-safe; the
// provider serialises internally), and the pointer is owned by this wrapper alone.
unsafe impl Send for Context {}
// SAFETY: as above; shared use only calls thread-safe verbs.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `ibv_open_device` and every child holds an Arc to this
        // context, so none is alive here; the pointer is not used after this call.
        unsafe {
            ibv_close_device(self.raw.as_ptr());
        }
    }
}

/// A protection domain (`ibv_alloc_pd`).
#[derive(Debug)]
pub(crate) struct Pd {
    pub(crate) raw: NonNull<ibv_pd>,
    _ctx: Arc<Context>,
}

// SAFETY: a PD is a kernel handle; verbs on it are thread-safe and the wrapper owns it.
unsafe impl Send for Pd {}
// SAFETY: as above.
unsafe impl Sync for Pd {}

impl Pd {
    pub(crate) fn new(ctx: Arc<Context>) -> Result<Self, VerbsError> {
        // SAFETY: `ctx.raw` is a live context (kept alive by the Arc we store).
        let raw = unsafe { ibv_alloc_pd(ctx.raw.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last("ibv_alloc_pd"))?;
        Ok(Pd { raw, _ctx: ctx })
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: MRs and QPs hold an Arc to this PD, so none is alive; `raw` is ours.
        unsafe {
            ibv_dealloc_pd(self.raw.as_ptr());
        }
    }
}

/// A completion channel (`ibv_create_comp_channel`): a file descriptor that becomes readable
/// when an armed CQ gets a completion.
#[derive(Debug)]
pub(crate) struct CompChannel {
    pub(crate) raw: NonNull<ibv_comp_channel>,
    _ctx: Arc<Context>,
}

// SAFETY: the channel is an fd owned by this wrapper; verbs on it are thread-safe.
unsafe impl Send for CompChannel {}
// SAFETY: as above.
unsafe impl Sync for CompChannel {}

impl CompChannel {
    pub(crate) fn new(ctx: Arc<Context>) -> Result<Self, VerbsError> {
        // SAFETY: `ctx.raw` is a live context.
        let raw = unsafe { ibv_create_comp_channel(ctx.raw.as_ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last("ibv_create_comp_channel"))?;
        // SAFETY: `raw` is a live channel; reading its `fd` field is a plain load.
        let fd = unsafe { (*raw.as_ptr()).fd };
        let chan = CompChannel { raw, _ctx: ctx };
        // Non-blocking, so draining events never blocks (`ibv_get_cq_event` returns EAGAIN).
        // SAFETY: `fd` is the channel's open descriptor; F_GETFL/F_SETFL take no pointers.
        let rc = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 {
                flags
            } else {
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK)
            }
        };
        if rc < 0 {
            return Err(VerbsError::last(
                "fcntl(O_NONBLOCK) on the completion channel",
            ));
        }
        Ok(chan)
    }

    pub(crate) fn fd(&self) -> i32 {
        // SAFETY: `raw` is live while `self` is; `fd` is a plain field.
        unsafe { (*self.raw.as_ptr()).fd }
    }
}

impl Drop for CompChannel {
    fn drop(&mut self) {
        // SAFETY: every CQ using the channel holds an Arc to it, so none is alive.
        unsafe {
            ibv_destroy_comp_channel(self.raw.as_ptr());
        }
    }
}

/// A completion queue bound to a completion channel (`ibv_create_cq`).
#[derive(Debug)]
pub(crate) struct Cq {
    pub(crate) raw: NonNull<ibv_cq>,
    pub(crate) channel: Arc<CompChannel>,
    _ctx: Arc<Context>,
}

// SAFETY: a CQ may be polled from any thread (one at a time, which `&mut` on the owning
// transport guarantees); the wrapper owns it.
unsafe impl Send for Cq {}
// SAFETY: shared references only read the immutable `cqe` field or call thread-safe verbs.
unsafe impl Sync for Cq {}

impl Cq {
    pub(crate) fn new(
        ctx: Arc<Context>,
        channel: Arc<CompChannel>,
        depth: u32,
    ) -> Result<Self, VerbsError> {
        let cqe = i32::try_from(depth).unwrap_or(i32::MAX);
        // SAFETY: context and channel are live (held by the Arcs stored below); a null
        // `cq_context` is allowed.
        let raw = unsafe {
            ibv_create_cq(
                ctx.raw.as_ptr(),
                cqe,
                std::ptr::null_mut(),
                channel.raw.as_ptr(),
                0,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| VerbsError::last("ibv_create_cq"))?;
        Ok(Cq {
            raw,
            channel,
            _ctx: ctx,
        })
    }

    /// The CQ's real capacity (the provider may round the request up).
    pub(crate) fn capacity(&self) -> u32 {
        // SAFETY: `raw` is live; `cqe` is a plain field the provider keeps current.
        let cqe = unsafe { (*self.raw.as_ptr()).cqe };
        u32::try_from(cqe).unwrap_or(0)
    }

    /// Grow the CQ to at least `depth` entries (`ibv_resize_cq`).
    pub(crate) fn resize(&self, depth: u32) -> Result<(), VerbsError> {
        let cqe = i32::try_from(depth).unwrap_or(i32::MAX);
        // SAFETY: `raw` is live; resizing keeps the completions already queued.
        let rc = unsafe { ibv_resize_cq(self.raw.as_ptr(), cqe) };
        if rc != 0 {
            return Err(VerbsError::verb("ibv_resize_cq", rc));
        }
        Ok(())
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: QPs hold an Arc to the CQ, so none is alive; every CQ event was acked
        // right after `ibv_get_cq_event` (see `VerbsTransport::arm`).
        unsafe {
            ibv_destroy_cq(self.raw.as_ptr());
        }
    }
}

/// Page-aligned zeroed memory registered with a PD (`ibv_reg_mr`), owned together.
#[derive(Debug)]
pub(crate) struct Mr {
    raw: NonNull<ibv_mr>,
    buf: NonNull<u8>,
    layout: Layout,
    /// Length the caller asked for, bytes (the allocation may be rounded up to a page).
    pub(crate) len: u64,
    /// Registered for the device to read only (a send arena buffer, `crate::arena`): no
    /// local or remote write access, so the device never writes it.
    pub(crate) read_only: bool,
    _pd: Arc<Pd>,
}

// SAFETY: the buffer and the MR handle are owned by this wrapper alone; moving them to
// another thread is fine.
unsafe impl Send for Mr {}
// SAFETY: through `&Mr`, other threads only read: a lease (`crate::lease`) reads its own range,
// and `read_into`/`read_vec` copy out. The one write through `&Mr` (`Mr::write`) is called
// only by the transport's `LocalMemory::write`, which holds `&mut VerbsTransport`, so writes
// are serialised, and it refuses a range lent to a lease; the handle fields are read-only.
// The exception is a read-only MR of the send arena (`crate::arena`): the application's one
// buffer over it reads and writes it, and the transport touches none of its bytes.
unsafe impl Sync for Mr {}

impl Mr {
    /// Allocate `len` zeroed bytes aligned to [`PAGE_BYTES`] and register them with local
    /// write, remote write and remote read access; or, `read_only`, with none of them (the
    /// device may then only read the memory, as the local SGE of a SEND or WRITE).
    ///
    /// The allocation is rounded up to whole pages, but only the `len` bytes (at least 1) are
    /// registered: the device refuses a remote WRITE or READ past the MR's end as
    /// `MemoryRegion::len` states it (`RemAccessErr`), instead of reaching into the rest of
    /// the last page.
    pub(crate) fn new(pd: Arc<Pd>, len: u64, read_only: bool) -> Result<Self, String> {
        let reg_len = usize::try_from(len)
            .map_err(|_| "length does not fit this machine's address space".to_string())?
            .max(1);
        let alloc_len = reg_len
            .checked_next_multiple_of(PAGE_BYTES)
            .ok_or_else(|| "length overflows".to_string())?;
        let layout = Layout::from_size_align(alloc_len, PAGE_BYTES).map_err(|e| e.to_string())?;
        // SAFETY: `layout` has a non-zero size.
        let buf = unsafe { alloc_zeroed(layout) };
        let buf = NonNull::new(buf).ok_or_else(|| "out of memory".to_string())?;
        let access = if read_only {
            ibv_access_flags(0)
        } else {
            ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ
        };
        // SAFETY: `pd.raw` is live (Arc stored below); `buf` points to `alloc_len` bytes we own
        // and keep until after `ibv_dereg_mr` in Drop, and the registered `reg_len` bytes lie
        // inside them (`reg_len <= alloc_len`).
        let raw = unsafe {
            ibv_reg_mr(
                pd.raw.as_ptr(),
                buf.as_ptr().cast(),
                reg_len,
                access.0 as i32,
            )
        };
        let Some(raw) = NonNull::new(raw) else {
            let err = VerbsError::last("ibv_reg_mr").to_string();
            // SAFETY: `buf` came from `alloc_zeroed(layout)` and was not registered.
            unsafe { dealloc(buf.as_ptr(), layout) };
            return Err(err);
        };
        Ok(Mr {
            raw,
            buf,
            layout,
            len,
            read_only,
            _pd: pd,
        })
    }

    /// The first byte.
    pub(crate) fn ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    /// Virtual address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.buf.as_ptr() as u64
    }

    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: `raw` is live while `self` is; `lkey` is a plain field.
        unsafe { (*self.raw.as_ptr()).lkey }
    }

    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: as for `lkey`.
        unsafe { (*self.raw.as_ptr()).rkey }
    }

    /// Offset of `addr..addr+len` inside this MR, if it lies inside.
    pub(crate) fn offset_of(&self, addr: u64, len: u64) -> Option<usize> {
        let off = addr.checked_sub(self.addr())?;
        (off.checked_add(len)? <= self.len).then_some(off as usize)
    }

    /// Copy the `out.len()` bytes at `addr` into `out`; `false` (and `out` untouched) when the
    /// range is not inside this MR.
    pub(crate) fn read_into(&self, addr: u64, out: &mut [u8]) -> bool {
        let Some(off) = self.offset_of(addr, out.len() as u64) else {
            return false;
        };
        // SAFETY: the source `off..off + out.len()` lies inside our allocation (checked just
        // above: `off + len <= self.len <= layout.size()`), which stays allocated while `&self`
        // is borrowed (it is freed only in `Drop`) and is initialised (zeroed at allocation;
        // since then written only as bytes, by us or by the device). `out` is a `&mut` that
        // cannot overlap the MR: the only references into MR memory this crate hands out are
        // leases, shared (`crate::lease`). The bytes are copied as plain `u8` through a raw
        // pointer (a lease on the source only reads it too): if the NIC writes the range
        // concurrently, `out` gets stale or mixed bytes, never undefined behaviour. (The core
        // reads only ranges whose receive or WRITE completion it has polled, so it sees whole
        // data.)
        unsafe {
            std::ptr::copy_nonoverlapping(self.buf.as_ptr().add(off), out.as_mut_ptr(), out.len());
        }
        true
    }

    /// The `len` bytes at `addr` in a new `Vec` (one allocation, one copy, no zeroing);
    /// `None` when the range is not inside this MR.
    pub(crate) fn read_vec(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let off = self.offset_of(addr, len as u64)?;
        let mut v = Vec::with_capacity(len);
        // SAFETY: the source range is inside the live, initialised allocation, read as plain
        // bytes through a raw pointer with no reference to it, exactly as in `read_into`; the
        // destination is the fresh `Vec`'s own capacity of at least `len` bytes, which cannot
        // overlap the MR. After the copy its first `len` bytes are initialised, so `set_len`
        // exposes only initialised `u8`s.
        unsafe {
            std::ptr::copy_nonoverlapping(self.buf.as_ptr().add(off), v.as_mut_ptr(), len);
            v.set_len(len);
        }
        Some(v)
    }

    /// Copy `parts`, back to back, to `addr`; `false` (and nothing written) when the range is
    /// not inside this MR.
    ///
    /// # Safety
    /// No lease may cover any byte of the range (`crate::lease::Leases::check_unlent`), and
    /// no other call may write this MR at the same time (the transport calls this only from
    /// `LocalMemory::write`, under `&mut VerbsTransport`).
    pub(crate) unsafe fn write(&self, addr: u64, parts: &[&[u8]]) -> bool {
        let Some(mut off) = self.offset_of(addr, xrdma::gather_len(parts)) else {
            return false;
        };
        for data in parts {
            // SAFETY: the destination `off..off + data.len()` lies inside our live allocation:
            // the whole gather's range was checked just above and the parts are laid back to
            // back within it. The only references into MR memory this crate hands out are
            // leases, and the caller guarantees none covers the destination: so no Rust
            // reference to the destination exists, and `data` (which may be a lease on
            // another range) does not overlap it. The caller also guarantees no concurrent
            // write. The device may read the range concurrently (a posted SEND or a peer's
            // READ), in which case it transfers stale or mixed bytes, which is a protocol
            // error and not undefined behaviour. The core writes only ranges it has not
            // handed to the device.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data.as_ptr(),
                    self.buf.as_ptr().add(off),
                    data.len(),
                );
            }
            off += data.len();
        }
        true
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `ibv_reg_mr` over `buf`; deregistering first means the
        // device no longer uses the memory when it is freed; `buf`/`layout` match the
        // allocation. QPs that might still reference the MR are dropped before MRs (see
        // field order in `VerbsTransport`).
        unsafe {
            ibv_dereg_mr(self.raw.as_ptr());
            dealloc(self.buf.as_ptr(), self.layout);
        }
    }
}
