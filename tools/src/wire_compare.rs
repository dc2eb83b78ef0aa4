//! `xrdma wire-compare SIM.pcap WIRE.pcap [--known FILE]`: the simulator's capture of a
//! scenario against a capture of the same scenario on a real RoCE v2 wire (tcpdump on a
//! Soft-RoCE guest's NIC), measure by measure: opcodes, messages and their opcode sequences,
//! PSN order, payload and packet sizes, AckReq, ACKs per request packet, the AETH's MSN,
//! NAKs, CNPs, ECN.
//!
//! It reads classic pcap files (microsecond or nanosecond, either byte order) of Ethernet
//! frames, and of those only IPv4/UDP to port 4791. Only headers are read, so a snap length
//! of 96 bytes is enough: the BTH (opcode, pad count, destination QP, AckReq, PSN), the AETH
//! (syndrome, MSN), and the IPv4 and UDP lengths, from which a packet's payload size follows.
//!
//! Each measure has a class per capture (what is compared) and a detail (counts, shown):
//! "same" when the classes are equal, else "differs (known: REASON)" when the `--known` file
//! lists the measure, else "differs (UNKNOWN)". The known file has one line per accepted
//! difference, `MEASURE REASON...`; blank lines and `#` comments are skipped.
//!
//! Exit status: 0 when every measure is the same or a known difference, 1 when a difference
//! is not in the known file, 2 when a file cannot be read or is malformed (the error names
//! the file and, for a pcap, the byte offset).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xrdma_sim::capture::format as fmt_;

/// `xrdma wire-compare`'s arguments.
#[derive(clap::Args, Debug)]
pub struct WireCompareArgs {
    /// The simulator's capture (`xrdma run --capture H` writes `capture-hostH.pcap`).
    pub sim: PathBuf,
    /// The capture of the same scenario on the wire (e.g. `tcpdump -s 96 -w` on the NIC).
    pub wire: PathBuf,
    /// The accepted differences: one `MEASURE REASON...` line per measure.
    #[arg(long)]
    pub known: Option<PathBuf>,
}

/// Exit status when a difference is not listed in the known file.
pub const EXIT_UNKNOWN_DIFFERENCE: u8 = 1;
/// Exit status when an input file cannot be read or is malformed.
pub const EXIT_BAD_INPUT: u8 = 2;

/// An input that cannot be read: the file, the byte offset where it went wrong (pcap files),
/// and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The file, as given.
    pub file: String,
    /// Byte offset into the file of the header or record at fault.
    pub offset: Option<u64>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{}: at byte {o}: {}", self.file, self.what),
            None => write!(f, "{}: {}", self.file, self.what),
        }
    }
}

impl std::error::Error for InputError {}

/// The headers of one RoCE v2 packet that the measures use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocePacket {
    /// IPv4 source address.
    pub src: [u8; 4],
    /// IPv4 destination address.
    pub dst: [u8; 4],
    /// The IPv4 ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
    /// The IPv4 total length, bytes (the packet's size from the IP header on).
    pub ip_len: u16,
    /// The BTH opcode.
    pub opcode: u8,
    /// The BTH destination QP number (24 bits).
    pub dqpn: u32,
    /// The BTH AckReq bit.
    pub ack_req: bool,
    /// The BTH PSN (24 bits).
    pub psn: u32,
    /// The AETH's syndrome and MSN, on packets that carry one (ACK, NAK, READ responses).
    pub aeth: Option<(u8, u32)>,
    /// Payload bytes: the UDP length less the UDP header, BTH, extension headers, pad and
    /// ICRC.
    pub payload: u32,
}

/// What a pcap file holds: its RoCE v2 packets in order, and how many other frames it had
/// (PFC, other protocols).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    /// The RoCE v2 packets, in file order.
    pub packets: Vec<RocePacket>,
    /// Frames that are not IPv4/UDP to port 4791.
    pub other_frames: u64,
}

