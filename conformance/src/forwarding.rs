//! The check every transport wrapper must pass: with its interception neutral, each call of a
//! [`LocalMemory`] or [`Transport`] method reaches the wrapped transport with the same
//! arguments, and the wrapper answers what the wrapped transport answered.
//!
//! The wrapped transport is a [`Probe`]: every method records its [`Call`] in a [`CallLog`]
//! and answers a value made from its arguments that no provided or neutral answer (0, `None`,
//! nothing observed) matches. [`assert_forwards_every_call`] makes one call of every method
//! through the wrapper and compares both.
//!
//! The check cannot fall behind the traits: a method added to either trait must be implemented
//! by [`Probe`] (the traits provide no bodies), which records it as a new [`Call`]; that
//! variant must be performed by the check (its `match` is exhaustive) and sampled (the check
//! fails unless [`Call::samples`] holds [`METHODS`] different calls).

use bytes::Bytes;
use std::cell::RefCell;
use std::collections::HashSet;
use std::mem::discriminant;
use std::rc::Rc;
use xrdma::{
    Capabilities, ChainError, LocalMemory, MemoryRegion, QpAddress, QpCaps, QpNum, QpObservation,
    RcParams, RecvWr, SendOpcode, SendWr, Sge, Time, Transport, TransportError, WcOpcode, WcStatus,
    WorkCompletion,
};

