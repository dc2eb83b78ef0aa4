//! Packet captures of a simulated run: the pcap files' layout and contents, their bounds,
//! and that capturing changes nothing in the run.

mod common;
use common::*;
use std::collections::BTreeMap;
use xrdma::{SendOpcode, Transport};
use xrdma_sim::{
    capture, CaptureConfig, DcqcnConfig, EcnConfig, LinkCapture, PfcConfig, SimConfig, Simulation,
};

/// One record of a pcap file: time (ns) and frame.
struct Record {
    ns: u64,
    frame: Vec<u8>,
}

/// Parse a nanosecond little-endian pcap file of Ethernet frames.
fn records(pcap: &[u8]) -> Vec<Record> {
    assert_eq!(&pcap[0..4], &[0x4d, 0x3c, 0xb2, 0xa1], "nanosecond magic");
    assert_eq!(u32::from_le_bytes(pcap[20..24].try_into().unwrap()), 1);
    let mut out = Vec::new();
    let mut off = 24;
    while off < pcap.len() {
        let w = |i: usize| u32::from_le_bytes(pcap[off + i..off + i + 4].try_into().unwrap());
        let (secs, ns, incl, orig) = (w(0), w(4), w(8), w(12));
        assert_eq!(incl, orig, "no frame is truncated");
        assert!(ns < 1_000_000_000);
        let frame = pcap[off + 16..off + 16 + incl as usize].to_vec();
        out.push(Record {
            ns: secs as u64 * 1_000_000_000 + ns as u64,
            frame,
        });
        off += 16 + incl as usize;
    }
    assert_eq!(off, pcap.len());
    out
}

/// A RoCEv2 frame's fields: (source IP, destination QPN, opcode, PSN, ECN).
fn roce(f: &[u8]) -> Option<([u8; 4], u32, u8, u32, u8)> {
    if f[12..14] != [0x08, 0x00] {
        return None;
    }
    assert_eq!(u16::from_be_bytes([f[36], f[37]]), 4791);
    let b = &f[42..];
    let qpn = u32::from_be_bytes([0, b[5], b[6], b[7]]);
    let psn = u32::from_be_bytes([0, b[9], b[10], b[11]]);
    Some((f[26..30].try_into().unwrap(), qpn, b[0], psn, f[15] & 3))
}

/// An 8-to-1 WRITE incast with ECN, DCQCN and PFC on a small buffer (so there are CNPs and
/// PAUSE frames), plus a SEND with immediate data from host 0 to host 1 that finds no
/// receive WR at first (an RNR NAK) and one posted at 30 µs; `capture` on if given.
fn run_incast(capture: Option<CaptureConfig>) -> Simulation {
    let n = 8;
    let bytes = 64 * 1024;
    let cfg = SimConfig {
        hosts: n + 1,
        switch_buffer_bytes: 9 * 47_336,
        pfc: Some(PfcConfig::default()),
        ecn: Some(EcnConfig {
            kmin_bytes: 5_000,
            kmax_bytes: 20_000,
            pmax: 1.0,
        }),
        dcqcn: Some(DcqcnConfig::default()),
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    if let Some(c) = capture {
        sim.enable_capture(c);
    }
    let dst = sim
        .transport(n)
        .register_memory(n as u64 * bytes as u64)
        .unwrap();
    for h in 0..n {
        let (qa, _) = connect(&mut sim, h, n);
        let src = patterned(&mut sim, h, bytes as usize, h as u8);
        let mut w = wr(h as u64, SendOpcode::RdmaWrite, &src, bytes);
        w.remote_addr = dst.addr + h as u64 * bytes as u64;
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
    }
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 100, 7);
    let rmr = sim.transport(1).register_memory(4096).unwrap();
    let mut w = wr(99, SendOpcode::SendWithImm, &src, 100);
    w.imm = 0x0102_0304;
    sim.transport(0).post_send(qa, &w).unwrap();
    sim.set_wake(1, at_us(30));
    let mut posted = false;
    run_with(&mut sim, |sim, h| {
        if h == 1 && !posted && sim.now() >= at_us(30) {
            posted = true;
            sim.transport(1)
                .post_recv(qb, &recv(5, &rmr, 4096))
                .unwrap();
        }
    });
    sim
}

fn capture_of(hosts: Vec<u32>) -> CaptureConfig {
    CaptureConfig {
        hosts,
        ..Default::default()
    }
}

#[test]
fn capturing_does_not_change_the_run() {
    let plain = run_incast(None);
    let captured = run_incast(Some(capture_of(vec![0, 1, 8])));
    assert_eq!(plain.trace_hash(), captured.trace_hash());
    assert_eq!(plain.stats(), captured.stats());
    assert!(plain.captures().is_empty());
    assert_eq!(captured.captures().len(), 3);
}

