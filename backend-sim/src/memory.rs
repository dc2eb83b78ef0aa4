//! A host's registered memory regions (MRs): real bytes, addressed by virtual address, and
//! the NIC's DMA copy from one host's memory into another's.
//!
//! Besides the MRs it allocates, a host can register immutable application memory for its
//! NIC to read in place ([`Memory::register_external`]): a [`Bytes`] addressed by its own
//! pointer, as `ibv_reg_mr` registers a process's buffer. A DMA from it copies nothing: the
//! destination holds the bytes by reference ([`crate::extents`]).

use crate::extents::Extents;
use bytes::Bytes;
use std::borrow::Cow;
use std::collections::VecDeque;
use xrdma::{MemoryRegion, TransportError};

/// Largest single registration accepted (bytes): 16 GiB.
pub(crate) const MAX_MR_BYTES: u64 = 1 << 34;
/// Gap left between consecutive MRs so an overrun of one never lands in the next.
const GUARD: u64 = 1 << 12;

#[derive(Debug)]
struct Mr {
    region: MemoryRegion,
    data: Vec<u8>,
    /// Ranges whose bytes a DMA left by reference; they stand in for `data` there.
    held: Extents,
}

/// Application memory registered for local reads in place (no remote access).
#[derive(Debug)]
struct External {
    region: MemoryRegion,
    data: Bytes,
}

/// Index of the first external registration in the key space (allocated MRs stay below).
const EXTERNAL_BASE: usize = 1 << 23;

/// The MRs of one host, sorted by address (addresses are handed out increasing).
#[derive(Debug)]
pub(crate) struct Memory {
    mrs: Vec<Mr>,
    next_addr: u64,
    host: u32,
    /// Whether MRs hold bytes; when false, `data` is empty and reads see `zeros`.
    carry: bool,
    /// Zeros as long as the largest MR (payload-free mode only; `vec![0; n]` maps pages
    /// lazily, so untouched zeros cost no resident memory).
    zeros: Vec<u8>,
    /// Application memory registered in place ([`Memory::register_external`]).
    externals: Vec<External>,
    /// Addresses lent ([`Memory::lend`]) and already free again: a lease over held bytes
    /// does not alias the MR, which can take new bytes at once.
    returned: VecDeque<u64>,
}

/// Whether `addr..addr + len` meets region `r`.
fn overlaps(r: &MemoryRegion, addr: u64, len: u64) -> bool {
    addr < r.addr.saturating_add(r.len) && r.addr < addr.saturating_add(len)
}

/// Key layout: `(index + 1) << 8 | tag`, tag = low byte of `2·host` (lkey) or `2·host + 1`
/// (rkey), so an lkey never passes as an rkey.
fn key(idx: usize, host: u32, remote: bool) -> u32 {
    let tag = (host.wrapping_mul(2) + remote as u32) & 0xFF;
    ((idx as u32 + 1) << 8) | tag
}

impl Memory {
    pub(crate) fn new(host: u32) -> Self {
        // Each host's address space starts at a different base: (host + 1)·2^36.
        Memory {
            mrs: Vec::new(),
            next_addr: (host as u64 + 1) << 36,
            host,
            carry: true,
            zeros: Vec::new(),
            externals: Vec::new(),
            returned: VecDeque::new(),
        }
    }

    /// Choose whether MRs hold real bytes (see `SimConfig::carry_payload`); set before any
    /// registration.
    pub(crate) fn set_carry_payload(&mut self, carry: bool) {
        self.carry = carry;
    }

    /// Whether MRs hold real bytes.
    #[inline]
    pub(crate) fn carries_payload(&self) -> bool {
        self.carry
    }

