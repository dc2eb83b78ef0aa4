//! Two [`TcpConn`]s against each other over an in-test wire: a fixed one-way delay, an
//! optional serialization rate, FIFO per direction, and a filter that drops or CE-marks
//! chosen segments. Host A sends `total` bytes to host B; B's application reads what
//! arrives (from `read_from` on).

use super::{Segment, TcpConfig, TcpConn};
use std::collections::VecDeque;
use xrdma::{Span, Time};

mod dctcp;

const A: usize = 0;
const B: usize = 1;
/// Header bytes per segment on a rate-limited wire (IPv4 + TCP).
const HEADER: u64 = 40;
const NEVER: Time = Time::MAX;

fn us(n: u64) -> Span {
    Span::from_us(n)
}
fn ms(n: u64) -> Span {
    Span::from_ms(n)
}
fn at(s: Span) -> Time {
    Time::ZERO + s
}

/// Linux-like settings: init cwnd 10, RTO min 200 ms / initial 1 s / max 120 s, delayed ACK
/// 40 ms every second segment, 1 MiB buffers, no DCTCP.
fn cfg(mss: u32) -> TcpConfig {
    TcpConfig {
        mss,
        init_cwnd: 10,
        rto_min: ms(200),
        rto_initial: ms(1000),
        rto_max: ms(120_000),
        delayed_ack: ms(40),
        ack_every: 2,
        rcv_buf: 1 << 20,
        snd_buf: 1 << 20,
        dctcp: false,
        dctcp_g: 1.0 / 16.0,
    }
}

/// The receiver ACK policies swept: (delayed_ack, ack_every).
const ACK_MODES: [(Span, u32); 3] = [
    (Span::ZERO, 1),
    (Span::from_ms(40), 2),
    (Span::from_ms(40), 1),
];

fn with_acks(mut c: TcpConfig, (delayed_ack, ack_every): (Span, u32)) -> TcpConfig {
    c.delayed_ack = delayed_ack;
    c.ack_every = ack_every;
    c
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Deliver,
    Drop,
    Mark,
}

/// One segment a host handed to the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sent {
    at: Time,
    from: usize,
    seg: Segment,
    fate: Fate,
}

type Filter = Box<dyn FnMut(usize, &Segment) -> Fate>;

struct Net {
    ends: [TcpConn; 2],
    rcv_buf_b: u64,
    now: Time,
    delay: Span,
    rate_bps: u64,
    link_free: [Time; 2],
    wire: [VecDeque<(Time, Segment)>; 2],
    filter: Filter,
    log: Vec<Sent>,
    total: u64,
    read_from: Time,
    /// A's (time, cwnd, α) after every event, when enabled.
    trace: Option<Vec<(Time, u64, f64)>>,
    delivered_at: Option<Time>,
    acked_at: Option<Time>,
}

impl Net {
    fn new(a: TcpConfig, b: TcpConfig, delay: Span, total: u64) -> Net {
        Net {
            ends: [TcpConn::new(a), TcpConn::new(b)],
            rcv_buf_b: b.rcv_buf,
            now: Time::ZERO,
            delay,
            rate_bps: 0,
            link_free: [Time::ZERO; 2],
            wire: [VecDeque::new(), VecDeque::new()],
            filter: Box::new(|_, _| Fate::Deliver),
            log: Vec::new(),
            total,
            read_from: Time::ZERO,
            trace: None,
            delivered_at: None,
            acked_at: None,
        }
    }

    fn filter(mut self, f: impl FnMut(usize, &Segment) -> Fate + 'static) -> Net {
        self.filter = Box::new(f);
        self
    }

    /// Runs events up to `until` (or until nothing is scheduled).
    fn run(&mut self, until: Time) -> &mut Net {
        for _ in 0..10_000_000 {
            self.apps_and_transmit();
            let candidates = [
                self.wire[A].front().map(|w| w.0),
                self.wire[B].front().map(|w| w.0),
                self.ends[A].next_timeout(),
                self.ends[B].next_timeout(),
                (self.now < self.read_from).then_some(self.read_from),
            ];
            let next = candidates
                .iter()
                .enumerate()
                .filter_map(|(k, t)| Some((*t.as_ref()?, k)));
            let Some((t, k)) = next.min() else {
                return self;
            };
            if t > until {
                return self;
            }
            assert!(t >= self.now, "event at {t} before now {}", self.now);
            self.now = t;
            match k {
                0 | 1 => {
                    let (_, seg) = self.wire[k].pop_front().unwrap();
                    self.ends[1 - k].on_segment(t, &seg);
                }
                2 | 3 => self.ends[k - 2].on_timeout(t),
                _ => {}
            }
        }
        panic!("no quiescence after 10^7 events");
    }

