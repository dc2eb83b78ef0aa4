//! GID table entries and the choice of the source GID.
//!
//! RoCE ports carry several GIDs per netdev address: RoCE v1 (Ethernet-only, not routable)
//! and RoCE v2 (UDP/IP, routable), one pair for each IPv6 address of the netdev (link-local
//! `fe80::/10`, and any unique-local `fc00::/7` or global `2000::/3` one) and, when the netdev
//! has an IPv4 address, one pair for the IPv4-mapped address (`::ffff:a.b.c.d`, RFC 4291
//! §2.5.5.2). Without an explicit index, [`choose_gid`] takes a RoCE v2 entry whose address
//! other hosts can route to, preferring the IPv4-mapped one (the common deployment), then a
//! unique-local or global IPv6 one ([`GidScope`]). Link-local entries are never chosen
//! automatically (they reach only the same L2 segment, and peers on another subnet would
//! silently fail to connect); an explicit index (`gid-index` in the scenario's `verbs:` block,
//! or `XRDMA_VERBS_GID_INDEX`) selects any non-empty entry, link-local included. All-zero
//! entries are empty slots and are skipped. The GID type is read from sysfs
//! (`/sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index>`), which the kernel
//! writes as `"RoCE v2"` or `"IB/RoCE v1"`.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

/// Environment variable giving the GID index; unset: chosen by [`choose_gid`] (the first
/// RoCE v2 IPv4-mapped GID, else the first unique-local or global IPv6 one).
pub const ENV_GID_INDEX: &str = "XRDMA_VERBS_GID_INDEX";

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

/// What kind of address a GID is, as far as the automatic choice cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidScope {
    /// All 16 bytes zero: an unused slot.
    Empty,
    /// IPv4-mapped, `::ffff:a.b.c.d` (`::ffff:0:0/96`): routable over IPv4.
    Ipv4Mapped,
    /// IPv6 unique-local, `fc00::/7` (RFC 4193): routable inside a site.
    UniqueLocal,
    /// IPv6 global unicast, `2000::/3` (RFC 4291 §2.4).
    Global,
    /// IPv6 link-local, `fe80::/10`: reachable only on the same L2 segment.
    LinkLocal,
    /// Anything else (loopback, multicast, IPv4-compatible, deprecated site-local, ...).
    Other,
}

impl GidScope {
    /// Whether another host can route to a GID of this scope (IPv4-mapped, unique-local or
    /// global).
    pub fn is_routable(self) -> bool {
        matches!(
            self,
            GidScope::Ipv4Mapped | GidScope::UniqueLocal | GidScope::Global
        )
    }

    /// A short name used in messages (`"IPv4-mapped"`, `"link-local"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            GidScope::Empty => "all-zero",
            GidScope::Ipv4Mapped => "IPv4-mapped",
            GidScope::UniqueLocal => "unique-local IPv6",
            GidScope::Global => "global IPv6",
            GidScope::LinkLocal => "link-local",
            GidScope::Other => "non-routable",
        }
    }
}

