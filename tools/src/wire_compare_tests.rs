//! Unit tests of `xrdma wire-compare` on small hand-built pcap files.

use super::*;

/// One RoCE v2 request or ACK to build: (opcode, destination QP, AckReq, PSN, payload
/// bytes, AETH).
type Pkt = (u8, u32, bool, u32, u32, Option<(u8, u32)>);

/// The Ethernet frame of `p` from host `from` to host `to`, cut to `snap` bytes.
fn frame(from: u8, to: u8, p: Pkt, snap: usize) -> Vec<u8> {
    let (op, dqpn, ack_req, psn, payload, aeth) = p;
    let (ext, _) = ext_headers(op);
    let pad = (4 - payload % 4) % 4;
    let udp_len = 8 + 12 + ext as u32 + payload + pad + 4;
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(&[0x45, 2]);
    f.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 99, 0, from, 10, 99, 0, to]);
    f.extend_from_slice(&[0xc0, 0x01, 0x12, 0xb7]);
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, op, (pad as u8) << 4, 0xff, 0xff, 0]);
    f.extend_from_slice(&dqpn.to_be_bytes()[1..]);
    f.push(if ack_req { 0x80 } else { 0 });
    f.extend_from_slice(&psn.to_be_bytes()[1..]);
    let mut rest = vec![0u8; ext + (payload + pad + 4) as usize];
    if let Some((syn, msn)) = aeth {
        rest[0] = syn;
        rest[1..4].copy_from_slice(&msn.to_be_bytes()[1..]);
    }
    f.extend_from_slice(&rest);
    f.truncate(snap);
    f
}

/// A microsecond pcap (tcpdump's) of `frames`, little-endian.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 96, 0, 0, 0, 1, 0, 0, 0]);
    for (i, f) in frames.iter().enumerate() {
        b.extend_from_slice(&(i as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32 + 1000).to_le_bytes());
        b.extend_from_slice(f);
    }
    b
}

/// A 3-packet WRITE with immediate from host 2 to QP 17 on host 1 and a SEND_ONLY, with
/// AckReq on every packet (`every`) or on last packets only, and one ACK per AckReq packet
/// (MSN 0) or one per message (MSN counting).
fn scenario(every: bool, snap: usize) -> Capture {
    let ack = |psn, msn| frame(1, 2, (ACK, 5, false, psn, 0, Some((0x1f, msn))), snap);
    let mut fs = vec![
        frame(2, 1, (0x06, 17, every, 100, 1024, None), snap),
        frame(2, 1, (0x07, 17, every, 101, 1024, None), snap),
        frame(2, 1, (0x09, 17, true, 102, 512, None), snap),
        frame(2, 1, (0x04, 17, true, 103, 60, None), snap),
    ];
    if every {
        fs.extend((100..104).map(|psn| ack(psn, 0)));
    } else {
        fs.extend([ack(102, 1), ack(103, 2)]);
    }
    parse_pcap(&pcap(&fs), "t.pcap").unwrap()
}

fn measure(c: &Capture, key: &str) -> Measure {
    measures(c).into_iter().find(|m| m.key == key).unwrap()
}

#[test]
fn headers_are_read_from_a_96_byte_snap() {
    let c = scenario(false, 96);
    assert_eq!(c.packets.len(), 6);
    assert_eq!(c.other_frames, 0);
    let p = c.packets[2];
    assert_eq!(
        (p.opcode, p.dqpn, p.ack_req, p.psn, p.payload),
        (0x09, 17, true, 102, 512)
    );
    assert_eq!((p.src, p.dst, p.ecn), ([10, 99, 0, 2], [10, 99, 0, 1], 2));
    assert_eq!(p.ip_len as u32, 20 + 8 + 12 + 4 + 512 + 4);
    assert_eq!(c.packets[3].payload, 60);
    assert_eq!(c.packets[5].aeth, Some((0x1f, 2)));
    assert_eq!(c.packets[0].payload, 1024, "the RETH is not payload");
}