    /// Register `len` zeroed bytes.
    pub(crate) fn register(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        if len > MAX_MR_BYTES {
            return Err(TransportError::RegistrationFailed {
                len,
                reason: format!("larger than the simulator's {MAX_MR_BYTES}-byte limit"),
            });
        }
        if self.mrs.len() >= EXTERNAL_BASE {
            return Err(TransportError::RegistrationFailed {
                len,
                reason: "too many memory regions".into(),
            });
        }
        let idx = self.mrs.len();
        let mut addr = self.next_addr;
        // Application memory registered in place keeps its own addresses: step over it.
        while let Some(x) = self
            .externals
            .iter()
            .find(|x| overlaps(&x.region, addr, len + GUARD))
        {
            addr = (x.region.addr + x.region.len + GUARD).next_multiple_of(GUARD);
        }
        self.next_addr = (addr + len + GUARD).next_multiple_of(GUARD);
        let region = MemoryRegion {
            addr,
            len,
            lkey: key(idx, self.host, false),
            rkey: key(idx, self.host, true),
        };
        // `vec![0; n]` maps zeroed pages lazily, so large idle registrations cost nothing.
        let data = if self.carry {
            vec![0u8; len as usize]
        } else {
            if len as usize > self.zeros.len() {
                self.zeros = vec![0u8; len as usize];
            }
            Vec::new()
        };
        self.mrs.push(Mr {
            region,
            data,
            held: Extents::default(),
        });
        Ok(region)
    }

    /// Register `data`, the application's own immutable memory, for the NIC to read in place
    /// at its own address (`data.as_ptr()`): local reads only (its rkey matches nothing).
    /// Registering the same buffer again returns its first registration.
    ///
    /// The host's own MRs never share addresses with it: one registered later is placed past
    /// it, and an application buffer lying where an MR already is cannot be registered.
    ///
    /// # Errors
    /// [`TransportError::RegistrationFailed`] past 2^16 external registrations, or when
    /// `data` lies where one of the host's MRs is addressed (the caller then stages copies).
    pub(crate) fn register_external(
        &mut self,
        data: Bytes,
    ) -> Result<MemoryRegion, TransportError> {
        let (addr, len) = (data.as_ptr() as u64, data.len() as u64);
        if let Some(x) = self
            .externals
            .iter()
            .find(|x| x.region.addr == addr && x.region.len == len)
        {
            return Ok(x.region);
        }
        if self.mrs.iter().any(|m| overlaps(&m.region, addr, len)) {
            return Err(TransportError::RegistrationFailed {
                len,
                reason: "it lies where this host's simulated MRs are addressed".into(),
            });
        }
        if self.externals.len() >= 1 << 16 {
            return Err(TransportError::RegistrationFailed {
                len,
                reason: "too many registrations of application memory".into(),
            });
        }
        let idx = EXTERNAL_BASE + self.externals.len();
        let region = MemoryRegion {
            addr,
            len,
            lkey: key(idx, self.host, false),
            rkey: 0,
        };
        self.externals.push(External { region, data });
        Ok(region)
    }

    /// The external registration holding `addr..addr + len`, and the offset of `addr` in it.
    #[inline]
    fn external(&self, addr: u64, len: u64) -> Option<(&External, usize)> {
        self.externals.iter().find_map(|x| {
            let off = addr.checked_sub(x.region.addr)?;
            (off.checked_add(len)? <= x.region.len).then_some((x, off as usize))
        })
    }

    /// The lkey of the external registration holding `data` where it lies, if any.
    pub(crate) fn external_lkey(&self, data: &[u8]) -> Option<u32> {
        self.external(data.as_ptr() as u64, data.len() as u64)
            .map(|(x, _)| x.region.lkey)
    }

    fn index_of_key(&self, k: u32, remote: bool) -> Option<usize> {
        let idx = ((k >> 8) as usize).checked_sub(1)?;
        (idx < self.mrs.len() && key(idx, self.host, remote) == k).then_some(idx)
    }

    /// Whether local key `k` is external registration `idx`'s and it holds `addr..addr+len`.
    fn external_key_holds(&self, k: u32, addr: u64, len: u64) -> bool {
        let Some(idx) = ((k >> 8) as usize).checked_sub(1 + EXTERNAL_BASE) else {
            return false;
        };
        self.externals.get(idx).is_some_and(|x| {
            x.region.lkey == k
                && addr
                    .checked_sub(x.region.addr)
                    .and_then(|off| off.checked_add(len))
                    .is_some_and(|end| end <= x.region.len)
        })
    }

    fn range_in(mr: &Mr, addr: u64, len: u64) -> Option<usize> {
        let off = addr.checked_sub(mr.region.addr)?;
        (off.checked_add(len)? <= mr.region.len).then_some(off as usize)
    }