/// Names of the RC opcodes (IBA Vol. 1 Table 38) and the CNP (RoCEv2 Annex A17.9.3).
fn op_name(op: u8) -> String {
    const RC: [&str; 21] = [
        "SEND_FIRST",
        "SEND_MIDDLE",
        "SEND_LAST",
        "SEND_LAST_IMM",
        "SEND_ONLY",
        "SEND_ONLY_IMM",
        "WRITE_FIRST",
        "WRITE_MIDDLE",
        "WRITE_LAST",
        "WRITE_LAST_IMM",
        "WRITE_ONLY",
        "WRITE_ONLY_IMM",
        "READ_REQUEST",
        "READ_RESP_FIRST",
        "READ_RESP_MIDDLE",
        "READ_RESP_LAST",
        "READ_RESP_ONLY",
        "ACK",
        "ATOMIC_ACK",
        "CMP_SWAP",
        "FETCH_ADD",
    ];
    match op {
        0x81 => "CNP".into(),
        _ => RC
            .get(op as usize)
            .map_or(format!("0x{op:02x}"), |s| (*s).to_string()),
    }
}

/// Bytes of extension headers after the BTH for `op` (IBA §9.3: RETH 16, ImmDt 4, AETH 4,
/// AtomicETH 28, AtomicAckETH 8; a CNP's 16 reserved bytes), and where its AETH starts
/// relative to the end of the BTH.
fn ext_headers(op: u8) -> (usize, Option<usize>) {
    match op {
        0x06 | 0x0a | 0x0c => (16, None),
        0x0b => (20, None),
        0x03 | 0x05 | 0x09 => (4, None),
        0x0d | 0x0f | 0x10 | 0x11 => (4, Some(0)),
        0x12 => (12, Some(0)),
        0x13 | 0x14 => (28, None),
        0x81 => (16, None),
        _ => (0, None),
    }
}

const ACK: u8 = 0x11;
const CNP: u8 = 0x81;
const WRITE_ONLY_IMM: u8 = 0x0b;

