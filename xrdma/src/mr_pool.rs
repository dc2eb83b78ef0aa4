//! The MR pool: memory registered in 4 MiB chunks, carved into per-connection regions.
//!
//! XRDMA registers its buffer pool up front in large chunks so the NIC holds few MRs; the
//! pool hands out 64-byte-aligned regions by bumping through the newest chunk. Regions larger
//! than a chunk get a chunk of their own size. The pool only keeps the books: the driver
//! registers chunks with [`crate::Transport::register_memory`] and adds them here.

use crate::MemoryRegion;

/// Alignment of every region, bytes (a cache line).
pub const REGION_ALIGN: u64 = 64;

/// A region carved from a registered chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Region {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// Local key of the chunk.
    pub lkey: u32,
    /// Remote key of the chunk.
    pub rkey: u32,
}

/// Books of registered chunks.
#[derive(Clone, Debug, Default)]
pub struct MrPool {
    chunks: Vec<(MemoryRegion, u64)>,
}

impl MrPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a registered chunk.
    pub fn add_chunk(&mut self, mr: MemoryRegion) {
        self.chunks.push((mr, 0));
    }

    /// Carve `len` bytes from a chunk with room, or `None` (register another chunk).
    pub fn alloc(&mut self, len: u64) -> Option<Region> {
        for (mr, used) in self.chunks.iter_mut().rev() {
            let start = used.div_ceil(REGION_ALIGN) * REGION_ALIGN;
            // Checked: a length near u64::MAX must not wrap into a region that "fits".
            let end = start.checked_add(len);
            if let Some(end) = end.filter(|&e| e <= mr.len) {
                *used = end;
                return Some(Region {
                    addr: mr.addr + start,
                    len,
                    lkey: mr.lkey,
                    rkey: mr.rkey,
                });
            }
        }
        None
    }

    /// Number of registered chunks (MRs).
    pub fn mr_count(&self) -> usize {
        self.chunks.len()
    }

    /// Registered bytes.
    pub fn registered_bytes(&self) -> u64 {
        self.chunks.iter().map(|(m, _)| m.len).sum()
    }

    /// Bytes handed out as regions (alignment padding included).
    pub fn used_bytes(&self) -> u64 {
        self.chunks.iter().map(|(_, u)| *u).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carves_aligned_regions_and_asks_for_more() {
        let mut p = MrPool::new();
        assert_eq!(p.alloc(10), None);
        p.add_chunk(MemoryRegion {
            addr: 0x1000,
            len: 256,
            lkey: 7,
            rkey: 8,
        });
        let a = p.alloc(10).unwrap();
        let b = p.alloc(100).unwrap();
        assert_eq!((a.addr, b.addr), (0x1000, 0x1040));
        assert_eq!(p.alloc(100), None); // 0x40 + 100 -> next aligned start 192, 192+100 > 256
        assert_eq!(p.alloc(64).map(|r| r.addr), Some(0x1000 + 192));
        assert_eq!((p.mr_count(), p.registered_bytes()), (1, 256));
    }
}