    fn run_all(&mut self) -> &mut Net {
        self.run(NEVER)
    }

    fn apps_and_transmit(&mut self) {
        let a = &mut self.ends[A];
        let n = (self.total - a.written()).min(a.send_space());
        if n > 0 {
            a.write(n);
        }
        if self.now >= self.read_from {
            let upto = self.ends[B].rcv_nxt();
            self.ends[B].read(upto);
        }
        for from in [A, B] {
            while let Some(mut seg) = self.ends[from].poll_transmit(self.now) {
                let fate = (self.filter)(from, &seg);
                seg.ce |= fate == Fate::Mark;
                self.log.push(Sent {
                    at: self.now,
                    from,
                    seg,
                    fate,
                });
                if fate != Fate::Drop {
                    let bytes = u64::from(seg.len) + HEADER;
                    let ser = match self.rate_bps {
                        0 => Span::ZERO,
                        r => Span::serialization(bytes, r),
                    };
                    self.link_free[from] = self.now.max(self.link_free[from]) + ser;
                    self.wire[from].push_back((self.link_free[from] + self.delay, seg));
                }
            }
        }
        let (a, b) = (&self.ends[A], &self.ends[B]);
        assert!(a.snd_una() <= b.rcv_nxt() && b.rcv_nxt() <= a.written());
        assert!(b.read_to() <= b.rcv_nxt() && b.rcv_nxt() - b.read_to() <= self.rcv_buf_b);
        assert_eq!(
            (a.rcv_nxt(), b.written(), b.counters().segments_sent),
            (0, 0, 0)
        );
        if b.rcv_nxt() == self.total && self.delivered_at.is_none() {
            self.delivered_at = Some(self.now);
        }
        if a.snd_una() == self.total && self.acked_at.is_none() {
            self.acked_at = Some(self.now);
        }
        let (now, cwnd, alpha) = (self.now, a.cwnd(), a.dctcp_alpha());
        if let Some(trace) = &mut self.trace {
            trace.push((now, cwnd, alpha));
        }
    }

    fn data_from_a(&self) -> impl Iterator<Item = &Sent> {
        self.log.iter().filter(|s| s.from == A && s.seg.len > 0)
    }

    fn acks_from_b(&self) -> impl Iterator<Item = &Sent> {
        self.log.iter().filter(|s| s.from == B)
    }

    /// When A sent a segment starting at `seq`, every copy.
    fn sends_of(&self, seq: u64) -> Vec<Time> {
        self.data_from_a()
            .filter(|s| s.seg.seq == seq)
            .map(|s| s.at)
            .collect()
    }

    /// Everything written arrived, was read and ACKed; the wire log agrees with the counters.
    fn assert_complete(&self) {
        let (a, b) = (&self.ends[A], &self.ends[B]);
        assert_eq!(
            (b.rcv_nxt(), b.read_to(), a.snd_una()),
            (self.total, self.total, self.total)
        );
        assert!(self.delivered_at.is_some() && self.acked_at.is_some());
        let c = a.counters();
        let data: Vec<_> = self.data_from_a().collect();
        assert_eq!(c.segments_sent, data.len() as u64);
        assert_eq!(
            c.bytes_sent,
            data.iter().map(|s| u64::from(s.seg.len)).sum::<u64>()
        );
        let mut max_end = 0;
        let mut rtx = 0;
        for s in &data {
            rtx += u64::from(s.seg.seq < max_end);
            max_end = max_end.max(s.seg.seq + u64::from(s.seg.len));
        }
        assert_eq!(c.retransmitted_segments, rtx);
        assert!(c.fast_retransmits <= c.retransmitted_segments);
        assert_eq!(b.counters().acks_sent, self.acks_from_b().count() as u64);
        let marked = data.iter().filter(|s| s.fate == Fate::Mark).count() as u64;
        assert_eq!(b.counters().ce_received, marked);
        assert_eq!(a.next_timeout(), None, "a timer is left armed");
    }
}