    /// Check that `addr..addr+len` lies in the MR with local key `lkey`.
    pub(crate) fn check_lkey(&self, lkey: u32, addr: u64, len: u64) -> bool {
        self.index_of_key(lkey, false)
            .and_then(|i| Self::range_in(&self.mrs[i], addr, len))
            .is_some()
            || self.external_key_holds(lkey, addr, len)
    }

    /// Check that `addr..addr+len` lies in the MR with remote key `rkey`.
    pub(crate) fn check_rkey(&self, rkey: u32, addr: u64, len: u64) -> bool {
        self.index_of_key(rkey, true)
            .and_then(|i| Self::range_in(&self.mrs[i], addr, len))
            .is_some()
    }

    fn locate(&self, addr: u64, len: u64) -> Option<(usize, usize)> {
        // The last MR starting at or below `addr`.
        let i = self
            .mrs
            .partition_point(|m| m.region.addr <= addr)
            .checked_sub(1)?;
        Self::range_in(&self.mrs[i], addr, len).map(|off| (i, off))
    }

    fn bad(addr: u64, len: u64) -> TransportError {
        TransportError::BadAddress { addr, len, key: 0 }
    }

    /// The `len` bytes at `addr`: borrowed where they lie in one piece (an MR's own bytes,
    /// one held extent, application memory), gathered where an MR holds them partly by
    /// reference. Sound to lend out here, unlike on a real NIC: simulated memory is plain
    /// Rust memory that only `&mut self` methods change.
    pub(crate) fn read(&self, addr: u64, len: usize) -> Result<Cow<'_, [u8]>, TransportError> {
        if let Some((x, off)) = self.external(addr, len as u64) {
            return Ok(Cow::Borrowed(&x.data[off..off + len]));
        }
        let (i, off) = self
            .locate(addr, len as u64)
            .ok_or_else(|| Self::bad(addr, len as u64))?;
        if !self.carry {
            return Ok(Cow::Borrowed(&self.zeros[..len]));
        }
        let mr = &self.mrs[i];
        let own = &mr.data[off..off + len];
        if mr.held.is_empty() {
            return Ok(Cow::Borrowed(own));
        }
        Ok(mr.held.read(off, own))
    }

    /// The buffer holding all of `addr..addr + len` and the offset in it, when one does (a
    /// range of application memory, or of an MR that one DMA'd extent covers): the bytes can
    /// then be shared, not copied.
    pub(crate) fn shared(&self, addr: u64, len: usize) -> Option<(Bytes, usize)> {
        if let Some((x, off)) = self.external(addr, len as u64) {
            return Some((x.data.clone(), off));
        }
        if !self.carry {
            return None;
        }
        let (i, off) = self.locate(addr, len as u64)?;
        let (src, at) = self.mrs[i].held.shared(off, len)?;
        Some((src.clone(), at))
    }

    /// The `len` bytes at `addr` as one [`Bytes`] with no copy, when one buffer holds them
    /// ([`Memory::shared`]); the address then comes back from [`Memory::poll_returned`] at
    /// once, as the lease does not alias the MR.
    pub(crate) fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        let (src, at) = self.shared(addr, len)?;
        self.returned.push_back(addr);
        Some(src.slice(at..at + len))
    }

    /// An address given to [`Memory::lend`], oldest first.
    pub(crate) fn poll_returned(&mut self) -> Option<u64> {
        self.returned.pop_front()
    }

    /// Copy `data` to `addr`.
    pub(crate) fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), TransportError> {
        self.write_parts(addr, &[data])
    }

    /// Copy `parts`, back to back, to `addr` (one range check).
    pub(crate) fn write_parts(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = xrdma::gather_len(parts);
        let (i, mut off) = self.locate(addr, len).ok_or_else(|| Self::bad(addr, len))?;
        if self.carry {
            let mr = &mut self.mrs[i];
            mr.held.clear(off, len as usize);
            for p in parts {
                mr.data[off..off + p.len()].copy_from_slice(p);
                off += p.len();
            }
        }
        Ok(())
    }

    /// Hold `src[at..at + len]` at `addr` by reference (a DMA from a buffer that never
    /// changes), as if copied.
    fn put_shared(&mut self, addr: u64, src: &Bytes, at: usize, len: usize) -> bool {
        let Some((i, off)) = self.locate(addr, len as u64) else {
            return false;
        };
        if self.carry {
            self.mrs[i].held.put(off, src, at, len);
        }
        true
    }
}