#[test]
fn the_receivers_link_holds_every_packet_kind_in_order() {
    let sim = run_incast(Some(capture_of(vec![8, 0, 8])));
    let caps: Vec<LinkCapture> = sim.captures();
    assert_eq!(caps.iter().map(|c| c.host).collect::<Vec<_>>(), [8, 0]);
    let st = sim.stats();
    assert!(
        st.pfc_xoff_sent > 0 && st.ecn_marks > 0 && st.rnr_naks > 0,
        "{st:?}"
    );
    let rec = records(&caps[0].pcap);
    assert_eq!(rec.len() as u64, caps[0].packets);
    assert_eq!(caps[0].skipped, 0);
    let mut ops: BTreeMap<u8, u64> = BTreeMap::new();
    let mut pfc = 0;
    // Per (sender, destination QP), the data PSNs arrive one after the other: this incast
    // loses nothing, so nothing is resent.
    let mut next_psn: BTreeMap<([u8; 4], u32), u32> = BTreeMap::new();
    let mut ce = 0;
    for w in rec.windows(2) {
        assert!(w[0].ns <= w[1].ns, "records in time order");
    }
    for r in &rec {
        let Some((src, qpn, op, psn, ecn)) = roce(&r.frame) else {
            assert_eq!(&r.frame[12..16], &[0x88, 0x08, 0x01, 0x01]);
            pfc += 1;
            continue;
        };
        *ops.entry(op).or_default() += 1;
        if (0x06..=0x08).contains(&op) {
            assert_eq!(&r.frame[30..34], &capture::host_ipv4(8));
            if let Some(&want) = next_psn.get(&(src, qpn)) {
                assert_eq!(psn, want, "PSN after {src:?}/{qpn:#x}");
            }
            next_psn.insert((src, qpn), (psn + 1) & 0xff_ffff);
            assert!(ecn == 2 || ecn == 3, "data is ECN-capable");
            ce += u64::from(ecn == 3);
        }
    }
    // 8 WRITEs of 64 packets: first, 62 middle, last; one ACK per packet.
    assert_eq!(ops.get(&0x06), Some(&8));
    assert_eq!(ops.get(&0x07), Some(&(8 * 62)));
    assert_eq!(ops.get(&0x08), Some(&8));
    assert_eq!(ops.get(&0x11), Some(&(8 * 64)));
    assert_eq!(next_psn.len(), 8);
    assert!(ce > 0, "some data arrived CE-marked");
    assert!(ops.get(&0x81).copied().unwrap_or(0) > 0, "CNPs go out");
    // Host 8 only receives; the switch pauses the senders, not it.
    assert_eq!(pfc, 0);
}

#[test]
fn a_senders_link_holds_pauses_cnps_and_the_rnr_nak() {
    let sim = run_incast(Some(capture_of(vec![0])));
    let cap = &sim.captures()[0];
    let rec = records(&cap.pcap);
    let mut pause = 0;
    let mut resume = 0;
    let mut cnp = 0;
    let mut rnr = 0;
    let mut send_imm = 0;
    for r in &rec {
        let f = &r.frame;
        match roce(f) {
            None => {
                assert_eq!(f.len(), 60);
                assert_eq!(&f[0..6], &[0x01, 0x80, 0xc2, 0, 0, 1]);
                assert_eq!(&f[6..12], &capture::switch_port_mac(0));
                let q = u16::from_be_bytes([f[16 + 2 * 3 + 2], f[16 + 2 * 3 + 3]]);
                if q == 0 {
                    resume += 1;
                } else {
                    pause += 1;
                }
            }
            Some((src, _, 0x81, _, ecn)) => {
                assert_eq!(src, capture::host_ipv4(8));
                assert_eq!(ecn, 1);
                assert_eq!(f[15] >> 2, capture::CNP_DSCP);
                cnp += 1;
            }
            Some((src, _, 0x11, _, _)) if src == capture::host_ipv4(1) && f[54] >> 5 == 1 => {
                rnr += 1;
            }
            Some((_, _, 0x05, _, _)) => {
                // SEND only with immediate: ImmDt after the BTH, then 100 payload bytes.
                assert_eq!(&f[54..58], &[1, 2, 3, 4]);
                let want: Vec<u8> = (0..100u32)
                    .map(|i| (i as u8).wrapping_mul(31).wrapping_add(7))
                    .collect();
                assert_eq!(&f[58..158], &want[..]);
                send_imm += 1;
            }
            _ => {}
        }
    }
    assert!(pause > 0 && resume > 0, "PAUSE {pause}, RESUME {resume}");
    assert!(cnp > 0);
    assert!(rnr > 0, "the RNR NAK is on host 0's link");
    assert!(send_imm >= 2, "the SEND and its resend after the RNR wait");
}

#[test]
fn bounds_keep_the_file_small() {
    let sim = run_incast(Some(CaptureConfig {
        hosts: vec![8],
        max_packets: 50,
        from: at_us(2),
        until: None,
    }));
    let cap = &sim.captures()[0];
    let rec = records(&cap.pcap);
    assert_eq!(rec.len(), 50);
    assert_eq!(cap.packets, 50);
    assert!(cap.skipped > 900, "{} skipped", cap.skipped);
    assert!(rec.iter().all(|r| r.ns >= 2_000));
    let full = run_incast(Some(capture_of(vec![8])));
    let all = &full.captures()[0];
    assert_eq!(all.packets + all.skipped, all.packets);
    assert_eq!(cap.packets + cap.skipped, all.packets);
    let window = run_incast(Some(CaptureConfig {
        hosts: vec![8],
        max_packets: u64::MAX,
        from: at_us(5),
        until: Some(at_us(10)),
    }));
    let w = records(&window.captures()[0].pcap);
    assert!(!w.is_empty());
    assert!(w.iter().all(|r| (5_000..10_000).contains(&r.ns)));
}
