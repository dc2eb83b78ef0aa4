//! The payload bytes of a run.

use bytes::Bytes;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Distinct starting offsets a message can take in the pool: 1 MiB of them.
const POOL_OFFSETS: u64 = 1 << 20;

/// The payload bytes of a run: one block of pseudo-random bytes (ChaCha8 from the scenario
/// seed), `largest message + 1 MiB` long, shared by every sender. Message `index` of `sender`
/// is the slice starting at an offset drawn from (seed, sender, index), so messages differ
/// (a swapped or misplaced message fails its digest) while the run holds one block instead of
/// one buffer per message in flight.
#[derive(Clone, Debug)]
pub struct PayloadPool {
    seed: u64,
    bytes: Bytes,
}

impl PayloadPool {
    /// A pool for messages of at most `largest` bytes.
    pub fn new(seed: u64, largest: u64) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        let mut rng = ChaCha8Rng::from_seed(key);
        let mut v = vec![0u8; (largest + POOL_OFFSETS) as usize];
        rng.fill_bytes(&mut v);
        PayloadPool {
            seed,
            bytes: Bytes::from(v),
        }
    }

    /// The whole block every message is a slice of.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The payload of message `index` of `sender` (`size` ≤ the pool's largest message).
    pub fn message(&self, sender: u32, index: u32, size: u64) -> Bytes {
        // SplitMix64 (Steele et al., OOPSLA 2014) of the three numbers: a well-mixed offset.
        let mut z = self.seed ^ (u64::from(sender) << 32) ^ u64::from(index);
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let off = (z % POOL_OFFSETS) as usize;
        let end = (off + size as usize).min(self.bytes.len());
        self.bytes.slice(off..end)
    }
}