/// Drops the first `copies` transmissions of A's segment at `seq`.
fn drop_copies(seq: u64, copies: usize) -> impl FnMut(usize, &Segment) -> Fate {
    let mut dropped = 0;
    move |from, seg| {
        if from == A && seg.len > 0 && seg.seq == seq && dropped < copies {
            dropped += 1;
            Fate::Drop
        } else {
            Fate::Deliver
        }
    }
}

/// A deterministic xorshift64 stream for the sweeps' pseudo-random choices.
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[test]
fn bulk_transfer_delivers_every_byte_once() {
    for mss in [536, 1460, 8960] {
        let m = u64::from(mss);
        for total in [1, 100, m - 1, m, m + 1, 10 * m + 7, 1_000_003] {
            for acks in ACK_MODES {
                for (rate, snd_buf) in [(0, 1 << 20), (10_000_000_000, 65_536), (0, 3 * m + 1)] {
                    let mut c = with_acks(cfg(mss), acks);
                    c.snd_buf = snd_buf;
                    let mut net = Net::new(c, c, us(10), total);
                    net.rate_bps = rate;
                    net.run_all().assert_complete();
                    let ctx = format!("mss {mss} total {total} acks {acks:?} rate {rate}");
                    let a = net.ends[A].counters();
                    assert_eq!(a.bytes_sent, total, "{ctx}");
                    assert_eq!(a.retransmitted_segments + a.timeouts, 0, "{ctx}");
                    // In order and exactly once: each segment starts where the previous ended.
                    let mut next = 0;
                    for s in net.data_from_a() {
                        assert_eq!(s.seg.seq, next, "{ctx}");
                        assert!(s.seg.len <= mss && !s.seg.ect && !s.seg.cwr, "{ctx}");
                        next += u64::from(s.seg.len);
                    }
                    // An ACK goes when `ack_every` segments' worth is un-ACKed, so it covers less
                    // than one segment more (exactly `ack_every` full segments, if all are).
                    let k = u64::from(acks.1);
                    let mut acked = 0;
                    for s in net.acks_from_b() {
                        let covered = s.seg.ack - acked;
                        assert!(covered < (k + 1) * m, "{ctx}: an ACK covers {covered}");
                        if snd_buf == 1 << 20 && s.seg.ack < total {
                            assert_eq!(covered, k * m, "{ctx}");
                        }
                        acked = s.seg.ack;
                    }
                }
            }
        }
    }
}

#[test]
fn slow_start_doubles_cwnd_each_rtt() {
    for init in [2, 4, 10] {
        for acks in ACK_MODES {
            for delay in [us(5), us(50)] {
                let mut c = with_acks(cfg(1460), acks);
                c.init_cwnd = init;
                c.rcv_buf = 1 << 30;
                c.snd_buf = 1 << 30;
                let mut net = Net::new(c, c, delay, 1 << 28);
                net.trace = Some(Vec::new());
                let rtt = delay * 2;
                net.run(at(rtt * 8));
                let trace = net.trace.as_ref().unwrap();
                for k in 0..=8u32 {
                    let (_, cwnd, _) = *trace
                        .iter()
                        .rev()
                        .find(|e| e.0 <= at(rtt * k as u64))
                        .unwrap();
                    assert_eq!(
                        cwnd,
                        (1460 * u64::from(init)) << k,
                        "init {init} {acks:?} RTT {k}"
                    );
                }
                assert_eq!(net.ends[A].ssthresh(), u64::MAX);
            }
        }
    }
}

#[test]
fn a_single_drop_is_repaired_by_fast_retransmit() {
    let m = 1460;
    for n in [5, 20, 300] {
        // Four segments follow the hole: with delayed ACKs the first ACK after it may still
        // advance snd_una (it ACKs the segment before the hole) and is no duplicate.
        for p in [0, 1, 2, n / 2, n - 5].into_iter().filter(|&p| p <= n - 5) {
            for acks in ACK_MODES {
                for rate in [0, 10_000_000_000] {
                    let c = with_acks(cfg(m as u32), acks);
                    let mut net = Net::new(c, c, us(10), n * m).filter(drop_copies(p * m, 1));
                    net.rate_bps = rate;
                    net.run_all().assert_complete();
                    let ctx = format!("{n} segments, drop {p}, {acks:?}, rate {rate}");
                    let a = net.ends[A].counters();
                    assert_eq!(
                        (a.fast_retransmits, a.retransmitted_segments),
                        (1, 1),
                        "{ctx}"
                    );
                    assert_eq!(a.timeouts, 0, "{ctx}");
                    assert!(net.delivered_at.unwrap() < at(ms(200)), "{ctx}");
                    assert!(net.ends[A].ssthresh() >= 2 * m, "{ctx}");
                    // The retransmission follows the third duplicate ACK.
                    let rtx = net.sends_of(p * m)[1];
                    let dups = net
                        .acks_from_b()
                        .filter(|s| s.seg.ack == p * m && s.at < rtx);
                    assert!(dups.count() >= 3, "{ctx}");
                }
            }
        }
    }
}

