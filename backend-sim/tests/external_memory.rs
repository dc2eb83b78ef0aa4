//! Application memory registered in place: WRITEs read it where it lies, the receiver's MR
//! holds what lands by reference, reads back the exact bytes (including after losses,
//! retransmissions and overwrites), and lends them without a copy.

mod common;
use bytes::Bytes;
use common::*;
use xrdma::{LocalMemory, SendOpcode, Sge, Transport, WcStatus};
use xrdma_sim::{SimConfig, Simulation};

/// A block of `len` pseudo-random bytes from `salt`.
fn block(len: usize, salt: u64) -> Bytes {
    let mut x = salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// Whether `b` lies inside `block`'s memory (shared, not copied).
fn inside(b: &[u8], block: &Bytes) -> bool {
    let (p, q) = (block.as_ptr() as usize, b.as_ptr() as usize);
    q >= p && q + b.len() <= p + block.len()
}

#[test]
fn a_write_from_registered_application_memory_lands_by_reference() {
    let mut sim = Simulation::new(SimConfig::default()).unwrap();
    let data = block(300_000, 7);
    let ext = sim.transport(0).register_external(data.clone()).unwrap();
    assert_eq!(ext.addr, data.as_ptr() as u64);
    // The same buffer again: the same registration.
    assert_eq!(
        sim.transport(0).register_external(data.clone()).unwrap(),
        ext
    );
    // A slice of it is in registered memory; other bytes are not.
    let part = data.slice(1000..201_000);
    assert_eq!(sim.transport(0).registered_lkey(&part), Some(ext.lkey));
    assert_eq!(sim.transport(0).registered_lkey(&[1, 2, 3]), None);
    assert_eq!(sim.transport(1).registered_lkey(&part), None);

    let dst = sim.transport(1).register_memory(400_000).unwrap();
    let (qa, _) = connect(&mut sim, 0, 1);
    let mut w = wr(1, SendOpcode::RdmaWrite, &dst, 200_000);
    w.sge = Sge {
        addr: part.as_ptr() as u64,
        len: 200_000,
        lkey: ext.lkey,
    };
    w.remote_addr = dst.addr + 100;
    w.rkey = dst.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].wc.status, WcStatus::Success);

    let mut t = sim.transport(1);
    let got = t.read_bytes(dst.addr + 100, 200_000).unwrap();
    assert_eq!(got, part);
    assert!(
        inside(&got, &data),
        "read back as a slice of the sender's block"
    );
    let mut copy = vec![0u8; 200_010];
    t.read_into(dst.addr + 95, &mut copy).unwrap();
    assert_eq!(&copy[..5], &[0; 5]);
    assert_eq!(&copy[5..200_005], &part[..]);
    // Lent with no copy, and the address is free again at once.
    let lease = t.lend(dst.addr + 100, 200_000).unwrap();
    assert!(inside(&lease, &data));
    assert_eq!(t.poll_returned(), Some(dst.addr + 100));
    assert_eq!(t.poll_returned(), None);
    // A range only partly held by reference is not lent; it reads back gathered.
    assert!(t.lend(dst.addr + 99, 100).is_none());
    // Overwriting part of it replaces those bytes only.
    t.write(dst.addr + 150, &[&[0xAB; 10]]).unwrap();
    let mut want = part.to_vec();
    want[50..60].fill(0xAB);
    assert_eq!(t.read_bytes(dst.addr + 100, 200_000).unwrap(), want);
    assert!(t.lend(dst.addr + 100, 200_000).is_none());
    assert!(t.lend(dst.addr + 160, 1000).is_some());
}

#[test]
fn a_lossy_incast_from_application_memory_delivers_exact_bytes() {
    // 16 senders WRITE 100 KB each out of one shared block, PFC off and a 16 KiB-per-port
    // buffer: drops, go-back-N and timeouts resend from the block; what lands is exact.
    for seed in 1..=4 {
        let n = 16u32;
        let mut sim = Simulation::new(SimConfig {
            hosts: n + 1,
            switch_buffer_bytes: u64::from(n + 1) * 16 * 1024,
            seed,
            ..Default::default()
        })
        .unwrap();
        let data = block(2_000_000, seed);
        const W: usize = 100_000;
        let dst = sim
            .transport(n)
            .register_memory(u64::from(n) * W as u64)
            .unwrap();
        for h in 0..n {
            let ext = sim.transport(h).register_external(data.clone()).unwrap();
            let (qa, _) = connect(&mut sim, h, n);
            let off = h as usize * 77_777;
            let mut w = wr(u64::from(h), SendOpcode::RdmaWrite, &dst, W as u32);
            w.sge = Sge {
                addr: ext.addr + off as u64,
                len: W as u32,
                lkey: ext.lkey,
            };
            w.remote_addr = dst.addr + u64::from(h) * W as u64;
            w.rkey = dst.rkey;
            sim.transport(h).post_send(qa, &w).unwrap();
        }
        let seen = run(&mut sim);
        let st = sim.stats();
        assert!(
            st.drops > 0 && st.retransmitted_packets > 0,
            "seed {seed}: {st:?}"
        );
        assert!(seen.iter().all(|s| s.wc.status == WcStatus::Success));
        for h in 0..n as usize {
            let off = h * 77_777;
            let got = sim
                .transport(n)
                .read_bytes(dst.addr + (h * W) as u64, W)
                .unwrap();
            assert_eq!(got, data.slice(off..off + W), "seed {seed}, sender {h}");
        }
    }
}