#[test]
fn big_endian_and_nanosecond_files_read_the_same() {
    let fs = [frame(2, 1, (0x04, 9, true, 7, 8, None), 96)];
    let le = pcap(&fs);
    let mut ns = le.clone();
    ns[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    let mut be = Vec::new();
    be.extend_from_slice(&0xa1b2_c3d4u32.to_be_bytes());
    be.extend_from_slice(&[0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 96, 0, 0, 0, 1]);
    be.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    be.extend_from_slice(&(fs[0].len() as u32).to_be_bytes());
    be.extend_from_slice(&(fs[0].len() as u32).to_be_bytes());
    be.extend_from_slice(&fs[0]);
    let want = parse_pcap(&le, "le").unwrap();
    assert_eq!(want.packets.len(), 1);
    assert_eq!(parse_pcap(&ns, "ns").unwrap(), want);
    assert_eq!(parse_pcap(&be, "be").unwrap(), want);
}

#[test]
fn other_frames_are_counted_not_read() {
    let mut pfc = vec![0u8; 60];
    pfc[12..14].copy_from_slice(&0x8808u16.to_be_bytes());
    let mut other_udp = frame(2, 1, (0x04, 9, true, 7, 8, None), 96);
    other_udp[36..38].copy_from_slice(&53u16.to_be_bytes());
    let c = parse_pcap(&pcap(&[pfc, other_udp]), "t").unwrap();
    assert_eq!((c.packets.len(), c.other_frames), (0, 2));
}

#[test]
fn a_malformed_file_names_the_file_and_the_byte_offset() {
    let fs = [
        frame(2, 1, (0x04, 9, true, 7, 8, None), 96),
        frame(2, 1, (0x04, 9, true, 8, 8, None), 96),
    ];
    let mut b = pcap(&fs);
    let second = 24 + 16 + fs[0].len();
    b.truncate(b.len() - 3);
    let e = parse_pcap(&b, "cut.pcap").unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.offset),
        ("cut.pcap", Some(second as u64))
    );
    assert!(
        e.to_string()
            .starts_with(&format!("cut.pcap: at byte {second}: record of")),
        "{e}"
    );

    let e = parse_pcap(b"\x0a\x0d\x0d\x0a and then some more bytes", "ng.pcapng").unwrap_err();
    assert_eq!(e.offset, Some(0));
    assert!(e.what.contains("pcapng"), "{e}");
    assert!(parse_pcap(&b[..10], "short")
        .unwrap_err()
        .what
        .contains("shorter"));

    let mut linux_sll = pcap(&[]);
    linux_sll[20] = 113;
    assert_eq!(parse_pcap(&linux_sll, "sll").unwrap_err().offset, Some(20));

    // A RoCE v2 frame cut inside its BTH, and an ACK cut before its AETH.
    let e = parse_pcap(&pcap(&[frame(2, 1, (0x04, 9, true, 7, 8, None), 50)]), "b").unwrap_err();
    assert!(e.what.contains("BTH"), "{e}");
    let e = parse_pcap(
        &pcap(&[frame(1, 2, (ACK, 5, false, 7, 0, Some((0, 1))), 56)]),
        "a",
    );
    assert!(e.unwrap_err().what.contains("AETH"));

    // A UDP length too short for the headers.
    let mut f = frame(2, 1, (0x06, 9, true, 7, 8, None), 96);
    f[38..40].copy_from_slice(&30u16.to_be_bytes());
    assert!(parse_pcap(&pcap(&[f]), "u")
        .unwrap_err()
        .what
        .contains("UDP length 30"));
}

#[test]
fn measures_of_a_capture() {
    let sim = scenario(true, 2000);
    let wire = scenario(false, 96);
    assert_eq!(measure(&sim, "ackreq").class, "every packet");
    assert_eq!(
        measure(&wire, "ackreq").class,
        "last packet of a message only"
    );
    assert_eq!(measure(&sim, "acks-per-request-packet").class, "about one");
    assert_eq!(
        measure(&wire, "acks-per-request-packet").class,
        "fewer than one"
    );
    assert_eq!(measure(&sim, "aeth-msn").class, "always 0");
    assert_eq!(measure(&wire, "aeth-msn").class, "counts messages");
    let shapes = measure(&wire, "message-shapes");
    assert_eq!(
        shapes.class,
        "SEND_ONLY | WRITE_FIRST WRITE_MIDDLE* WRITE_LAST_IMM"
    );
    assert_eq!(measure(&wire, "packets-per-message").class, "1 3");
    assert_eq!(measure(&wire, "messages").class, "1 WRITE, 1 SEND, 0 READ");
    assert_eq!(measure(&wire, "payload-sizes").class, "FIRST/MIDDLE 1024 B");
    assert_eq!(
        measure(&wire, "packet-sizes").class,
        "ACK 48, WRITE_FIRST 1084, WRITE_MIDDLE 1068"
    );
    assert_eq!(measure(&wire, "psn-backwards").class, "none");
    assert_eq!(
        measure(&wire, "write-bytes").class,
        (2 * 1024 + 512).to_string()
    );
    assert_eq!(measure(&wire, "ecn").class, "ECT(0)");
    let opcodes = measure(&wire, "opcodes");
    assert_eq!(
        opcodes.class,
        "SEND_ONLY WRITE_FIRST WRITE_MIDDLE WRITE_LAST_IMM ACK"
    );
    assert!(opcodes.detail.contains("ACK 2"), "{}", opcodes.detail);
}

