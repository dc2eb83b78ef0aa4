//! GID table entries and the choice of the source GID.
//!
//! RoCE ports carry several GIDs per netdev address: RoCE v1 (Ethernet-only, not routable)
//! and RoCE v2 (UDP/IP, routable), each for an IPv6 link-local address and, when the netdev
//! has an IPv4 address, an IPv4-mapped one (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2). A RoCEv2
//! IPv4-mapped GID is what two hosts on an IP network can reach each other with, so it is the
//! default choice. The GID type is read from sysfs
//! (`/sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index>`), which the kernel
//! writes as `"RoCE v2"` or `"IB/RoCE v1"`.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

/// The kind of a GID entry as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GidType {
    /// `"RoCE v2"`: RoCE over UDP/IP (routable).
    RoceV2,
    /// `"IB/RoCE v1"`: InfiniBand or RoCE v1 (Ethernet only).
    IbRoceV1,
    /// Any other text the kernel wrote.
    Other(String),
    /// sysfs could not be read (e.g. an InfiniBand HCA on an older kernel).
    Unknown,
}

impl GidType {
    /// Parse the text of a sysfs `gid_attrs/types/<index>` file.
    pub fn from_sysfs(text: &str) -> GidType {
        match text.trim() {
            "RoCE v2" => GidType::RoceV2,
            "IB/RoCE v1" => GidType::IbRoceV1,
            other => GidType::Other(other.to_string()),
        }
    }

    fn name(&self) -> &str {
        match self {
            GidType::RoceV2 => "RoCE v2",
            GidType::IbRoceV1 => "IB/RoCE v1",
            GidType::Other(s) => s,
            GidType::Unknown => "type unknown",
        }
    }
}

/// One non-empty entry of a port's GID table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// Index in the port's GID table (`sgid_index` when used as the source GID).
    pub index: u32,
    /// The 16 GID bytes, network order.
    pub gid: [u8; 16],
    /// Its type.
    pub kind: GidType,
}

impl GidEntry {
    /// Whether the GID is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    pub fn is_ipv4_mapped(&self) -> bool {
        self.gid[..10].iter().all(|&b| b == 0) && self.gid[10] == 0xff && self.gid[11] == 0xff
    }

    /// The GID written as an IPv6 address.
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.gid)
    }
}

/// Read the type of GID `index` of `port` on `device` from sysfs ([`GidType::Unknown`] when
/// the file cannot be read).
pub fn sysfs_gid_type(device: &str, port: u8, index: u32) -> GidType {
    let path = format!("/sys/class/infiniband/{device}/ports/{port}/gid_attrs/types/{index}");
    match std::fs::read_to_string(path) {
        Ok(text) => GidType::from_sysfs(&text),
        Err(_) => GidType::Unknown,
    }
}

/// The table as one line: `index: gid (type)` per entry, `empty` when there is none.
pub fn format_table(table: &[GidEntry]) -> String {
    if table.is_empty() {
        return "empty".into();
    }
    let mut s = String::new();
    for (i, e) in table.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{}: {} ({})", e.index, e.addr(), e.kind.name());
    }
    s
}

/// Choose the source GID from `table` (the port's non-empty entries).
///
/// - `explicit = Some(i)`: entry `i`, which must be present (non-empty);
/// - else, on an InfiniBand port (`infiniband`), entry 0 (the port GID, GRH optional);
/// - else the lowest-index RoCE v2 IPv4-mapped entry.
///
/// # Errors
/// `Err(why)` naming what was looked for; the caller adds the table to the error.
pub fn choose_gid(
    table: &[GidEntry],
    explicit: Option<u32>,
    infiniband: bool,
) -> Result<GidEntry, String> {
    if let Some(i) = explicit {
        return table
            .iter()
            .find(|e| e.index == i)
            .cloned()
            .ok_or_else(|| format!("GID index {i} was asked for but that entry is empty"));
    }
    if infiniband {
        return table
            .iter()
            .find(|e| e.index == 0)
            .cloned()
            .ok_or_else(|| "InfiniBand port without GID 0".to_string());
    }
    table
        .iter()
        .find(|e| e.kind == GidType::RoceV2 && e.is_ipv4_mapped())
        .cloned()
        .ok_or_else(|| {
            "no RoCE v2 IPv4-mapped GID (::ffff:a.b.c.d); give the netdev an IPv4 address or \
             set XRDMA_VERBS_GID_INDEX"
                .to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u32, addr: &str, kind: GidType) -> GidEntry {
        let a: Ipv6Addr = addr.parse().unwrap();
        GidEntry {
            index,
            gid: a.octets(),
            kind,
        }
    }

    /// A RoCE port's table as the kernel fills it: for each netdev address a RoCE v1 then a
    /// RoCE v2 entry, the IPv6 link-local address first, then the IPv4-mapped one.
    fn roce_table() -> Vec<GidEntry> {
        vec![
            entry(0, "fe80::1", GidType::IbRoceV1),
            entry(1, "fe80::1", GidType::RoceV2),
            entry(2, "::ffff:10.99.0.1", GidType::IbRoceV1),
            entry(3, "::ffff:10.99.0.1", GidType::RoceV2),
        ]
    }

    #[test]
    fn sysfs_text_maps_to_types() {
        assert_eq!(GidType::from_sysfs("RoCE v2\n"), GidType::RoceV2);
        assert_eq!(GidType::from_sysfs("IB/RoCE v1\n"), GidType::IbRoceV1);
        assert_eq!(GidType::from_sysfs("x"), GidType::Other("x".into()));
    }

    #[test]
    fn ipv4_mapped_needs_ffff_prefix() {
        assert!(entry(0, "::ffff:10.0.0.1", GidType::RoceV2).is_ipv4_mapped());
        assert!(!entry(0, "fe80::1", GidType::RoceV2).is_ipv4_mapped());
        // An IPv4-compatible (deprecated, no ffff) address is not mapped.
        assert!(!entry(0, "::10.0.0.1", GidType::RoceV2).is_ipv4_mapped());
    }

    #[test]
    fn default_choice_is_the_v2_ipv4_mapped_entry() {
        // Index 1 is v2 but link-local; index 2 is IPv4-mapped but v1; 3 is both.
        assert_eq!(choose_gid(&roce_table(), None, false).unwrap().index, 3);
    }

    #[test]
    fn explicit_index_wins_even_if_not_preferred() {
        assert_eq!(choose_gid(&roce_table(), Some(1), false).unwrap().index, 1);
        let e = choose_gid(&roce_table(), Some(7), false).unwrap_err();
        assert!(e.contains("index 7"), "{e}");
    }

    #[test]
    fn no_fitting_gid_is_an_error_and_the_table_is_listed() {
        let t = vec![entry(0, "fe80::1", GidType::RoceV2)];
        assert!(choose_gid(&t, None, false).is_err());
        assert_eq!(format_table(&t), "0: fe80::1 (RoCE v2)");
        assert_eq!(format_table(&[]), "empty");
    }

    #[test]
    fn infiniband_uses_gid_zero() {
        let t = vec![entry(0, "fe80::2", GidType::Unknown)];
        assert_eq!(choose_gid(&t, None, true).unwrap().index, 0);
    }
}
