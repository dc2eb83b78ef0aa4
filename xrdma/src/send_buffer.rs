//! Buffers an application fills and then sends, so that a large message is posted from where
//! it was written, with no staging copy ([`crate::LocalMemory::send_buffer`]).

use bytes::Bytes;
use std::ops::{Deref, DerefMut};

/// Memory a backend lends for filling: registered memory the device only reads. Its owner
/// returns it to the backend when dropped.
pub trait LentBuffer: AsRef<[u8]> + AsMut<[u8]> + Send + 'static {}

/// A message being written: zeroed bytes the application fills (`DerefMut<Target = [u8]>`)
/// and then [`SendBuffer::freeze`]s into the [`Bytes`] it sends.
///
/// From [`crate::LocalMemory::send_buffer`] it lies in registered memory, and a large message
/// made of it is posted in place ([`crate::LocalMemory::registered_lkey`]); from
/// [`SendBuffer::new`] it is ordinary heap memory, staged like any other message.
pub struct SendBuffer {
    inner: Inner,
}

enum Inner {
    Heap(Vec<u8>),
    Lent(Box<dyn LentBuffer>),
}

/// The owner [`Bytes::from_owner`] keeps for a frozen lent buffer.
struct Frozen(Box<dyn LentBuffer>);

impl AsRef<[u8]> for Frozen {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl SendBuffer {
    /// `len` zeroed bytes of heap memory.
    pub fn new(len: usize) -> Self {
        SendBuffer {
            inner: Inner::Heap(vec![0; len]),
        }
    }

    /// `lent`, from a backend: its bytes must be zeroed or the application's own.
    pub fn lent(lent: Box<dyn LentBuffer>) -> Self {
        SendBuffer {
            inner: Inner::Lent(lent),
        }
    }

    /// Whether the bytes lie in memory a backend lent (registered memory).
    pub fn is_registered(&self) -> bool {
        matches!(self.inner, Inner::Lent(_))
    }

    /// The filled bytes, to send. A lent buffer goes back to its backend once this and every
    /// clone and slice of it are dropped (after the peer ACKs the message, when sent).
    pub fn freeze(self) -> Bytes {
        match self.inner {
            Inner::Heap(v) => Bytes::from(v),
            Inner::Lent(b) => Bytes::from_owner(Frozen(b)),
        }
    }
}

impl Deref for SendBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.inner {
            Inner::Heap(v) => v,
            Inner::Lent(b) => (**b).as_ref(),
        }
    }
}

impl DerefMut for SendBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.inner {
            Inner::Heap(v) => v,
            Inner::Lent(b) => (**b).as_mut(),
        }
    }
}

impl std::fmt::Debug for SendBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendBuffer")
            .field("len", &self.len())
            .field("registered", &self.is_registered())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Plain(Vec<u8>);
    impl AsRef<[u8]> for Plain {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }
    impl AsMut<[u8]> for Plain {
        fn as_mut(&mut self) -> &mut [u8] {
            &mut self.0
        }
    }
    impl LentBuffer for Plain {}

    #[test]
    fn what_is_written_is_what_freezes() {
        for mut b in [
            SendBuffer::new(5),
            SendBuffer::lent(Box::new(Plain(vec![0; 5]))),
        ] {
            assert_eq!(&b[..], &[0; 5]);
            b.copy_from_slice(b"hello");
            let registered = b.is_registered();
            let frozen = b.freeze();
            assert_eq!(&frozen[..], b"hello", "registered: {registered}");
        }
    }
}