/// A SEND, WRITE or READ request packet (RC opcodes 0x00–0x0c).
fn is_request(op: u8) -> bool {
    op <= 0x0c
}
/// The first or only packet of a request.
fn starts_message(op: u8) -> bool {
    matches!(op, 0x00 | 0x04 | 0x05 | 0x06 | 0x0a | 0x0b | 0x0c)
}
/// The last or only packet of a request.
fn ends_message(op: u8) -> bool {
    matches!(op, 0x02..=0x05 | 0x08..=0x0c)
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

/// The RoCE v2 packet in Ethernet frame `f` (captured bytes; `None` for other frames).
///
/// # Errors
/// A RoCE v2 frame cut before the end of its BTH or AETH, or whose UDP length is too short
/// for its headers.
fn parse_frame(f: &[u8]) -> Result<Option<RocePacket>, String> {
    let mut ip = fmt_::ETH_HEADER;
    if f.len() < ip {
        return Ok(None);
    }
    let mut ethertype = be16(&f[12..14]);
    if ethertype == 0x8100 && f.len() >= ip + 4 {
        ethertype = be16(&f[16..18]);
        ip += 4;
    }
    if ethertype != fmt_::ETHERTYPE_IPV4 {
        return Ok(None);
    }
    if f.len() < ip + fmt_::IPV4_HEADER {
        return Err(format!("IPv4 frame cut at {} bytes", f.len()));
    }
    let ihl = usize::from(f[ip] & 0x0f) * 4;
    let fragment = be16(&f[ip + 6..ip + 8]) & 0x1fff;
    if f[ip] >> 4 != 4 || ihl < fmt_::IPV4_HEADER || f[ip + 9] != 17 || fragment != 0 {
        return Ok(None);
    }
    let udp = ip + ihl;
    if f.len() < udp + fmt_::UDP_HEADER {
        return Err(format!("UDP datagram cut at {} bytes", f.len()));
    }
    if be16(&f[udp + 2..udp + 4]) != fmt_::ROCEV2_PORT {
        return Ok(None);
    }
    let bth = udp + fmt_::UDP_HEADER;
    if f.len() < bth + fmt_::BTH {
        return Err(format!(
            "RoCE v2 packet cut at {} bytes, before the end of its BTH (snap length too small?)",
            f.len()
        ));
    }
    let opcode = f[bth];
    let (ext, aeth_at) = ext_headers(opcode);
    let aeth = match aeth_at {
        Some(a) => {
            let at = bth + fmt_::BTH + a;
            if f.len() < at + 4 {
                return Err(format!(
                    "{} cut at {} bytes, before the end of its AETH",
                    op_name(opcode),
                    f.len()
                ));
            }
            Some((f[at], be24(&f[at + 1..at + 4])))
        }
        None => None,
    };
    let pad = usize::from((f[bth + 1] >> 4) & 3);
    let udp_len = usize::from(be16(&f[udp + 4..udp + 6]));
    let headers = fmt_::UDP_HEADER + fmt_::BTH + ext + pad + fmt_::ICRC;
    let Some(payload) = udp_len.checked_sub(headers) else {
        return Err(format!(
            "{}: UDP length {udp_len} is shorter than its headers ({headers} bytes)",
            op_name(opcode)
        ));
    };
    Ok(Some(RocePacket {
        src: [f[ip + 12], f[ip + 13], f[ip + 14], f[ip + 15]],
        dst: [f[ip + 16], f[ip + 17], f[ip + 18], f[ip + 19]],
        ecn: f[ip + 1] & 3,
        ip_len: be16(&f[ip + 2..ip + 4]),
        opcode,
        dqpn: be24(&f[bth + 5..bth + 8]),
        ack_req: f[bth + 8] & 0x80 != 0,
        psn: be24(&f[bth + 9..bth + 12]),
        aeth,
        payload: payload as u32,
    }))
}

/// Parse a classic pcap file's bytes (`file` names it in errors).
///
/// # Errors
/// Not a classic pcap file, a link type other than Ethernet, a header or record cut short,
/// or a malformed RoCE v2 frame; the error holds the byte offset.
pub fn parse_pcap(bytes: &[u8], file: &str) -> Result<Capture, InputError> {
    let err = |offset: usize, what: String| InputError {
        file: file.to_string(),
        offset: Some(offset as u64),
        what,
    };
    if bytes.len() < fmt_::FILE_HEADER {
        return Err(err(
            0,
            format!("{} bytes: shorter than a pcap file header", bytes.len()),
        ));
    }
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let little = match magic {
        0xa1b2_c3d4 | fmt_::MAGIC_NS => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        _ => {
            return Err(err(
                0,
                format!(
                    "magic 0x{magic:08x} is not a classic pcap file's (pcapng is not read: \
                     `editcap -F pcap` converts it)"
                ),
            ))
        }
    };
    let u32_at = |at: usize| {
        let b = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let link = u32_at(20);
    if link != fmt_::LINKTYPE_ETHERNET {
        return Err(err(20, format!("link type {link}, not Ethernet (1)")));
    }
    let mut cap = Capture::default();
    let mut off = fmt_::FILE_HEADER;
    while off < bytes.len() {
        if bytes.len() - off < fmt_::RECORD_HEADER {
            return Err(err(
                off,
                format!("record header cut short ({} bytes left)", bytes.len() - off),
            ));
        }
        let len = u32_at(off + 8) as usize;
        let body = off + fmt_::RECORD_HEADER;
        if len > bytes.len() - body {
            return Err(err(
                off,
                format!(
                    "record of {len} bytes runs past the end ({} left)",
                    bytes.len() - body
                ),
            ));
        }
        match parse_frame(&bytes[body..body + len]) {
            Ok(Some(p)) => cap.packets.push(p),
            Ok(None) => cap.other_frames += 1,
            Err(what) => return Err(err(off, what)),
        }
        off = body + len;
    }
    Ok(cap)
}

/// Read and parse the pcap file at `path`.
///
/// # Errors
/// The file cannot be read, or [`parse_pcap`] fails.
pub fn read_pcap(path: &Path) -> Result<Capture, InputError> {
    let bytes = std::fs::read(path).map_err(|e| InputError {
        file: path.display().to_string(),
        offset: None,
        what: format!("cannot read it: {e}"),
    })?;
    parse_pcap(&bytes, &path.display().to_string())
}

/// One measure of one capture: the class that is compared and the detail that is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    /// The measure's key (as the known file names it).
    pub key: &'static str,
    /// What is compared between the captures.
    pub class: String,
    /// Counts behind the class, shown and not compared.
    pub detail: String,
}

/// Every measure's key, in the order they are shown.
pub const MEASURES: [&str; 17] = [
    "opcodes",
    "write-bytes",
    "send-packets",
    "messages",
    "message-shapes",
    "packets-per-message",
    "psn-backwards",
    "psn-gaps",
    "payload-sizes",
    "packet-sizes",
    "ackreq",
    "acks-per-request-packet",
    "naks",
    "aeth-msn",
    "cnps",
    "write-only-imm",
    "ecn",
];

/// `a` comes after `b` in 24-bit PSN serial arithmetic.
fn psn_after(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b) & 0x00ff_ffff;
    d != 0 && d < 0x0080_0000
}