#[test]
fn newreno_repairs_several_holes_in_one_window_one_per_rtt() {
    let m = 1460;
    for holes in [2, 3, 5] {
        for gap in [1, 3, 7] {
            for acks in ACK_MODES {
                let lost: Vec<u64> = (0..holes).map(|i| (200 + i * gap) * m).collect();
                let to_drop = lost.clone();
                let mut dropped = Vec::new();
                let filter = move |from, seg: &Segment| {
                    if from == A && to_drop.contains(&seg.seq) && !dropped.contains(&seg.seq) {
                        dropped.push(seg.seq);
                        return Fate::Drop;
                    }
                    Fate::Deliver
                };
                let c = with_acks(cfg(m as u32), acks);
                let mut net = Net::new(c, c, us(10), 400 * m).filter(filter);
                net.run_all().assert_complete();
                let ctx = format!("{holes} holes {gap} apart, {acks:?}");
                let a = net.ends[A].counters();
                assert_eq!((a.fast_retransmits, a.timeouts), (1, 0), "{ctx}");
                assert_eq!(a.retransmitted_segments, holes, "{ctx}");
                // The first hole on the third duplicate ACK, each next one a partial ACK
                // (one RTT) later.
                let rtx: Vec<Time> = lost.iter().map(|&seq| net.sends_of(seq)[1]).collect();
                for w in rtx.windows(2) {
                    assert_eq!(w[1] - w[0], us(20), "{ctx}: {rtx:?}");
                }
            }
        }
    }
}

#[test]
fn a_long_newreno_recovery_ends_in_one_timeout_and_go_back_n() {
    // The first flight (30 segments) sets SRTT = 200 µs and RTO = rto_min = 1 ms; then the
    // first `holes` segments of the second flight are lost. NewReno repairs one per RTT, but
    // only the first partial ACK restarts the timer ("Impatient", RFC 6582 §3.2 step 4), so
    // with more than 6 holes the timer fires, once, and go-back-N resends the rest.
    let m = 1460;
    for holes in [3, 4, 5, 8, 12, 20] {
        // (A delayed ACK longer than the RTO would add spurious timeouts.)
        for acks in [(Span::ZERO, 1), (us(250), 2)] {
            let mut c = with_acks(cfg(m as u32), acks);
            (c.rto_min, c.init_cwnd) = (ms(1), 30);
            let mut first_copy = vec![true; holes];
            let filter = move |from, seg: &Segment| {
                let i = (seg.seq / m) as usize;
                let lost = (30..30 + holes).contains(&i) && from == A && seg.len > 0;
                if lost && std::mem::take(&mut first_copy[i - 30]) {
                    return Fate::Drop;
                }
                Fate::Deliver
            };
            let mut net = Net::new(c, c, us(100), 150 * m).filter(filter);
            net.run_all().assert_complete();
            let a = net.ends[A].counters();
            let ctx = format!("{holes} holes, {acks:?}");
            assert_eq!(a.fast_retransmits, 1, "{ctx}");
            assert_eq!(a.timeouts, u64::from(holes > 6), "{ctx}");
            assert!(net.delivered_at.unwrap() < at(ms(5)), "{ctx}");
        }
    }
}