/// Defines [`Call`] and counts its variants into [`METHODS`], so the count cannot be stale.
macro_rules! calls {
    ($($(#[$doc:meta])* $variant:ident $(($($arg:ty),*))?,)*) => {
        /// One call of a [`LocalMemory`] or [`Transport`] method, with its arguments (a
        /// buffer the method fills is given by its length, a slice by its contents).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Call {
            $($(#[$doc])* $variant $(($($arg),*))?,)*
        }

        /// How many methods [`LocalMemory`] and [`Transport`] have together: one per
        /// variant of [`Call`].
        pub const METHODS: usize = [$(stringify!($variant)),*].len();
    };
}

calls! {
    /// [`LocalMemory::read_into`]: address, length of `out`.
    ReadInto(u64, usize),
    /// [`LocalMemory::read_bytes`]: address, length.
    ReadBytes(u64, usize),
    /// [`LocalMemory::lend`]: address, length.
    Lend(u64, usize),
    /// [`LocalMemory::poll_returned`].
    PollReturned,
    /// [`LocalMemory::registered_lkey`]: the bytes.
    RegisteredLkey(Vec<u8>),
    /// [`LocalMemory::send_buffer`]: length.
    SendBuffer(usize),
    /// [`LocalMemory::write`]: address, bytes.
    Write(u64, Vec<u8>),
    /// [`Transport::now`].
    Now,
    /// [`Transport::register_memory`]: length.
    RegisterMemory(u64),
    /// [`Transport::create_qp`]: capacities.
    CreateQp(QpCaps),
    /// [`Transport::connect_qp`]: QP, remote address.
    ConnectQp(QpNum, QpAddress),
    /// [`Transport::reset_qp`]: QP.
    ResetQp(QpNum),
    /// [`Transport::post_send`]: QP, WR.
    PostSend(QpNum, SendWr),
    /// [`Transport::post_send_chain`]: QP, WRs.
    PostSendChain(QpNum, Vec<SendWr>),
    /// [`Transport::post_recv`]: QP, WR.
    PostRecv(QpNum, RecvWr),
    /// [`Transport::poll_cq`]: `max`.
    PollCq(usize),
    /// [`Transport::poll_congestion`].
    PollCongestion,
    /// [`Transport::poll_port_cnps`]: `now`.
    PollPortCnps(Time),
    /// [`Transport::rc_params`].
    RcParams,
    /// [`Transport::capabilities`].
    Capabilities,
    /// [`Transport::observe_qp`]: QP.
    ObserveQp(QpNum),
}

impl Call {
    /// One call of every method, with arguments no neutral value matches.
    pub fn samples() -> Vec<Call> {
        let sge = Sge {
            addr: 0x5000_0040,
            len: 96,
            lkey: 0x51,
        };
        let wr = |wr_id| SendWr {
            wr_id,
            opcode: SendOpcode::RdmaWriteWithImm,
            sge,
            imm: 0xfeed,
            remote_addr: 0x6000_0080,
            rkey: 0x61,
            signaled: wr_id % 2 == 1,
        };
        vec![
            Call::ReadInto(0x5000_0010, 5),
            Call::ReadBytes(0x5000_0020, 6),
            Call::Lend(0x5000_0028, 7),
            Call::PollReturned,
            Call::RegisteredLkey(vec![2, 7, 1, 8]),
            Call::SendBuffer(29),
            Call::Write(0x5000_0030, vec![3, 1, 4, 1, 5]),
            Call::Now,
            Call::RegisterMemory(12_345),
            Call::CreateQp(QpCaps {
                max_send_wr: 33,
                max_recv_wr: 44,
                max_inline_data: 55,
            }),
            Call::ConnectQp(
                0x107,
                QpAddress {
                    gid: [9; 16],
                    lid: 4,
                    qpn: 0x208,
                    psn: 0x00ab_cdef,
                },
            ),
            Call::ResetQp(0x109),
            Call::PostSend(0x10a, wr(71)),
            Call::PostSendChain(0x10b, vec![wr(72), wr(73), wr(74)]),
            Call::PostRecv(0x10c, RecvWr { wr_id: 75, sge }),
            Call::PollCq(3),
            Call::PollCongestion,
            Call::PollPortCnps(Time::from_ps(86_000)),
            Call::RcParams,
            Call::Capabilities,
            Call::ObserveQp(0x10d),
        ]
    }

    /// Makes this call on `t`; returns what it answered, with what it put in an output
    /// buffer, as text.
    pub fn perform<T: Transport + ?Sized>(&self, t: &mut T) -> String {
        match self {
            Call::ReadInto(addr, len) => {
                let mut out = vec![0; *len];
                let r = t.read_into(*addr, &mut out);
                format!("{r:?} {out:?}")
            }
            Call::ReadBytes(addr, len) => format!("{:?}", t.read_bytes(*addr, *len)),
            Call::Lend(addr, len) => format!("{:?}", t.lend(*addr, *len)),
            Call::PollReturned => format!("{:?}", t.poll_returned()),
            Call::RegisteredLkey(data) => format!("{:?}", t.registered_lkey(data)),
            Call::SendBuffer(len) => format!("{:?}", t.send_buffer(*len).map(|b| b.freeze())),
            Call::Write(addr, data) => format!("{:?}", t.write(*addr, &[data])),
            Call::Now => format!("{:?}", t.now()),
            Call::RegisterMemory(len) => format!("{:?}", t.register_memory(*len)),
            Call::CreateQp(caps) => format!("{:?}", t.create_qp(*caps)),
            Call::ConnectQp(qpn, remote) => format!("{:?}", t.connect_qp(*qpn, remote)),
            Call::ResetQp(qpn) => format!("{:?}", t.reset_qp(*qpn)),
            Call::PostSend(qpn, wr) => format!("{:?}", t.post_send(*qpn, wr)),
            Call::PostSendChain(qpn, wrs) => format!("{:?}", t.post_send_chain(*qpn, wrs)),
            Call::PostRecv(qpn, wr) => format!("{:?}", t.post_recv(*qpn, wr)),
            Call::PollCq(max) => {
                let mut out = Vec::new();
                let n = t.poll_cq(&mut out, *max);
                format!("{n} {out:?}")
            }
            Call::PollCongestion => format!("{:?}", t.poll_congestion()),
            Call::PollPortCnps(now) => format!("{}", t.poll_port_cnps(*now)),
            Call::RcParams => format!("{:?}", t.rc_params()),
            Call::Capabilities => format!("{:?}", t.capabilities()),
            Call::ObserveQp(qpn) => format!("{:?}", t.observe_qp(*qpn)),
        }
    }
}

/// The calls a [`Probe`] received, shared with whoever checks them while a wrapper holds the
/// probe.
#[derive(Clone, Debug, Default)]
pub struct CallLog(Rc<RefCell<Vec<Call>>>);

impl CallLog {
    /// The calls received since the last `take`, in order.
    pub fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.0.borrow_mut())
    }

    fn push(&self, call: Call) {
        self.0.borrow_mut().push(call);
    }
}

/// A transport that records every call in its [`CallLog`] and answers values made from the
/// arguments, none of them neutral: posts succeed, polls return something, every
/// observation is known.
#[derive(Debug, Default)]
pub struct Probe {
    log: CallLog,
}

impl Probe {
    /// The log this probe records its calls in.
    pub fn log(&self) -> CallLog {
        self.log.clone()
    }
}

impl LocalMemory for Probe {
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
        self.log.push(Call::ReadInto(addr, out.len()));
        for (i, b) in out.iter_mut().enumerate() {
            *b = (addr as u8).wrapping_add(i as u8);
        }
        Ok(())
    }
    /// Other bytes than [`Probe::read_into`] gives, so a copy made through it shows.
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
        self.log.push(Call::ReadBytes(addr, len));
        Ok((0..len).map(|i| 0xb0 ^ (addr as u8) ^ i as u8).collect())
    }
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        self.log.push(Call::Write(addr, parts.concat()));
        Ok(())
    }
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes> {
        self.log.push(Call::Lend(addr, len));
        Some((0..len).map(|i| 0xc0 ^ (addr as u8) ^ i as u8).collect())
    }
    fn poll_returned(&mut self) -> Option<u64> {
        self.log.push(Call::PollReturned);
        Some(0x5000_0099)
    }
    fn registered_lkey(&self, data: &[u8]) -> Option<u32> {
        self.log.push(Call::RegisteredLkey(data.to_vec()));
        Some(0x7100 + data.len() as u32)
    }
    fn send_buffer(&mut self, len: usize) -> Option<xrdma::SendBuffer> {
        self.log.push(Call::SendBuffer(len));
        let mut b = xrdma::SendBuffer::new(len);
        for (i, x) in b.iter_mut().enumerate() {
            *x = 0xd0 ^ i as u8;
        }
        Some(b)
    }
}