fn none_or(n: u64, what: &str) -> String {
    if n == 0 {
        "none".into()
    } else {
        what.to_string()
    }
}

fn join<T: fmt::Display>(it: impl IntoIterator<Item = T>, sep: &str) -> String {
    let v: Vec<String> = it.into_iter().map(|x| x.to_string()).collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join(sep)
    }
}

/// A message's shape: FIRST, `MIDDLE*` (zero or more of the FIRST's MIDDLE opcode), LAST;
/// ONLY alone; any other sequence as its opcodes.
fn shape(ops: &[u8]) -> String {
    match ops {
        [only] => op_name(*only),
        [first, mid @ .., last] if mid.iter().all(|&m| m == first + 1) => {
            format!(
                "{} {}* {}",
                op_name(*first),
                op_name(first + 1),
                op_name(*last)
            )
        }
        _ => join(ops.iter().map(|&o| op_name(o)), " "),
    }
}

/// The measures of one capture, in [`MEASURES`]' order.
pub fn measures(c: &Capture) -> Vec<Measure> {
    type Flow = ([u8; 4], [u8; 4], u32);
    let mut hist: BTreeMap<u8, u64> = BTreeMap::new();
    let mut top: HashMap<Flow, u32> = HashMap::new();
    let mut open: HashMap<Flow, Vec<u8>> = HashMap::new();
    let mut shapes: BTreeMap<String, u64> = BTreeMap::new();
    let mut lengths: BTreeMap<usize, u64> = BTreeMap::new();
    let (mut backwards, mut gaps, mut cut) = (0u64, 0u64, 0u64);
    let (mut new_req, mut writes, mut sends, mut reads) = (0u64, 0u64, 0u64, 0u64);
    let (mut write_bytes, mut send_bytes) = (0u64, 0u64);
    let (mut msgs_w, mut msgs_s, mut msgs_r) = (0u64, 0u64, 0u64);
    let mut non_last_sizes: BTreeSet<u32> = BTreeSet::new();
    let (mut last_min, mut last_max, mut max_payload) = (u32::MAX, 0u32, 0u32);
    let mut full_sizes: BTreeSet<String> = BTreeSet::new();
    let (mut nl, mut nl_ar, mut l, mut l_ar) = (0u64, 0u64, 0u64, 0u64);
    let (mut acks, mut naks, mut rnr) = (0u64, 0u64, 0u64);
    let (mut msn_max, mut msn_back) = (0u32, 0u64);
    let mut msn_last: HashMap<Flow, u32> = HashMap::new();
    let mut ecn: BTreeMap<&'static str, u64> = BTreeMap::new();
    for p in &c.packets {
        *hist.entry(p.opcode).or_default() += 1;
        let flow = (p.src, p.dst, p.dqpn);
        if p.opcode == ACK {
            full_sizes.insert(format!("ACK {}", p.ip_len));
        }
        if let Some((syn, msn)) = p.aeth {
            match syn >> 5 {
                0 if p.opcode == ACK => acks += 1,
                1 => rnr += 1,
                3 => naks += 1,
                _ => {}
            }
            msn_max = msn_max.max(msn);
            if let Some(&prev) = msn_last.get(&flow) {
                if psn_after(prev, msn) {
                    msn_back += 1;
                }
            }
            msn_last.insert(flow, msn);
        }
        if !is_request(p.opcode) {
            continue;
        }
        let name = ["Not-ECT", "ECT(1)", "ECT(0)", "CE"][usize::from(p.ecn)];
        *ecn.entry(name).or_default() += 1;
        match top.get(&flow) {
            Some(&t) if !psn_after(p.psn, t) => {
                backwards += 1;
                continue;
            }
            Some(&t) if p.psn != (t + 1) & 0x00ff_ffff => gaps += 1,
            _ => {}
        }
        top.insert(flow, p.psn);
        new_req += 1;
        match p.opcode {
            0x00..=0x05 => {
                sends += 1;
                send_bytes += u64::from(p.payload);
            }
            0x06..=0x0b => {
                writes += 1;
                write_bytes += u64::from(p.payload);
            }
            _ => reads += 1,
        }
        max_payload = max_payload.max(p.payload);
        let last = ends_message(p.opcode);
        if last {
            l += 1;
            l_ar += u64::from(p.ack_req);
            last_min = last_min.min(p.payload);
            last_max = last_max.max(p.payload);
        } else {
            nl += 1;
            nl_ar += u64::from(p.ack_req);
            non_last_sizes.insert(p.payload);
            full_sizes.insert(format!("{} {}", op_name(p.opcode), p.ip_len));
        }
        if starts_message(p.opcode) {
            match p.opcode {
                0x00 | 0x04 | 0x05 => msgs_s += 1,
                0x0c => msgs_r += 1,
                _ => msgs_w += 1,
            }
            if open.insert(flow, vec![p.opcode]).is_some() {
                cut += 1;
            }
        } else if let Some(ops) = open.get_mut(&flow) {
            ops.push(p.opcode);
        } else {
            cut += 1;
            continue;
        }
        if last {
            if let Some(ops) = open.remove(&flow) {
                *shapes.entry(shape(&ops)).or_default() += 1;
                *lengths.entry(ops.len()).or_default() += 1;
            }
        }
    }
    cut += open.len() as u64;
    let m = |key, class: String, detail: String| Measure { key, class, detail };
    let count = |op: u8| hist.get(&op).copied().unwrap_or(0);
    let ackreq_class = if l_ar < l {
        "not on every last packet".to_string()
    } else if nl_ar == nl && nl > 0 {
        "every packet".to_string()
    } else if nl_ar == 0 {
        "last packet of a message only".to_string()
    } else {
        "last packet and some others".to_string()
    };
    let per_req = |n: u64| {
        if new_req == 0 {
            0.0
        } else {
            n as f64 / new_req as f64
        }
    };
    let ackreq_pkts = nl_ar + l_ar;
    let msn_class = if msn_max == 0 {
        "always 0"
    } else if msn_back == 0 {
        "counts messages"
    } else {
        "goes backwards"
    };
    vec![
        m(
            "opcodes",
            join(
                hist.keys()
                    .filter(|&&o| o != CNP && o != WRITE_ONLY_IMM)
                    .map(|&o| op_name(o)),
                " ",
            ),
            join(
                hist.iter().map(|(&o, n)| format!("{} {n}", op_name(o))),
                ", ",
            ),
        ),
        m(
            "write-bytes",
            write_bytes.to_string(),
            format!("payload bytes of {writes} WRITE packets (first transmissions)"),
        ),
        m(
            "send-packets",
            sends.to_string(),
            format!("first transmissions, {send_bytes} payload bytes; {reads} READ requests"),
        ),
        m(
            "messages",
            format!("{msgs_w} WRITE, {msgs_s} SEND, {msgs_r} READ"),
            format!("{cut} cut short by the capture's ends or a retransmission"),
        ),
        m(
            "message-shapes",
            join(shapes.keys().filter(|s| *s != "WRITE_ONLY_IMM"), " | "),
            join(shapes.iter().map(|(s, n)| format!("{n}x {s}")), ", "),
        ),
        m(
            "packets-per-message",
            join(lengths.keys(), " "),
            join(lengths.iter().map(|(k, n)| format!("{k} pkts: {n}")), ", "),
        ),
        m(
            "psn-backwards",
            none_or(backwards, "present"),
            format!("{backwards} request packets at or below their QP's highest PSN (resent)"),
        ),
        m(
            "psn-gaps",
            none_or(gaps, "present"),
            format!("{gaps} jumps forward by more than one PSN (packets not in the capture)"),
        ),
        m(
            "payload-sizes",
            format!("FIRST/MIDDLE {} B", join(&non_last_sizes, "/")),
            if l == 0 {
                "no last packets".into()
            } else {
                format!("LAST/ONLY {last_min}..{last_max} B; largest {max_payload} B")
            },
        ),
        m(
            "packet-sizes",
            join(&full_sizes, ", "),
            "IPv4 total length of FIRST/MIDDLE request packets and ACKs, bytes".into(),
        ),
        m(
            "ackreq",
            ackreq_class,
            format!("AckReq on {nl_ar}/{nl} FIRST/MIDDLE and {l_ar}/{l} LAST/ONLY packets"),
        ),
        m(
            "acks-per-request-packet",
            if per_req(acks) >= 0.9 {
                "about one"
            } else {
                "fewer than one"
            }
            .into(),
            format!(
                "{acks} ACKs / {new_req} request packets = {:.3}; per AckReq packet {:.3}",
                per_req(acks),
                if ackreq_pkts == 0 {
                    0.0
                } else {
                    acks as f64 / ackreq_pkts as f64
                }
            ),
        ),
        m(
            "naks",
            none_or(naks + rnr, "present"),
            format!("{naks} NAK (sequence error, invalid request, remote access), {rnr} RNR NAK"),
        ),
        m(
            "aeth-msn",
            msn_class.into(),
            format!("largest MSN {msn_max}; {msn_back} times lower than the previous on its QP"),
        ),
        m(
            "cnps",
            none_or(count(CNP), "present"),
            format!("{} CNPs", count(CNP)),
        ),
        m(
            "write-only-imm",
            none_or(count(WRITE_ONLY_IMM), "present"),
            format!("{} WRITE_ONLY_IMM packets", count(WRITE_ONLY_IMM)),
        ),
        m(
            "ecn",
            join(ecn.keys(), " "),
            join(ecn.iter().map(|(k, n)| format!("{k} {n}")), ", "),
        ),
    ]
}