#[test]
fn tail_loss_is_repaired_by_rto_of_rto_min() {
    let m = 1460;
    for rto_min in [ms(1), ms(5), ms(200)] {
        for n in [2, 10, 100] {
            // A delayed ACK longer than the RTO would time out spuriously.
            for acks in [(Span::ZERO, 1), (rto_min / 4, 2), (rto_min / 4, 1)] {
                let mut c = with_acks(cfg(m as u32), acks);
                c.rto_min = rto_min;
                let last = (n - 1) * m;
                let mut lossy = Net::new(c, c, us(10), n * m).filter(drop_copies(last, 1));
                lossy.run_all().assert_complete();
                let ctx = format!("rto_min {rto_min}, {n} segments, {acks:?}");
                let a = lossy.ends[A].counters();
                assert_eq!(
                    (a.timeouts, a.fast_retransmits, a.retransmitted_segments),
                    (1, 0, 1)
                );
                let sends = lossy.sends_of(last);
                assert!(sends[1] - sends[0] >= rto_min, "{ctx}: {sends:?}");
                if acks.0 == Span::ZERO {
                    // RTO = rto_min (SRTT ≈ 20 µs), started at the last ACK before the loss,
                    // which reaches A at the same time with or without the loss.
                    let mut clean = Net::new(c, c, us(10), n * m);
                    clean.run_all();
                    let late = lossy.delivered_at.unwrap() - clean.delivered_at.unwrap();
                    assert!(late >= rto_min && late <= rto_min + us(20), "{ctx}: {late}");
                }
            }
        }
    }
    // With no RTT sample yet, the first timeout is rto_initial.
    for rto_initial in [ms(3), ms(1000)] {
        let mut c = cfg(1460);
        c.rto_initial = rto_initial;
        c.rto_min = ms(1);
        let mut net = Net::new(c, c, us(10), 100).filter(drop_copies(0, 1));
        net.run_all().assert_complete();
        assert_eq!(net.sends_of(0)[1], at(rto_initial));
    }
}

#[test]
fn rto_backoff_doubles_up_to_rto_max() {
    let m = 1460;
    for (rto_min, rto_max) in [(ms(10), ms(50)), (ms(200), ms(120_000))] {
        for drops in 1..=6 {
            let mut c = with_acks(cfg(m as u32), (Span::ZERO, 1));
            (c.rto_min, c.rto_max) = (rto_min, rto_max);
            let last = 9 * m;
            let mut net = Net::new(c, c, us(10), 10 * m).filter(drop_copies(last, drops));
            net.run_all().assert_complete();
            assert_eq!(net.ends[A].counters().timeouts, drops as u64);
            let sends = net.sends_of(last);
            assert_eq!(sends.len(), drops + 1);
            for i in 1..drops {
                let backed_off = (rto_min * (1 << i)).min(rto_max);
                assert_eq!(
                    sends[i + 1] - sends[i],
                    backed_off,
                    "drops {drops}, gap {i}"
                );
            }
            // Karn: the backoff stays until a segment sent once is ACKed.
            assert_eq!(net.ends[A].rto(), (rto_min * (1 << drops)).min(rto_max));
        }
    }
}

#[test]
fn karn_takes_no_rtt_sample_from_a_retransmitted_segment() {
    // The only segment is lost once: its retransmission's ACK gives no sample.
    for delay in [us(10), ms(3)] {
        let c = cfg(1460);
        let mut net = Net::new(c, c, delay, 1000).filter(drop_copies(0, 1));
        net.run_all().assert_complete();
        assert_eq!(net.ends[A].srtt(), None, "a sample from a retransmission");
        assert_eq!(
            net.ends[A].rto(),
            ms(2000),
            "backoff kept until a valid sample"
        );
        // New data, sent once, is sampled: SRTT = 2·delay + the 40 ms delayed ACK.
        net.total = 2000;
        net.run_all().assert_complete();
        assert_eq!(net.ends[A].srtt(), Some(delay * 2 + ms(40)));
    }
    // The timed segment is lost and fast-retransmitted: the ACK after the repair gives none.
    for n in 4..=10 {
        for acks in ACK_MODES {
            let c = with_acks(cfg(1460), acks);
            let mut net = Net::new(c, c, us(10), n * 1460).filter(drop_copies(0, 1));
            net.run_all().assert_complete();
            assert_eq!(net.ends[A].counters().fast_retransmits, 1);
            assert_eq!(net.ends[A].srtt(), None, "{n} segments, {acks:?}");
        }
    }
    // A tail loss among many: SRTT and the backed-off RTO after recovery are those from before.
    for n in [3, 10, 50] {
        let mut c = with_acks(cfg(1460), (Span::ZERO, 1));
        c.rto_min = ms(5);
        let mut net = Net::new(c, c, us(10), n * 1460).filter(drop_copies((n - 1) * 1460, 1));
        net.run(at(ms(4)));
        let (srtt, rto) = (net.ends[A].srtt(), net.ends[A].rto());
        net.run_all().assert_complete();
        assert_eq!(net.ends[A].counters().timeouts, 1);
        assert_eq!(
            (net.ends[A].srtt(), net.ends[A].rto()),
            (srtt, rto * 2),
            "{n} segments"
        );
    }
}

