//! Bytes of a memory region held by reference: the ranges of an MR whose content is a slice of
//! an immutable buffer (the application's payload, registered for sending in place), written
//! there by a simulated DMA without copying a byte.
//!
//! A WRITE whose source is such a buffer lands as an [`Extent`] over it; the packets of one
//! message, arriving in order, extend one extent, so a message read back (or lent to the
//! application) is one slice of the sender's buffer. Bytes written any other way replace the
//! extents they cover, so the MR reads exactly as if every byte had been copied.

use bytes::Bytes;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// `len` bytes of `src` from `src_off`, standing at some offset of an MR.
#[derive(Clone, Debug)]
struct Extent {
    src: Bytes,
    src_off: usize,
    len: usize,
}

impl Extent {
    fn bytes(&self) -> &[u8] {
        &self.src[self.src_off..self.src_off + self.len]
    }

    /// Whether `src[src_off..]` continues this extent's bytes in the same buffer.
    fn continued_by(&self, src: &Bytes, src_off: usize) -> bool {
        self.src.as_ptr() == src.as_ptr()
            && self.src.len() == src.len()
            && self.src_off + self.len == src_off
    }
}

/// The extents of one MR, by offset; they never overlap, and their bytes stand in for the
/// MR's own over their ranges.
#[derive(Debug, Default)]
pub(crate) struct Extents {
    map: BTreeMap<usize, Extent>,
}

impl Extents {
    /// Whether no range of the MR is held by reference.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The extent covering offset `off`, with its start.
    fn at(&self, off: usize) -> Option<(usize, &Extent)> {
        let (&start, e) = self.map.range(..=off).next_back()?;
        (off < start + e.len).then_some((start, e))
    }

    /// Forget `off..off + len`: extents inside it go, those across its ends are cut.
    pub(crate) fn clear(&mut self, off: usize, len: usize) {
        if self.map.is_empty() || len == 0 {
            return;
        }
        let end = off + len;
        // The extent starting before `off` that reaches into the range, then every extent
        // starting inside it.
        let mut hit: Vec<usize> = self.at(off).map(|(s, _)| s).into_iter().collect();
        hit.extend(self.map.range(off..end).map(|(&s, _)| s));
        hit.dedup();
        for start in hit {
            let Some(e) = self.map.remove(&start) else {
                continue;
            };
            if start < off {
                let keep = off - start;
                self.map.insert(
                    start,
                    Extent {
                        len: keep,
                        ..e.clone()
                    },
                );
            }
            let e_end = start + e.len;
            if e_end > end {
                let cut = end - start;
                self.map.insert(
                    end,
                    Extent {
                        src_off: e.src_off + cut,
                        len: e_end - end,
                        src: e.src,
                    },
                );
            }
        }
    }

    /// Hold `off..off + len` as `src[src_off..src_off + len]` (which the caller has checked
    /// lies in `src`), extending the extent that ends at `off` when it continues the same
    /// bytes of the same buffer.
    pub(crate) fn put(&mut self, off: usize, src: &Bytes, src_off: usize, len: usize) {
        self.clear(off, len);
        if len == 0 {
            return;
        }
        if let Some((start, prev)) = off.checked_sub(1).and_then(|o| self.at(o)) {
            if start + prev.len == off && prev.continued_by(src, src_off) {
                if let Some(e) = self.map.get_mut(&start) {
                    e.len += len;
                }
                return;
            }
        }
        self.map.insert(
            off,
            Extent {
                src: src.clone(),
                src_off,
                len,
            },
        );
    }

    /// The buffer and offset holding all of `off..off + len`, when one extent covers it.
    pub(crate) fn shared(&self, off: usize, len: usize) -> Option<(&Bytes, usize)> {
        let (start, e) = self.at(off)?;
        (off + len <= start + e.len).then_some((&e.src, e.src_off + (off - start)))
    }

    /// The bytes of `off..off + len` given the MR's own bytes `own` over that range:
    /// borrowed when no extent or one extent covers it, else gathered.
    pub(crate) fn read<'a>(&'a self, off: usize, own: &'a [u8]) -> Cow<'a, [u8]> {
        let len = own.len();
        if let Some((src, at)) = self.shared(off, len) {
            return Cow::Borrowed(&src[at..at + len]);
        }
        let end = off + len;
        let first = self.at(off).map_or(off, |(s, _)| s);
        let mut over = self.map.range(first..end).peekable();
        if over.peek().is_none() {
            return Cow::Borrowed(own);
        }
        let mut out = own.to_vec();
        for (&start, e) in over {
            let (from, to) = (start.max(off), (start + e.len).min(end));
            if from < to {
                out[from - off..to - off].copy_from_slice(&e.bytes()[from - start..to - start]);
            }
        }
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(x: &Extents, own: &[u8]) -> Vec<u8> {
        x.read(0, own).into_owned()
    }

    #[test]
    fn packets_of_one_buffer_extend_one_extent_and_read_as_one_slice() {
        let src = Bytes::from((0..=255u8).collect::<Vec<_>>());
        let mut x = Extents::default();
        for k in 0..4 {
            x.put(100 + 10 * k, &src, 50 + 10 * k, 10);
        }
        assert_eq!(x.map.len(), 1);
        let (b, at) = x.shared(105, 30).unwrap();
        assert_eq!(&b[at..at + 30], &src[55..85]);
        // Not contiguous in the source: a second extent.
        x.put(140, &src, 0, 10);
        assert_eq!(x.map.len(), 2);
    }

    #[test]
    fn overwrites_cut_extents_and_reads_overlay_own_bytes() {
        let src = Bytes::from(vec![7u8; 64]);
        let own = vec![0u8; 32];
        let mut x = Extents::default();
        x.put(4, &src, 0, 20); // 4..24 = 7
        x.clear(10, 4); // 10..14 back to own bytes
        let mut want = vec![0u8; 32];
        want[4..10].fill(7);
        want[14..24].fill(7);
        assert_eq!(flat(&x, &own), want);
        assert!(x.shared(4, 6).is_some());
        assert!(x.shared(4, 7).is_none());
        // A put over the middle of an extent replaces just that range.
        let other = Bytes::from(vec![9u8; 8]);
        x.put(16, &other, 0, 4);
        want[16..20].fill(9);
        assert_eq!(flat(&x, &own), want);
        // Clearing everything leaves the MR's own bytes.
        x.clear(0, 32);
        assert!(x.is_empty());
        assert!(matches!(x.read(0, &own), Cow::Borrowed(_)));
    }
}
