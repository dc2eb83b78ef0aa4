//! InfiniBand timer encodings: the 5-bit RNR NAK timer field and the 5-bit local ACK timeout.

use xrdma::Time;

/// Minimum RNR NAK timer values of IB Spec vol. 1 (release 1.2.1) §9.7.5.2.8, Table 45, in
/// units of 10 µs, indexed by the 5-bit code. Code 0 is the largest value, 655.36 ms.
const RNR_TIMER_10US: [u32; 32] = [
    65_536, // 0: 655.36 ms
    1,      // 1: 0.01 ms
    2,      // 2: 0.02 ms
    3,      // 3: 0.03 ms
    4,      // 4: 0.04 ms
    6,      // 5: 0.06 ms
    8,      // 6: 0.08 ms
    12,     // 7: 0.12 ms
    16,     // 8: 0.16 ms
    24,     // 9: 0.24 ms
    32,     // 10: 0.32 ms
    48,     // 11: 0.48 ms
    64,     // 12: 0.64 ms
    96,     // 13: 0.96 ms
    128,    // 14: 1.28 ms
    192,    // 15: 1.92 ms
    256,    // 16: 2.56 ms
    384,    // 17: 3.84 ms
    512,    // 18: 5.12 ms
    768,    // 19: 7.68 ms
    1_024,  // 20: 10.24 ms
    1_536,  // 21: 15.36 ms
    2_048,  // 22: 20.48 ms
    3_072,  // 23: 30.72 ms
    4_096,  // 24: 40.96 ms
    6_144,  // 25: 61.44 ms
    8_192,  // 26: 81.92 ms
    12_288, // 27: 122.88 ms
    16_384, // 28: 163.84 ms
    24_576, // 29: 245.76 ms
    32_768, // 30: 327.68 ms
    49_152, // 31: 491.52 ms
];

/// The minimum RNR NAK timer for a 5-bit `code` (IB Spec vol. 1 Table 45): 0 → 655.36 ms,
/// 1 → 10 µs, 2 → 20 µs, …, 12 → 640 µs, …, 31 → 491.52 ms. Only the low 5 bits of `code`
/// are used.
pub fn rnr_timer(code: u8) -> Time {
    Time::from_us(10 * RNR_TIMER_10US[(code & 0x1F) as usize] as u64)
}

/// The local ACK timeout for a 5-bit `code` (IB Spec vol. 1, the Local ACK Timeout QP
/// attribute, verbs `timeout`): 4.096 µs · 2^code for codes 1..=31; code 0 means no timeout
/// ([`Time::MAX`]).
/// Only the low 5 bits of `code` are used.
pub fn local_ack_timeout(code: u8) -> Time {
    match code & 0x1F {
        0 => Time::MAX,
        c => Time::from_ns(4_096 << c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_timeout_doubles_per_code() {
        // 4.096 µs · 2^8 = 1_048.576 µs; 4.096 µs · 2 = 8.192 µs.
        assert_eq!(local_ack_timeout(8), Time::from_ns(1_048_576));
        assert_eq!(local_ack_timeout(1), Time::from_ns(8_192));
        assert_eq!(local_ack_timeout(0), Time::MAX);
    }
}