#[test]
fn a_lone_segment_is_acked_after_the_delayed_ack_timeout() {
    for delayed_ack in [ms(1), ms(40), ms(200)] {
        for (len, ack_every) in [(1, 2), (100, 2), (1460, 2), (1, 1), (1459, 1)] {
            let c = with_acks(cfg(1460), (delayed_ack, ack_every));
            let mut net = Net::new(c, c, us(10), len);
            net.run_all().assert_complete();
            let acks: Vec<_> = net.acks_from_b().map(|s| s.at).collect();
            assert_eq!(
                acks,
                [at(us(10) + delayed_ack)],
                "{delayed_ack} {len} {ack_every}"
            );
            assert_eq!(net.acked_at, Some(at(us(20) + delayed_ack)));
        }
        // ack_every = 1: a full segment is ACKed at once.
        let c = with_acks(cfg(1460), (delayed_ack, 1));
        let mut net = Net::new(c, c, us(10), 1460);
        net.run_all().assert_complete();
        assert_eq!(net.acked_at, Some(at(us(20))));
    }
}

#[test]
fn the_receiver_acks_every_ack_every_full_segments() {
    for k in 1..=4u32 {
        for n in [1, 7, 8, 33] {
            let mut c = with_acks(cfg(1460), (ms(40), k));
            c.init_cwnd = 64;
            let mut net = Net::new(c, c, us(10), n * 1460);
            net.run_all().assert_complete();
            let acks: Vec<_> = net.acks_from_b().map(|s| (s.at, s.seg.ack)).collect();
            let full = n / u64::from(k);
            let mut want: Vec<_> = (1..=full)
                .map(|i| (at(us(10)), i * u64::from(k) * 1460))
                .collect();
            if n % u64::from(k) != 0 {
                want.push((at(us(10) + ms(40)), n * 1460));
            }
            assert_eq!(acks, want, "ack_every {k}, {n} segments");
        }
    }
}

#[test]
fn the_receive_window_limits_the_sender_until_the_app_reads() {
    let m = 1460;
    for rcv_buf in [4 * m, 10 * m + 100, 65_536] {
        for lose_update in [false, true] {
            let mut c = cfg(m as u32);
            c.rcv_buf = rcv_buf;
            let read_from = at(ms(1500));
            let mut dropped = false;
            let filter = move |from, seg: &Segment| {
                // Optionally lose B's window update when the app reads.
                if lose_update && from == B && seg.wnd > 0 && seg.ack == rcv_buf && !dropped {
                    dropped = true;
                    return Fate::Drop;
                }
                Fate::Deliver
            };
            let mut net = Net::new(c, c, us(10), 20 * rcv_buf).filter(filter);
            net.read_from = read_from;
            net.run(read_from - Span::from_ps(1));
            let ctx = format!("rcv_buf {rcv_buf}, lose update {lose_update}");
            // The window is full and shut; A only probes, one byte at a doubling interval.
            assert_eq!(net.ends[B].rcv_nxt(), rcv_buf, "{ctx}");
            assert_eq!(net.ends[A].snd_una(), rcv_buf, "{ctx}");
            let probes: Vec<_> = net
                .data_from_a()
                .filter(|s| s.seg.seq >= rcv_buf)
                .map(|s| s.at)
                .collect();
            assert!(probes.len() >= 2, "{ctx}: {probes:?}");
            assert!(net
                .data_from_a()
                .all(|s| s.seg.seq < rcv_buf || s.seg.len == 1));
            assert_eq!(probes[1] - probes[0], ms(400), "{ctx}: {probes:?}");
            assert!(
                net.ends[A].next_timeout().is_some(),
                "{ctx}: no persist timer"
            );
            // Reading opens the window: B sends an update at once (or a probe finds it).
            net.run_all().assert_complete();
            let update = net
                .acks_from_b()
                .find(|s| s.at == read_from)
                .expect("no update");
            assert_eq!(update.seg.wnd, rcv_buf, "{ctx}");
            let resumed = net
                .data_from_a()
                .find(|s| s.at >= read_from && s.seg.len > 1);
            let resumed = resumed.unwrap().at;
            if lose_update {
                assert!(resumed > read_from + ms(100), "{ctx}: resumed at {resumed}");
            } else {
                assert_eq!(resumed, read_from + us(10), "{ctx}");
            }
            assert_eq!(net.ends[A].counters().timeouts, 0, "{ctx}");
        }
    }
}

