//! The pcap file format with nanosecond timestamps (the libpcap format, IETF
//! draft-ietf-opsawg-pcap: magic 0xA1B23C4D, version 2.4, LINKTYPE_ETHERNET), written
//! little-endian.

/// The magic number of a nanosecond-resolution pcap file.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET: IEEE 802.3 frames without preamble, SFD or FCS.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// The largest frame a record holds whole (no frame of the simulator is longer).
pub(crate) const SNAPLEN: u32 = 262_144;
/// Bytes of the file header.
pub const FILE_HEADER: usize = 24;
/// Bytes of a record header.
pub const RECORD_HEADER: usize = 16;

/// The 24-byte file header: magic, version 2.4, time zone 0, accuracy 0, [`SNAPLEN`],
/// [`LINKTYPE_ETHERNET`].
pub(crate) fn file_header() -> [u8; FILE_HEADER] {
    let mut h = [0u8; FILE_HEADER];
    h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
    h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    h
}

/// The record header of a `len`-byte frame at `ns` nanoseconds since the epoch (whole
/// seconds, then nanoseconds; captured and original length both `len`).
pub(crate) fn record_header(ns: u64, len: u32) -> [u8; RECORD_HEADER] {
    let mut h = [0u8; RECORD_HEADER];
    let secs = (ns / 1_000_000_000) as u32;
    let frac = (ns % 1_000_000_000) as u32;
    h[0..4].copy_from_slice(&secs.to_le_bytes());
    h[4..8].copy_from_slice(&frac.to_le_bytes());
    h[8..12].copy_from_slice(&len.to_le_bytes());
    h[12..16].copy_from_slice(&len.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_header_layout() {
        let h = file_header();
        assert_eq!(&h[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&h[4..8], &[2, 0, 4, 0]);
        assert_eq!(&h[8..16], &[0; 8]);
        assert_eq!(&h[16..20], &[0, 0, 4, 0]);
        assert_eq!(&h[20..24], &[1, 0, 0, 0]);
    }

    #[test]
    fn record_header_layout() {
        let h = record_header(3_000_000_123, 1078);
        assert_eq!(u32::from_le_bytes(h[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(h[4..8].try_into().unwrap()), 123);
        assert_eq!(u32::from_le_bytes(h[8..12].try_into().unwrap()), 1078);
        assert_eq!(u32::from_le_bytes(h[12..16].try_into().unwrap()), 1078);
    }
}
