//! Large messages posted in place from registered memory ([`LocalMemory::registered_lkey`]):
//! no staging copy, and the message's bytes held by the core until the peer's ACK.
//!
//! The in-memory transport addresses its memory by number, not by pointer, so a layer over it
//! plays a device whose memory is the process's own: it declares the test's messages
//! registered under [`PINNED`], and when a WR reads from one it copies the bytes the message
//! held when it was declared into a scratch MR, as the device would read them in place.

mod util;

use bytes::Bytes;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use util::world::{pattern, World};
use xrdma::driver::{self};
use xrdma::layer::TransportLayer;
use xrdma::*;

/// The lkey the layer declares the test's messages registered under.
const PINNED: u32 = 0x9e9e;

/// A message's bytes that report when the last handle to them is dropped.
struct Tracked {
    data: Vec<u8>,
    dropped: Arc<AtomicBool>,
}

impl AsRef<[u8]> for Tracked {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

/// Messages declared registered: where each lies, and a copy of its bytes.
#[derive(Default)]
struct Pinned {
    messages: Vec<(u64, Vec<u8>)>,
    /// WRs read in place.
    reads: u64,
}

impl Pinned {
    fn declare(&mut self, m: &Bytes) {
        self.messages.push((m.as_ptr() as u64, m.to_vec()));
    }

    fn find(&self, addr: u64, len: u64) -> Option<&[u8]> {
        self.messages.iter().find_map(|(at, bytes)| {
            let off = addr.checked_sub(*at)?;
            let end = off.checked_add(len)?;
            bytes.get(off as usize..end as usize)
        })
    }
}

/// `inner`, declaring `pinned`'s messages registered and reading them through `scratch`.
struct InPlace<'a, T> {
    inner: T,
    pinned: &'a mut Pinned,
    scratch: MemoryRegion,
}

impl<T: Transport> InPlace<'_, T> {
    /// `wr`, reading from scratch memory holding its bytes when it reads a pinned message.
    fn translate(&mut self, wr: &SendWr) -> SendWr {
        if wr.sge.lkey != PINNED {
            return *wr;
        }
        let bytes = self
            .pinned
            .find(wr.sge.addr, u64::from(wr.sge.len))
            .expect("a WR reads only inside a declared message")
            .to_vec();
        self.inner.write(self.scratch.addr, &[&bytes]).unwrap();
        self.pinned.reads += 1;
        SendWr {
            sge: Sge {
                addr: self.scratch.addr,
                len: wr.sge.len,
                lkey: self.scratch.lkey,
            },
            ..*wr
        }
    }
}

impl<T: Transport> TransportLayer for InPlace<'_, T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }
    fn registered_lkey(&self, data: &[u8]) -> Option<u32> {
        self.pinned
            .find(data.as_ptr() as u64, data.len() as u64)
            .map(|_| PINNED)
    }
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        let wr = self.translate(wr);
        self.inner.post_send(qpn, &wr)
    }
    // One WR at a time, as each may need the scratch MR.
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        for (posted, wr) in wrs.iter().enumerate() {
            let wr = self.translate(wr);
            self.inner
                .post_send(qpn, &wr)
                .map_err(|error| ChainError { posted, error })?;
        }
        Ok(())
    }
}

#[test]
fn a_large_registered_message_is_posted_in_place_and_held_until_its_ack() {
    for (i, len) in [4097usize, 65536, 65537, 1 << 20, (3 << 20) + 5]
        .into_iter()
        .enumerate()
    {
        let mut w = World::new(Config::default());
        let scratch = w.pair.side(0).register_memory(64 << 10).unwrap();
        let dropped = Arc::new(AtomicBool::new(false));
        let msg = Bytes::from_owner(Tracked {
            data: pattern(len, i as u8).to_vec(),
            dropped: Arc::clone(&dropped),
        });
        let mut pinned = Pinned::default();
        pinned.declare(&msg);
        let now = w.pair.now;
        w.eps[0].send(now, w.conns[0], msg).unwrap();
        let mut sent = false;
        for _ in 0..10_000 {
            let now = w.pair.now;
            let mut side = InPlace {
                inner: w.pair.side(0),
                pinned: &mut pinned,
                scratch,
            };
            driver::turn(
                now,
                &mut w.eps[0],
                &mut side,
                &mut w.apps[0],
                &mut w.scratch,
            );
            sent |= w.count(0, |e| matches!(e, Event::Sent { .. })) == 1;
            assert!(
                sent || !dropped.load(Ordering::SeqCst),
                "{len} B: the bytes were dropped before the ACK"
            );
            let mut side = w.pair.side(1);
            driver::turn(
                now,
                &mut w.eps[1],
                &mut side,
                &mut w.apps[1],
                &mut w.scratch,
            );
            if sent && !w.pair.busy() {
                break;
            }
        }
        assert!(sent, "{len} B: sent");
        assert!(
            dropped.load(Ordering::SeqCst),
            "{len} B: let go after the ACK"
        );
        assert_eq!(w.received(1), vec![pattern(len, i as u8)], "{len} B");
        let r = w.eps[0].resources();
        assert_eq!(r.sent_in_place_bytes, Some(len as u64), "{len} B");
        assert_eq!(
            pinned.reads,
            (len as u64).div_ceil(64 << 10),
            "{len} B: one per fragment"
        );
        // Only the RTS frame is staged.
        assert!(r.staged_bytes < Some(64), "{len} B: {:?}", r.staged_bytes);
    }
}

#[test]
fn small_messages_and_unregistered_ones_are_staged() {
    let mut w = World::new(Config::default());
    let now = w.pair.now;
    w.eps[0].send(now, w.conns[0], pattern(100, 1)).unwrap();
    w.eps[0].send(now, w.conns[0], pattern(200_000, 2)).unwrap();
    w.settle();
    assert_eq!(w.received(1).len(), 2);
    let r = w.eps[0].resources();
    assert_eq!(r.sent_in_place_bytes, Some(0));
    assert!(r.staged_bytes > Some(200_100), "{:?}", r.staged_bytes);
}
