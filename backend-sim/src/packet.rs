//! Packets on the wire, their pool, and 24-bit PSN arithmetic.

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PktKind {
    /// A SEND or RDMA WRITE packet (see [`MsgOp`]).
    Data,
    /// An RDMA READ request (carries RETH; consumes `npkts` PSNs).
    ReadReq,
    /// An RDMA READ response packet carrying data.
    ReadResp,
    /// A (cumulative) ACK.
    Ack,
    /// A NAK with a [`NakCode`].
    Nak,
    /// A RoCEv2 congestion notification packet.
    Cnp,
    /// PFC PAUSE (XOFF), sent by the switch to a host.
    Pause,
    /// PFC PAUSE with quanta 0 (XON), sent by the switch to a host.
    Resume,
    /// A TCP segment between two kernel sockets (`crate::tcp`): `src_qpn`/`dst_qpn` are the
    /// socket ids, `src_addr` the sequence number, `remote_addr` the ACK, `msg_len` the window
    /// and `payload` the segment's bytes.
    Tcp,
}

/// The message operation a data packet belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MsgOp {
    Send,
    SendImm,
    Write,
    WriteImm,
}

/// NAK syndromes (IB Spec 9.7.5.2.8 / 9.7.5.2.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NakCode {
    /// Receiver not ready: no receive WR posted.
    Rnr,
    /// Remote access error: bad R_Key or range.
    RemAccess,
    /// Invalid request (here: a SEND longer than the receive buffer).
    InvReq,
    /// PSN sequence error: a request packet arrived ahead of the expected PSN, which the
    /// NAK carries (IB Spec 9.7.5.2.4).
    SeqErr,
}

/// Packet flag: first packet of a message.
pub(crate) const F_FIRST: u8 = 1;
/// Packet flag: last packet of a message.
pub(crate) const F_LAST: u8 = 2;
/// Packet flag: ECN Congestion Experienced (set by the switch).
pub(crate) const F_CE: u8 = 4;
/// Packet flag: corrupted on a wire (an injected fault); the destination NIC drops it for a
/// bad ICRC.
pub(crate) const F_CORRUPT: u8 = 8;
/// Packet flag: ECN-capable transport (a DCTCP data segment; RoCE packets are marked by kind).
pub(crate) const F_ECT: u8 = 16;
/// Packet flag: TCP ECN-Echo.
pub(crate) const F_ECE: u8 = 32;
/// Packet flag: TCP Congestion Window Reduced.
pub(crate) const F_CWR: u8 = 64;

/// One packet. Fields unused by a kind are 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packet {
    pub kind: PktKind,
    pub op: MsgOp,
    pub nak: NakCode,
    pub flags: u8,
    pub src_host: u32,
    pub dst_host: u32,
    pub src_qpn: u32,
    pub dst_qpn: u32,
    pub psn: u32,
    /// Payload bytes carried.
    pub payload: u32,
    /// Bytes on the wire (payload + headers + preamble + IFG).
    pub wire: u32,
    /// Switch port the packet entered on (for PFC ingress accounting).
    pub ingress: u32,
    pub imm: u32,
    /// Total message length (Data), bytes to read (ReadReq).
    pub msg_len: u32,
    /// Where the payload bytes live on `src_host` (read at delivery time).
    pub src_addr: u64,
    /// Destination virtual address on `dst_host` for WRITE packets; the address to read for
    /// a READ request.
    pub remote_addr: u64,
    pub rkey: u32,
}

impl Packet {
    pub(crate) fn control(kind: PktKind, src_host: u32, dst_host: u32, wire: u32) -> Packet {
        Packet {
            kind,
            op: MsgOp::Send,
            nak: NakCode::Rnr,
            flags: 0,
            src_host,
            dst_host,
            src_qpn: 0,
            dst_qpn: 0,
            psn: 0,
            payload: 0,
            wire,
            ingress: src_host,
            imm: 0,
            msg_len: 0,
            src_addr: 0,
            remote_addr: 0,
            rkey: 0,
        }
    }

    #[inline]
    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Packets in flight, stored by index with a free list (no allocation per packet once warm).
#[derive(Debug, Default)]
pub(crate) struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    #[inline]
    pub(crate) fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            i
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as u32
        }
    }

    #[inline]
    pub(crate) fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    #[inline]
    pub(crate) fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize]
    }

    /// Packets currently allocated.
    pub(crate) fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

/// PSNs are 24-bit (IB Spec 9.7.1).
pub(crate) const PSN_MASK: u32 = 0x00FF_FFFF;

/// `psn + n` modulo 2^24.
#[inline]
pub(crate) fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// Signed distance `a − b` in the 24-bit PSN space, in [−2^23, 2^23).
#[inline]
pub(crate) fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    ((d << 8) as i32) >> 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_wraps_at_24_bits() {
        assert_eq!(psn_add(0xFF_FFFF, 1), 0);
        assert_eq!(psn_add(0xFF_FFFE, 5), 3);
        assert_eq!(psn_diff(3, 0xFF_FFFE), 5);
        assert_eq!(psn_diff(0xFF_FFFE, 3), -5);
        assert_eq!(psn_diff(7, 7), 0);
    }

    #[test]
    fn pool_reuses_slots() {
        let mut pool = PacketPool::default();
        let a = pool.alloc(Packet::control(PktKind::Ack, 0, 1, 86));
        let b = pool.alloc(Packet::control(PktKind::Cnp, 0, 1, 98));
        pool.release(a);
        let c = pool.alloc(Packet::control(PktKind::Pause, 2, 3, 84));
        assert_eq!(c, a);
        assert_eq!(pool.get(c).kind, PktKind::Pause);
        assert_eq!(pool.get(b).wire, 98);
        assert_eq!(pool.live(), 2);
    }
}