#[test]
fn out_of_order_data_is_kept_and_fills_in() {
    // Segments of assorted sizes and overlaps, fed to a receiver in scrambled orders.
    let c = with_acks(cfg(100), (ms(40), 2));
    for stride in [1, 3, 7, 11, 13] {
        let pieces: Vec<(u64, u32)> = (0..40)
            .map(|i| (i * 50, 50 + (i % 4) as u32 * 20))
            .collect();
        let total = pieces.iter().map(|&(s, l)| s + u64::from(l)).max().unwrap();
        let mut order: Vec<usize> = (0..pieces.len())
            .map(|i| i * stride % pieces.len())
            .collect();
        order.reverse();
        let mut rx = TcpConn::new(c);
        let mut have = vec![false; total as usize];
        for (step, &i) in order.iter().enumerate() {
            let (seq, len) = pieces[i];
            let end = seq + u64::from(len);
            let now = at(us(step as u64));
            let before = rx.rcv_nxt();
            let had_beyond = have[before as usize..].contains(&true);
            rx.on_segment(
                now,
                &Segment {
                    seq,
                    len,
                    ..Segment::default()
                },
            );
            have[seq as usize..end as usize].fill(true);
            let prefix = have.iter().position(|&h| !h).unwrap_or(have.len()) as u64;
            assert_eq!(rx.rcv_nxt(), prefix, "stride {stride}, step {step}");
            // Out-of-order, hole-filling and duplicate data is ACKed at once.
            let ack = rx.poll_transmit(now).map(|a| a.ack);
            if seq > before || had_beyond || end <= before {
                assert_eq!(ack, Some(prefix), "stride {stride}, step {step}");
            }
            while rx.poll_transmit(now).is_some() {}
            rx.read(rx.rcv_nxt());
        }
        assert_eq!(rx.rcv_nxt(), total);
    }
}

#[test]
fn random_losses_in_both_directions_are_repaired_deterministically() {
    for loss_pct in [1, 5, 20] {
        let mut drops = 0;
        for seed in 1..=4u64 {
            for (dctcp, acks) in [(false, ACK_MODES[1]), (true, ACK_MODES[0])] {
                let run = || {
                    let mut c = with_acks(cfg(1460), acks);
                    (c.dctcp, c.rto_min, c.snd_buf) = (dctcp, ms(2), 40_000);
                    let mut next = xorshift(seed);
                    let filter = move |_, seg: &Segment| match next() % 100 {
                        x if x < loss_pct => Fate::Drop,
                        x if x < 2 * loss_pct && seg.ect => Fate::Mark,
                        _ => Fate::Deliver,
                    };
                    let mut net = Net::new(c, c, us(10), 300 * 1460 + 17).filter(filter);
                    net.rate_bps = 10_000_000_000;
                    net.run_all().assert_complete();
                    net.log
                };
                let log = run();
                drops += log.iter().filter(|s| s.fate == Fate::Drop).count();
                let ctx = format!("loss {loss_pct}% seed {seed} dctcp {dctcp}");
                assert_eq!(log, run(), "{ctx}: not deterministic");
            }
        }
        assert!(drops >= 8, "loss {loss_pct}%: only {drops} drops");
    }
}

#[test]
fn an_early_or_spurious_timeout_call_changes_nothing() {
    let c = cfg(1460);
    let mut a = TcpConn::new(c);
    a.on_timeout(at(ms(5))); // nothing armed
    a.write(5000);
    let mut sent = 0;
    while let Some(seg) = a.poll_transmit(Time::ZERO) {
        sent += seg.len;
    }
    assert_eq!(sent, 5000);
    let deadline = a.next_timeout().unwrap();
    assert_eq!(deadline, at(ms(1000)));
    a.on_timeout(deadline - Span::from_ps(1));
    assert_eq!(
        (a.next_timeout(), a.counters().timeouts),
        (Some(deadline), 0)
    );
    assert_eq!(a.poll_transmit(deadline - Span::from_ps(1)), None);
    a.on_timeout(deadline);
    assert_eq!(a.counters().timeouts, 1);
    assert_eq!(
        a.poll_transmit(deadline).map(|s| (s.seq, s.len)),
        Some((0, 1460))
    );
}