impl crate::Simulation {
    /// Copy `len` bytes from `src_addr` on host `s` to `dst_addr` on host `d`; false when
    /// either range is not registered memory.
    pub(crate) fn copy_bytes(
        &mut self,
        s: u32,
        src_addr: u64,
        d: u32,
        dst_addr: u64,
        len: u32,
    ) -> bool {
        let (s, d) = (s as usize, d as usize);
        if !self.hosts[d].mem.carries_payload() {
            return true;
        }
        // Bytes one immutable buffer holds are shared, not copied.
        if let Some((src, at)) = self.hosts[s].mem.shared(src_addr, len as usize) {
            return self.hosts[d]
                .mem
                .put_shared(dst_addr, &src, at, len as usize);
        }
        if s != d {
            // Two distinct hosts: borrow both memories and copy once.
            let (src_host, dst_host) = if s < d {
                let (lo, hi) = self.hosts.split_at_mut(d);
                (&lo[s], &mut hi[0])
            } else {
                let (lo, hi) = self.hosts.split_at_mut(s);
                (&hi[0], &mut lo[d])
            };
            let Ok(src) = src_host.mem.read(src_addr, len as usize) else {
                return false;
            };
            return dst_host.mem.write(dst_addr, &src).is_ok();
        }
        let Ok(src) = self.hosts[s].mem.read(src_addr, len as usize) else {
            return false;
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(&src);
        self.hosts[d].mem.write(dst_addr, &self.scratch).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_ranges() {
        let mut m = Memory::new(3);
        let a = m.register(100).unwrap();
        let b = m.register(50).unwrap();
        assert!(b.addr >= a.addr + 100 + GUARD);
        assert!(m.check_lkey(a.lkey, a.addr, 100));
        assert!(!m.check_lkey(a.lkey, a.addr, 101));
        assert!(!m.check_lkey(a.rkey, a.addr, 1));
        assert!(m.check_rkey(b.rkey, b.addr + 10, 40));
        assert!(!m.check_rkey(b.rkey, b.addr + 10, 41));
        assert!(!m.check_rkey(b.lkey, b.addr, 1));
        m.write(b.addr + 3, &[1, 2, 3]).unwrap();
        assert_eq!(&m.read(b.addr + 2, 5).unwrap()[..], &[0, 1, 2, 3, 0]);
        assert!(m.read(a.addr + 90, 20).is_err());
        assert!(m.read(a.addr - 1, 1).is_err());
    }

    #[test]
    fn allocated_mrs_step_over_application_memory_and_never_share_its_addresses() {
        let data = Bytes::from(vec![5u8; 10_000]);
        let p = data.as_ptr() as u64;
        let mut m = Memory::new(0);
        // The next MR would start just below the buffer and run through it.
        m.next_addr = p - 100;
        let x = m.register_external(data.clone()).unwrap();
        let a = m.register(1000).unwrap();
        assert!(a.addr >= p + 10_000, "{:x} vs {p:x}", a.addr);
        assert_eq!(&m.read(p + 10, 3).unwrap()[..], &[5, 5, 5]);
        assert_eq!(&m.read(a.addr, 2).unwrap()[..], &[0, 0]);
        assert!(m.check_lkey(x.lkey, p, 10_000) && !m.check_lkey(x.lkey, p, 10_001));
        // An application buffer where an MR already lies is refused.
        let mut n = Memory::new(0);
        n.next_addr = p - 100;
        n.register(1000).unwrap();
        assert!(n.register_external(data).is_err());
    }

    #[test]
    fn payload_free_mode_checks_ranges_and_reads_zeros() {
        let mut m = Memory::new(0);
        m.set_carry_payload(false);
        let a = m.register(1 << 30).unwrap();
        m.write(a.addr + 5, &[9, 9]).unwrap();
        assert_eq!(&m.read(a.addr + 4, 4).unwrap()[..], &[0, 0, 0, 0]);
        assert!(m.write(a.addr + (1 << 30) - 1, &[1, 2]).is_err());
        assert!(m.check_rkey(a.rkey, a.addr, 1 << 30));
    }
}