/// The accepted differences: measure key → reason.
///
/// # Errors
/// A line without a reason, or a key that is not a measure (see [`MEASURES`]).
pub fn parse_known(text: &str, file: &str) -> Result<BTreeMap<String, String>, InputError> {
    let mut known = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let what = if !MEASURES.contains(&key) {
            format!("{key:?} is not a measure (one of: {})", MEASURES.join(", "))
        } else if reason.trim().is_empty() {
            format!("{key} has no reason")
        } else {
            known.insert(key.to_string(), reason.trim().to_string());
            continue;
        };
        return Err(InputError {
            file: file.to_string(),
            offset: None,
            what: format!("line {}: {what}", i + 1),
        });
    }
    Ok(known)
}

/// The comparison as text (table, then details, then the tally) and whether a difference
/// is not in `known`.
pub fn compare(sim: &Capture, wire: &Capture, known: &BTreeMap<String, String>) -> (String, bool) {
    let (ms, mw) = (measures(sim), measures(wire));
    let mut rows = vec![[
        "measure".to_string(),
        "sim".into(),
        "wire".into(),
        "verdict".into(),
    ]];
    let (mut same, mut known_n, mut unknown) = (0, 0, 0);
    let mut stale = Vec::new();
    for (s, w) in ms.iter().zip(&mw) {
        let verdict = if s.class == w.class {
            same += 1;
            if known.contains_key(s.key) {
                stale.push(s.key);
            }
            "same".to_string()
        } else if let Some(r) = known.get(s.key) {
            known_n += 1;
            format!("differs (known: {r})")
        } else {
            unknown += 1;
            "differs (UNKNOWN)".to_string()
        };
        rows.push([s.key.to_string(), s.class.clone(), w.class.clone(), verdict]);
    }
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1).min(44), width(2).min(44));
    let mut out = String::new();
    for r in &rows {
        let _ = writeln!(out, "{:w0$}  {:w1$}  {:w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    let _ = writeln!(
        out,
        "\nRoCE v2 packets: sim {}, wire {} (other frames: sim {}, wire {})",
        sim.packets.len(),
        wire.packets.len(),
        sim.other_frames,
        wire.other_frames
    );
    for (s, w) in ms.iter().zip(&mw) {
        let _ = writeln!(
            out,
            "{}:\n  sim:  {}\n  wire: {}",
            s.key, s.detail, w.detail
        );
    }
    for k in &stale {
        let _ = writeln!(
            out,
            "note: {k} is listed as a known difference but is the same here"
        );
    }
    let _ = writeln!(
        out,
        "wire-compare: {} measures, {same} same, {known_n} differ (known), {unknown} differ \
         (UNKNOWN)",
        ms.len()
    );
    (out, unknown > 0)
}

/// Runs `xrdma wire-compare`: prints the comparison; the exit status as the module says.
pub fn run(args: &WireCompareArgs) -> ExitCode {
    let inputs = || -> Result<_, InputError> {
        let known = match &args.known {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| InputError {
                    file: p.display().to_string(),
                    offset: None,
                    what: format!("cannot read it: {e}"),
                })?;
                parse_known(&text, &p.display().to_string())?
            }
            None => BTreeMap::new(),
        };
        Ok((read_pcap(&args.sim)?, read_pcap(&args.wire)?, known))
    };
    match inputs() {
        Ok((sim, wire, known)) => {
            let (text, unknown) = compare(&sim, &wire, &known);
            print!("{text}");
            if unknown {
                ExitCode::from(EXIT_UNKNOWN_DIFFERENCE)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

#[cfg(test)]
#[path = "wire_compare_tests.rs"]
mod tests;
