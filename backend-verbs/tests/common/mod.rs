//! Shared helpers: open the device (or report why the test skips), connect two transports
//! on it through loopback, and the conformance harness ([`harness`]).

#![allow(dead_code)]

use std::time::{Duration, Instant};
use xrdma::*;
use xrdma_verbs::{Device, DeviceConfig, TransportConfig, VerbsError, VerbsTransport};

pub mod harness;

/// The device from `XRDMA_VERBS_DEVICE` / `XRDMA_VERBS_GID_INDEX` (or the first one), or
/// `None` after printing `SKIP <test>: no RDMA device: <reason>`. Any error other than "no
/// device" fails.
pub fn device_or_skip(test: &str) -> Option<Device> {
    let cfg = DeviceConfig::from_env().unwrap();
    match Device::open(&cfg) {
        Ok(d) => {
            eprintln!(
                "{test}: on {} port {} (MTU {} B), GID {} = {}",
                d.name(),
                d.port().port,
                d.port().active_mtu_bytes(),
                d.gid().index,
                d.gid().addr()
            );
            Some(d)
        }
        Err(VerbsError::NoDevice { reason }) => {
            eprintln!("SKIP {test}: no RDMA device: {reason}");
            None
        }
        Err(e) => panic!("{test}: cannot open the RDMA device: {e}"),
    }
}

/// Two transports on one device, each with one QP connected to the other's, and a 1 MiB MR
/// each.
pub struct Pair {
    pub a: VerbsTransport,
    pub b: VerbsTransport,
    pub qa: QpNum,
    pub qb: QpNum,
    pub ma: MemoryRegion,
    pub mb: MemoryRegion,
}

pub const MR_BYTES: u64 = 1 << 20;

impl Pair {
    pub fn new(dev: &Device, cfg_a: TransportConfig, cfg_b: TransportConfig) -> Pair {
        let mut a = VerbsTransport::new(dev, cfg_a).unwrap();
        let mut b = VerbsTransport::new(dev, cfg_b).unwrap();
        let ma = a.register_memory(MR_BYTES).unwrap();
        let mb = b.register_memory(MR_BYTES).unwrap();
        let caps = QpCaps {
            max_send_wr: 64,
            max_recv_wr: 64,
            max_inline_data: 0,
        };
        let aa = a.create_qp(caps).unwrap();
        let ab = b.create_qp(caps).unwrap();
        a.connect_qp(aa.qpn, &ab).unwrap();
        b.connect_qp(ab.qpn, &aa).unwrap();
        Pair {
            a,
            b,
            qa: aa.qpn,
            qb: ab.qpn,
            ma,
            mb,
        }
    }
}

/// Poll `t` until `n` completions arrived or `limit` passed.
pub fn wait_wcs(t: &mut VerbsTransport, n: usize, limit: Duration) -> Vec<WorkCompletion> {
    let start = Instant::now();
    let mut out = Vec::new();
    while out.len() < n && start.elapsed() < limit {
        let want = n - out.len();
        t.poll_cq(&mut out, want);
    }
    out
}

/// Deterministic test bytes: byte i of message `salt` is `i·31 + salt (mod 256)`.
pub fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}