impl GidEntry {
    /// Whether the GID is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    pub fn is_ipv4_mapped(&self) -> bool {
        self.gid[..10].iter().all(|&b| b == 0) && self.gid[10] == 0xff && self.gid[11] == 0xff
    }

    /// Whether all 16 bytes are zero (an unused table slot).
    pub fn is_empty(&self) -> bool {
        self.gid.iter().all(|&b| b == 0)
    }

    /// The GID's address scope.
    pub fn scope(&self) -> GidScope {
        let g = &self.gid;
        if self.is_empty() {
            GidScope::Empty
        } else if self.is_ipv4_mapped() {
            GidScope::Ipv4Mapped
        } else if g[0] == 0xfe && g[1] & 0xc0 == 0x80 {
            GidScope::LinkLocal
        } else if g[0] & 0xfe == 0xfc {
            GidScope::UniqueLocal
        } else if g[0] & 0xe0 == 0x20 {
            GidScope::Global
        } else {
            GidScope::Other
        }
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

/// The largest GID index a QP can use as its source GID: `ibv_ah_attr.grh.sgid_index` is a
/// `uint8_t` (IB spec, Global Route Header SGID index).
pub const MAX_SGID_INDEX: u32 = u8::MAX as u32;

/// Choose the source GID from `table` (a port's entries; all-zero ones are skipped).
///
/// - `explicit = Some(i)`: entry `i`, which must be present and non-zero (any type and scope:
///   an explicit choice is the way to use a link-local or RoCE v1 GID);
/// - else, on an InfiniBand port (`infiniband`), entry 0 (the port GID, GRH optional);
/// - else the lowest-index RoCE v2 entry with an IPv4-mapped address, failing that the
///   lowest-index RoCE v2 entry with a unique-local (`fc00::/7`) or global (`2000::/3`) IPv6
///   address. Link-local (`fe80::/10`) and other non-routable entries are never chosen here.
///
/// A pure function of its arguments, so the policy is tested without a device.
///
/// # Errors
/// `Err(why)` saying what was looked for and what the table had instead (e.g. only link-local
/// RoCE v2 entries, or no RoCE v2 entry at all), or that an explicit index is past
/// [`MAX_SGID_INDEX`]; the caller adds the full table to the error. Entries past it are never
/// chosen.
pub fn choose_gid(
    table: &[GidEntry],
    explicit: Option<u32>,
    infiniband: bool,
) -> Result<GidEntry, String> {
    if let Some(i) = explicit.filter(|&i| i > MAX_SGID_INDEX) {
        return Err(format!(
            "GID index {i} cannot be a QP's source GID: the address handle's sgid_index has \
             8 bits (0..={MAX_SGID_INDEX})"
        ));
    }
    // An entry past the 8-bit sgid_index cannot be used, however good its address.
    let mut present = table
        .iter()
        .filter(|e| !e.is_empty() && e.index <= MAX_SGID_INDEX);
    if let Some(i) = explicit {
        return present
            .find(|e| e.index == i)
            .cloned()
            .ok_or_else(|| format!("GID index {i} was asked for but that entry is empty"));
    }
    if infiniband {
        return present
            .find(|e| e.index == 0)
            .cloned()
            .ok_or_else(|| "InfiniBand port without GID 0".to_string());
    }
    let v2 = || {
        table
            .iter()
            .filter(|e| e.kind == GidType::RoceV2 && !e.is_empty() && e.index <= MAX_SGID_INDEX)
    };
    let best = v2()
        .find(|e| e.scope() == GidScope::Ipv4Mapped)
        .or_else(|| v2().find(|e| e.scope().is_routable()));
    if let Some(e) = best {
        return Ok(e.clone());
    }
    Err(format!(
        "no RoCE v2 GID with an IPv4-mapped (::ffff:a.b.c.d) or routable IPv6 (unique-local \
         fc00::/7, global 2000::/3) address; {}; give the netdev such an address, or choose \
         an entry with `gid-index` in the scenario's `verbs:` block or {} (link-local \
         fe80::/10 entries are used only when chosen that way)",
        describe_unusable(table),
        ENV_GID_INDEX,
    ))
}

/// What a table without a routable RoCE v2 entry has instead, for [`choose_gid`]'s error:
/// `"the table has no non-zero entry"`, `"the table has no RoCE v2 entry (only IB/RoCE v1)"`
/// or `"the port's RoCE v2 entries are link-local (index 1)"`.
fn describe_unusable(table: &[GidEntry]) -> String {
    let present: Vec<&GidEntry> = table.iter().filter(|e| !e.is_empty()).collect();
    if present.is_empty() {
        return "the table has no non-zero entry".into();
    }
    let v2: Vec<&GidEntry> = present
        .iter()
        .copied()
        .filter(|e| e.kind == GidType::RoceV2)
        .collect();
    if v2.is_empty() {
        let mut kinds: Vec<&str> = present.iter().map(|e| e.kind.name()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        return format!("the table has no RoCE v2 entry (only {})", kinds.join(", "));
    }
    let mut s = String::from("the port's RoCE v2 entries are ");
    for (i, e) in v2.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{} (index {})", e.scope().name(), e.index);
    }
    s
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
    fn an_entry_past_the_8_bit_sgid_index_is_refused_not_clamped() {
        let far = entry(300, "::ffff:10.0.0.9", GidType::RoceV2);
        let e = choose_gid(std::slice::from_ref(&far), Some(300), false).unwrap_err();
        assert!(
            e.contains("GID index 300 cannot be a QP's source GID"),
            "{e}"
        );
        // Chosen automatically, it is skipped like an empty one.
        assert!(choose_gid(std::slice::from_ref(&far), None, false).is_err());
        let near = entry(3, "::ffff:10.0.0.1", GidType::RoceV2);
        assert_eq!(choose_gid(&[far, near.clone()], None, false).unwrap(), near);
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

    fn index_of(table: &[GidEntry]) -> Result<u32, String> {
        choose_gid(table, None, false).map(|e| e.index)
    }

    #[test]
    fn mapped_v2_wins_over_v1_and_link_local() {
        let t = vec![
            entry(0, "fe80::1", GidType::IbRoceV1),
            entry(1, "fe80::1", GidType::RoceV2),
            entry(2, "fd00:99::1", GidType::RoceV2),
            entry(3, "::ffff:10.99.0.1", GidType::IbRoceV1),
            entry(4, "::ffff:10.99.0.1", GidType::RoceV2),
        ];
        assert_eq!(index_of(&t), Ok(4));
    }

    #[test]
    fn unique_local_v2_is_chosen_when_there_is_no_ipv4() {
        let t = vec![
            entry(0, "fe80::1", GidType::IbRoceV1),
            entry(1, "fe80::1", GidType::RoceV2),
            entry(2, "fd12:3456:789a::5", GidType::IbRoceV1),
            entry(3, "fd12:3456:789a::5", GidType::RoceV2),
        ];
        assert_eq!(index_of(&t), Ok(3));
    }

    #[test]
    fn global_v2_is_chosen_when_there_is_no_ipv4() {
        let t = vec![
            entry(0, "fe80::1", GidType::RoceV2),
            entry(1, "2001:db8:1::7", GidType::IbRoceV1),
            entry(2, "2001:db8:1::7", GidType::RoceV2),
        ];
        assert_eq!(index_of(&t), Ok(2));
    }

    #[test]
    fn link_local_only_is_an_error_naming_what_was_there() {
        let t = vec![
            entry(0, "fe80::1", GidType::IbRoceV1),
            entry(1, "fe80::1", GidType::RoceV2),
        ];
        let e = index_of(&t).unwrap_err();
        assert!(e.contains("link-local"), "{e}");
        assert!(e.contains("index 1"), "{e}");
        assert!(e.contains("gid-index"), "{e}");
        // Given explicitly, a link-local entry is used.
        assert_eq!(choose_gid(&t, Some(1), false).unwrap().index, 1);
    }

    #[test]
    fn all_zero_entries_are_skipped() {
        let t = vec![
            entry(0, "::", GidType::RoceV2),
            entry(1, "fe80::1", GidType::RoceV2),
            entry(2, "::", GidType::RoceV2),
            entry(3, "fd00::3", GidType::RoceV2),
        ];
        assert_eq!(index_of(&t), Ok(3));
        assert!(index_of(&t[..1]).is_err());
        let e = choose_gid(&t, Some(0), false).unwrap_err();
        assert!(e.contains("index 0"), "{e}");
    }

    #[test]
    fn roce_v1_only_is_an_error() {
        let t = vec![
            entry(0, "fe80::1", GidType::IbRoceV1),
            entry(1, "::ffff:10.99.0.1", GidType::IbRoceV1),
            entry(2, "fd00::1", GidType::IbRoceV1),
        ];
        let e = index_of(&t).unwrap_err();
        assert!(e.contains("no RoCE v2 entry (only IB/RoCE v1)"), "{e}");
    }

    #[test]
    fn scopes_follow_the_ipv6_prefixes() {
        let scope = |a: &str| entry(0, a, GidType::RoceV2).scope();
        assert_eq!(scope("::"), GidScope::Empty);
        assert_eq!(scope("::ffff:192.168.1.2"), GidScope::Ipv4Mapped);
        assert_eq!(scope("fe80::1"), GidScope::LinkLocal);
        assert_eq!(scope("febf::1"), GidScope::LinkLocal);
        assert_eq!(scope("fc00::1"), GidScope::UniqueLocal);
        assert_eq!(scope("fdff::1"), GidScope::UniqueLocal);
        assert_eq!(scope("2001:db8::1"), GidScope::Global);
        assert_eq!(scope("3fff::1"), GidScope::Global);
        for other in ["::1", "ff02::1", "fec0::1", "::10.0.0.1", "4000::1"] {
            assert_eq!(scope(other), GidScope::Other, "{other}");
            assert!(!scope(other).is_routable());
        }
    }

    #[test]
    fn infiniband_uses_gid_zero() {
        let t = vec![entry(0, "fe80::2", GidType::Unknown)];
        assert_eq!(choose_gid(&t, None, true).unwrap().index, 0);
    }
}