impl Transport for Probe {
    fn now(&self) -> Time {
        self.log.push(Call::Now);
        Time::from_ps(0x7_0000)
    }
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        self.log.push(Call::RegisterMemory(len));
        Ok(MemoryRegion {
            addr: 0x5000_0000,
            len,
            lkey: 0x51,
            rkey: 0x52,
        })
    }
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        self.log.push(Call::CreateQp(caps));
        Ok(QpAddress {
            gid: [7; 16],
            lid: 3,
            qpn: 0x300 + caps.max_send_wr,
            psn: 0x1234,
        })
    }
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        self.log.push(Call::ConnectQp(qpn, *remote));
        Ok(())
    }
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        self.log.push(Call::ResetQp(qpn));
        Ok(QpAddress {
            gid: [7; 16],
            lid: 3,
            qpn,
            psn: 0x4321,
        })
    }
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        self.log.push(Call::PostSend(qpn, *wr));
        Ok(())
    }
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        self.log.push(Call::PostSendChain(qpn, wrs.to_vec()));
        Ok(())
    }
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        self.log.push(Call::PostRecv(qpn, *wr));
        Ok(())
    }
    /// Two completions (at most `max`): a receive with immediate data and a failed send.
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        self.log.push(Call::PollCq(max));
        let wcs = [
            WorkCompletion {
                wr_id: 0x900,
                status: WcStatus::Success,
                opcode: WcOpcode::RecvRdmaWithImm,
                qp_num: 0x10e,
                byte_len: 777,
                imm: Some(0xabc),
            },
            WorkCompletion {
                wr_id: 0x901,
                status: WcStatus::RemAccessErr,
                opcode: WcOpcode::RdmaWrite,
                qp_num: 0x10f,
                byte_len: 0,
                imm: None,
            },
        ];
        let n = max.min(wcs.len());
        out.extend_from_slice(&wcs[..n]);
        n
    }
    fn poll_congestion(&mut self) -> Option<QpNum> {
        self.log.push(Call::PollCongestion);
        Some(0x5eed)
    }
    fn poll_port_cnps(&mut self, now: Time) -> u64 {
        self.log.push(Call::PollPortCnps(now));
        1 + now.as_ps() % 1000
    }
    fn rc_params(&self) -> RcParams {
        self.log.push(Call::RcParams);
        RcParams {
            local_ack_timeout: 17,
            retry_cnt: 5,
            rnr_retry: 3,
            min_rnr_timer: 9,
            path_mtu: 1024,
        }
    }
    fn capabilities(&self) -> Capabilities {
        self.log.push(Call::Capabilities);
        let mut c = Capabilities::NONE;
        c.cnp_per_port = true;
        c.ecn_marks = true;
        c.port_counters = true;
        c
    }
    fn observe_qp(&self, qpn: QpNum) -> QpObservation {
        self.log.push(Call::ObserveQp(qpn));
        QpObservation {
            state: Some("RTS"),
            retransmitted_packets: Some(u64::from(qpn) + 1),
            rnr_retries: Some(6),
        }
    }
}

/// Makes every call of [`Call::samples`] on `wrapper`, a wrapper of the [`Probe`] whose log
/// is `log`, with its interception neutral (no faults, nothing held or charged), and panics
/// unless each call reached the probe as it was made, and only it, and the wrapper answered
/// what a bare probe answers.
pub fn assert_forwards_every_call<T: Transport + ?Sized>(wrapper: &mut T, log: &CallLog) {
    let samples = Call::samples();
    let methods: HashSet<_> = samples.iter().map(discriminant).collect();
    assert_eq!(methods.len(), METHODS, "Call::samples misses a method");
    log.take();
    for call in samples {
        let expected = call.perform(&mut Probe::default());
        let answer = call.perform(wrapper);
        assert_eq!(
            log.take(),
            std::slice::from_ref(&call),
            "{call:?}: the wrapped transport did not receive exactly this call"
        );
        assert_eq!(
            answer, expected,
            "{call:?}: the wrapper did not answer what the wrapped transport answered"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_and_a_borrow_of_it_answer_alike() {
        let mut probe = Probe::default();
        let log = probe.log();
        assert_forwards_every_call(&mut &mut probe, &log);
    }

    #[test]
    fn no_answer_of_the_probe_is_a_neutral_one() {
        let mut probe = Probe::default();
        let mut out = Vec::new();
        assert_ne!(probe.poll_port_cnps(Time::ZERO), 0);
        assert_ne!(probe.observe_qp(1), QpObservation::default());
        assert!(probe.poll_congestion().is_some());
        assert_ne!(probe.poll_cq(&mut out, 8), 0);
        assert_ne!(probe.capabilities(), Capabilities::NONE);
        assert_ne!(probe.rc_params(), RcParams::default());
        let mut copied = vec![0; 4];
        probe.read_into(8, &mut copied).unwrap();
        assert_ne!(probe.read_bytes(8, 4).unwrap(), copied);
    }
}