#[test]
fn a_resent_packet_goes_backwards_and_a_missing_one_is_a_gap() {
    let fs = [
        frame(2, 1, (0x04, 17, true, 0xff_fffe, 8, None), 96),
        frame(2, 1, (0x04, 17, true, 0xff_ffff, 8, None), 96),
        frame(2, 1, (0x04, 17, true, 0xff_fffe, 8, None), 96),
        frame(2, 1, (0x04, 17, true, 0, 8, None), 96),
        frame(2, 1, (0x04, 17, true, 2, 8, None), 96),
        frame(2, 1, (0x0b, 17, true, 3, 8, None), 96),
    ];
    let c = parse_pcap(&pcap(&fs), "t").unwrap();
    assert!(measure(&c, "psn-backwards").detail.starts_with("1 request"));
    assert!(measure(&c, "psn-gaps").detail.starts_with("1 jumps"));
    assert_eq!(measure(&c, "write-only-imm").class, "present");
    assert_eq!(measure(&c, "send-packets").class, "4");
    assert_eq!(
        measure(&c, "opcodes").class,
        "SEND_ONLY",
        "WRITE_ONLY_IMM has its own measure"
    );
    let shapes = measure(&c, "message-shapes");
    assert_eq!(shapes.class, "SEND_ONLY");
    assert_eq!(shapes.detail, "4x SEND_ONLY, 1x WRITE_ONLY_IMM");
}

#[test]
fn a_message_without_middle_packets_has_the_same_shape() {
    let fs = [
        frame(2, 1, (0x06, 17, false, 1, 1024, None), 96),
        frame(2, 1, (0x09, 17, true, 2, 8, None), 96),
        frame(2, 1, (0x00, 17, false, 3, 1024, None), 96),
        frame(2, 1, (0x02, 17, true, 4, 8, None), 96),
        frame(2, 1, (0x06, 17, false, 5, 1024, None), 96),
        frame(2, 1, (0x07, 17, false, 6, 1024, None), 96),
        frame(2, 1, (0x07, 17, false, 7, 1024, None), 96),
        frame(2, 1, (0x09, 17, true, 8, 8, None), 96),
    ];
    let c = parse_pcap(&pcap(&fs), "t").unwrap();
    let shapes = measure(&c, "message-shapes");
    let want = "SEND_FIRST SEND_MIDDLE* SEND_LAST | WRITE_FIRST WRITE_MIDDLE* WRITE_LAST_IMM";
    assert_eq!(shapes.class, want);
    assert!(
        shapes.detail.contains("2x WRITE_FIRST"),
        "{}",
        shapes.detail
    );
    assert_eq!(measure(&c, "packets-per-message").class, "2 4");
}

#[test]
fn the_same_capture_is_the_same_in_every_measure() {
    let c = scenario(true, 96);
    let (text, unknown) = compare(&c, &c, &BTreeMap::new());
    assert!(!unknown, "{text}");
    assert!(
        text.contains("17 measures, 17 same, 0 differ (known), 0 differ (UNKNOWN)"),
        "{text}"
    );
}

#[test]
fn a_difference_passes_only_when_it_is_known() {
    let (sim, wire) = (scenario(true, 2000), scenario(false, 96));
    let all = "ackreq AckReq only on last packets\nacks-per-request-packet one per message\n\
               # a comment\n\naeth-msn rxe counts messages\n";
    let known = parse_known(all, "k").unwrap();
    let (text, unknown) = compare(&sim, &wire, &known);
    assert!(!unknown, "{text}");
    assert!(
        text.contains("differs (known: rxe counts messages)"),
        "{text}"
    );
    assert!(
        text.contains("14 same, 3 differ (known), 0 differ (UNKNOWN)"),
        "{text}"
    );

    // aeth-msn left out: an unknown difference, which fails.
    let known = parse_known(&all.replace("aeth-msn rxe counts messages", ""), "k").unwrap();
    let (text, unknown) = compare(&sim, &wire, &known);
    assert!(unknown);
    assert!(text
        .lines()
        .any(|l| l.starts_with("aeth-msn") && l.ends_with("differs (UNKNOWN)")));

    // A listed difference that does not differ is pointed out, and passes.
    let known = parse_known("cnps the wire has no ECN marking\n", "k").unwrap();
    let (text, unknown) = compare(&wire, &wire, &known);
    assert!(!unknown);
    assert!(text.contains("note: cnps is listed as a known difference but is the same here"));
}

#[test]
fn a_known_file_names_only_measures_each_with_a_reason() {
    let e = parse_known("ackreq fine\nack-req typo\n", "k.txt").unwrap_err();
    assert_eq!(e.file, "k.txt");
    assert!(
        e.what.starts_with("line 2: \"ack-req\" is not a measure"),
        "{e}"
    );
    let e = parse_known("cnps\n", "k.txt").unwrap_err();
    assert_eq!(e.what, "line 1: cnps has no reason");
}
