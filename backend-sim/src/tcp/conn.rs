//! [`TcpConn`]: one TCP endpoint's state machine (see the [module docs](super)).

use xrdma::{Span, Time};

/// Clock granularity G of RFC 6298 §2: 1 µs, as Linux takes RTT samples in microseconds
/// (`tcp_mstamp`, since Linux 4.13).
const CLOCK_GRANULARITY: Span = Span::from_us(1);
/// Duplicate ACKs that trigger fast retransmit (DupThresh, RFC 5681 §3.2).
const DUP_THRESH: u32 = 3;

/// Settings of one connection. Sizes are bytes, times [`Span`]s; each field names the source
/// of its usual value. There is no `Default`: the caller picks every value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TcpConfig {
    /// Maximum segment size: payload bytes of a full-sized segment (SMSS = RMSS; 1460 on
    /// 1500-byte Ethernet). Must be positive.
    pub mss: u32,
    /// Initial congestion window, in segments: 10 (RFC 6928; Linux `TCP_INIT_CWND`).
    pub init_cwnd: u32,
    /// Lower bound on the retransmission timeout: 200 ms in Linux (`TCP_RTO_MIN`); data
    /// centres lower it to 1–5 ms (`ip route ... rto_min`). RFC 6298 §2.4 asks for 1 s.
    pub rto_min: Span,
    /// Retransmission timeout before the first RTT sample: 1 s (RFC 6298 §2.1; Linux
    /// `TCP_TIMEOUT_INIT`).
    pub rto_initial: Span,
    /// Upper bound on the (backed-off) retransmission timeout: 120 s (Linux `TCP_RTO_MAX`;
    /// RFC 6298 §2.5 allows a maximum of at least 60 s).
    pub rto_max: Span,
    /// Delayed-ACK timeout: at most this long after an un-ACKed in-order segment the receiver
    /// ACKs it. Linux uses 40 ms (`TCP_DELACK_MIN`); RFC 1122 §4.2.3.2 caps it at 0.5 s.
    /// [`Span::ZERO`] ACKs every data segment at once.
    pub delayed_ack: Span,
    /// The receiver ACKs at once when this many full-sized segments' worth of in-order bytes
    /// are un-ACKed: 2 (RFC 1122 §4.2.3.2, RFC 5681 §4.2: at least every second full-sized
    /// segment). Must be positive.
    pub ack_every: u32,
    /// Receive buffer, bytes: the largest window advertised (Linux `tcp_rmem`, default
    /// 131072, autotuned up to 6 MiB; not autotuned here).
    pub rcv_buf: u64,
    /// Send buffer, bytes: limits written but un-ACKed data (Linux `tcp_wmem`, default 16384,
    /// autotuned up to 4 MiB; not autotuned here).
    pub snd_buf: u64,
    /// Use DCTCP (RFC 8257): data segments are ECN-capable, the receiver echoes CE exactly
    /// and the sender cuts `cwnd` in proportion to the marked fraction. Without it, segments
    /// are not ECN-capable and ECE is ignored (classic RFC 3168 ECN is not modelled).
    pub dctcp: bool,
    /// DCTCP's EWMA gain g, in (0, 1]: 1/16 (RFC 8257 §4.2; Linux `dctcp_shift_g` = 4).
    pub dctcp_g: f64,
}

/// One TCP segment on the wire. Sequence numbers are 64-bit offsets into each direction's
/// byte stream, from 0: they do not wrap, and there is no SYN or FIN (a connection is
/// established when created and never closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Segment {
    /// Stream offset of the first payload byte (of a pure ACK: the sender's next offset).
    pub seq: u64,
    /// Payload bytes; 0 is a pure ACK.
    pub len: u32,
    /// Cumulative ACK: the next stream offset expected from the peer.
    pub ack: u64,
    /// Advertised receive window, bytes from `ack`.
    pub wnd: u64,
    /// ECN-capable transport (ECT(0)); set on data segments under DCTCP.
    pub ect: bool,
    /// Congestion Experienced: set by a switch on an `ect` segment, never by [`TcpConn`].
    pub ce: bool,
    /// ECN-Echo: under DCTCP, the receiver's CE state when it sent this ACK (RFC 8257 §3.2).
    pub ece: bool,
    /// Congestion Window Reduced: on the first new data segment after a DCTCP window cut
    /// (RFC 3168 §6.1.2).
    pub cwr: bool,
}

/// Per-connection counters (segments and bytes are counts since creation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcpCounters {
    /// Data segments sent (new data, retransmissions and window probes; not pure ACKs).
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions and probes included.
    pub bytes_sent: u64,
    /// Data segments that started below the highest offset already sent (probes included).
    pub retransmitted_segments: u64,
    /// Fast retransmits (entries into NewReno fast recovery).
    pub fast_retransmits: u64,
    /// Retransmission-timer expiries with data outstanding (not zero-window probes).
    pub timeouts: u64,
    /// Pure ACKs sent (window updates and DCTCP's CE-change ACKs included).
    pub acks_sent: u64,
    /// Segments received with ECE set.
    pub ece_received: u64,
    /// Segments received with CE set (counted with or without DCTCP).
    pub ce_received: u64,
}

/// What the sender's one timer is running for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    /// Retransmission timeout (RFC 6298): data is outstanding.
    Retransmit,
    /// Persist timer (RFC 1122 §4.2.2.17): data waits, the peer's window admits none of it
    /// and nothing is outstanding that would bring an ACK.
    Persist,
}

/// One TCP connection endpoint: the sender of the outgoing stream and the receiver of the
/// incoming one.
///
/// Per segment the work is O(1) and allocates nothing, but for the out-of-order ranges
/// (a sorted `Vec`, merged on insertion). Nothing is random and only DCTCP's α is a float.
///
/// Simplifications (beyond no handshake, no close and no wrap):
/// - No SACK, timestamps, limited transmit (RFC 3042), PRR, RACK/TLP, F-RTO or undo: loss
///   is found by three duplicate ACKs or the timer, as in RFC 5681/6582 NewReno.
/// - The peer's window is taken to be our own `rcv_buf` until its first segment arrives.
/// - No Linux quick-ACK mode: the receiver delays ACKs from the first segment.
/// - RTO = max(`rto_min`, SRTT + max(G, 4·RTTVAR)) per RFC 6298; Linux instead floors the
///   variance term (RTO ≈ SRTT + max(`rto_min`, 4·mdev)), larger by up to SRTT.
/// - The cwnd grows only while the flow is cwnd-limited, taken as: the data outstanding
///   before the ACK was at least half the cwnd (Linux `tcp_is_cwnd_limited` in slow start).
/// - A DCTCP window cut is applied at once (Linux reaches it gradually through PRR); the
///   cwnd then holds until the cut's window is ACKed. Pure ACKs are not ECN-capable (Linux
///   DCTCP sets ECT on them too).
/// - A zero-window probe is one new byte beyond the window (Linux sends an old byte).
#[derive(Clone, Debug)]
pub(crate) struct TcpConn {
    cfg: TcpConfig,
    mss: u64,
    // --- send half (offsets in the outgoing stream) ---
    written: u64,
    snd_una: u64,
    /// Next offset to send; below `snd_max` after a timeout (go-back-N).
    snd_nxt: u64,
    /// One past the highest offset ever sent.
    snd_max: u64,
    /// One past the highest zero-window probe byte (probes do not move `snd_nxt`).
    probe_hi: u64,
    snd_wnd: u64,
    max_snd_wnd: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes ACKed in congestion avoidance toward the next one-MSS increase.
    ca_acked: u64,
    dup_acks: u32,
    in_recovery: bool,
    /// NewReno `recover`: `snd_max` when recovery or the last timeout began (RFC 6582).
    recover: u64,
    first_partial: bool,
    /// Retransmit the segment at `snd_una` (fast retransmit, partial ACK).
    rtx_pending: bool,
    /// Send one segment whatever silly-window avoidance says (timeout, persist probe).
    force_send: bool,
    // --- retransmission timer (RFC 6298) ---
    srtt: Option<Span>,
    rttvar: Span,
    rto_base: Span,
    backoff: u32,
    /// Persist probes since the peer's window last grew.
    probes: u32,
    /// The one segment being timed: (end offset, send time).
    rtt_timed: Option<(u64, Time)>,
    timer: Option<(Time, Timer)>,
    // --- DCTCP sender (RFC 8257 §3.3) ---
    alpha: f64,
    alpha_window_end: u64,
    window_acked: u64,
    window_marked: u64,
    /// No ECE reaction until `snd_una` passes this (once per window; loss windows too).
    cong_end: u64,
    /// A DCTCP cut's window is in flight: the cwnd does not grow.
    in_cwr: bool,
    cwr_pending: bool,
    // --- receive half (offsets in the incoming stream) ---
    rcv_nxt: u64,
    read_to: u64,
    /// Out-of-order data above `rcv_nxt`: sorted, disjoint, non-touching [start, end).
    ooo: Vec<(u64, u64)>,
    /// `ack` of the last segment sent with the current state.
    ack_sent: u64,
    /// Right edge (`ack + wnd`) last advertised.
    adv_edge: u64,
    ack_now: bool,
    delack: Option<Time>,
    ce_state: bool,
    /// DCTCP: the ACK of the data before a CE change, with the old ECE (ack, ece).
    ce_ack: Option<(u64, bool)>,
    counters: TcpCounters,
}

impl TcpConn {
    /// A connection in the established state, both streams at offset 0.
    ///
    /// # Panics
    ///
    /// If `mss`, `init_cwnd` or `ack_every` is 0, `dctcp_g` is outside (0, 1] or `rto_min`
    /// exceeds `rto_max`.
    pub(crate) fn new(cfg: TcpConfig) -> TcpConn {
        assert!(cfg.mss > 0, "TcpConfig::mss must be positive");
        assert!(cfg.init_cwnd > 0, "TcpConfig::init_cwnd must be positive");
        assert!(cfg.ack_every > 0, "TcpConfig::ack_every must be positive");
        assert!(
            cfg.dctcp_g > 0.0 && cfg.dctcp_g <= 1.0,
            "TcpConfig::dctcp_g must be in (0, 1]"
        );
        assert!(
            cfg.rto_min <= cfg.rto_max,
            "TcpConfig::rto_min exceeds rto_max"
        );
        let mss = u64::from(cfg.mss);
        TcpConn {
            cfg,
            mss,
            written: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            probe_hi: 0,
            snd_wnd: cfg.rcv_buf,
            max_snd_wnd: cfg.rcv_buf,
            cwnd: mss * u64::from(cfg.init_cwnd),
            ssthresh: u64::MAX,
            ca_acked: 0,
            dup_acks: 0,
            in_recovery: false,
            recover: 0,
            first_partial: false,
            rtx_pending: false,
            force_send: false,
            srtt: None,
            rttvar: Span::ZERO,
            rto_base: cfg.rto_initial.min(cfg.rto_max),
            backoff: 0,
            probes: 0,
            rtt_timed: None,
            timer: None,
            // Linux `dctcp_alpha_on_init` = 1024 (of 1024); RFC 8257 §3.3 leaves it open.
            alpha: 1.0,
            alpha_window_end: 0,
            window_acked: 0,
            window_marked: 0,
            cong_end: 0,
            in_cwr: false,
            cwr_pending: false,
            rcv_nxt: 0,
            read_to: 0,
            ooo: Vec::with_capacity(8),
            ack_sent: 0,
            adv_edge: cfg.rcv_buf,
            ack_now: false,
            delack: None,
            ce_state: false,
            ce_ack: None,
            counters: TcpCounters::default(),
        }
    }

    // ----- application side -----

    /// Bytes the application may still write: `snd_buf` less the written but un-ACKed bytes.
    pub(crate) fn send_space(&self) -> u64 {
        self.cfg.snd_buf.saturating_sub(self.written - self.snd_una)
    }

    /// The application appended `n` bytes to the outgoing stream (`n` ≤
    /// [`send_space`](Self::send_space); more is a caller bug, checked in debug builds).
    pub(crate) fn write(&mut self, n: u64) {
        debug_assert!(
            n <= self.send_space(),
            "write of {n} B exceeds the send space"
        );
        self.written += n;
    }

    /// Stream offset of the end of the written data.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Outgoing offset below which the peer has ACKed everything.
    pub(crate) fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Incoming offset below which everything has arrived in order.
    pub(crate) fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Incoming offset below which the application has read everything.
    pub(crate) fn read_to(&self) -> u64 {
        self.read_to
    }

    /// The application consumed the incoming bytes up to offset `upto` (≤
    /// [`rcv_nxt`](Self::rcv_nxt)), which opens the receive window by as much. A window
    /// update is owed (sent by the next [`poll_transmit`](Self::poll_transmit)) when the
    /// window last advertised was below one MSS and the right edge now moves by at least
    /// min(2·MSS, `rcv_buf`/2): receiver silly-window avoidance (RFC 1122 §4.2.3.3, with
    /// Linux's "at least twice" in `tcp_cleanup_rbuf`).
    pub(crate) fn read(&mut self, upto: u64) {
        debug_assert!(upto <= self.rcv_nxt, "read past rcv_nxt");
        if upto <= self.read_to {
            return;
        }
        self.read_to = upto;
        let old = self.adv_edge.saturating_sub(self.rcv_nxt);
        let opened = self.rcv_edge() - self.adv_edge;
        if old < self.mss && opened >= (2 * self.mss).min(self.cfg.rcv_buf / 2) {
            self.ack_now = true;
        }
    }

    // ----- wire side -----

    /// The next segment to send at `now`, if any. Call until `None` after every event.
    ///
    /// In order: the ACK of the data before a DCTCP CE change (it must precede any later
    /// ACK); a retransmission (fast retransmit or partial ACK, whatever the windows say);
    /// data from `snd_nxt` within min(cwnd, peer window); a zero-window probe when one is
    /// due; else a pure ACK when one is owed (`ack_every` reached, out-of-order, duplicate or
    /// out-of-window data, a CE change, the delayed-ACK time passed, a window update).
    /// Sender silly-window avoidance (RFC 1122 §4.2.3.4, no Nagle): a segment shorter than
    /// one MSS goes only if it is all the unsent data, at least half the peer's largest
    /// window, or forced by a timer. Every segment carries the current `ack` and `wnd`, which
    /// settles any ACK owed. A data segment starts the retransmission timer if it is not
    /// running (RFC 6298 §5.1). With nothing outstanding and data blocked by the peer's
    /// window, a `None` arms the persist timer.
    pub(crate) fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        if let Some((ack, ece)) = self.ce_ack.take() {
            self.counters.acks_sent += 1;
            return Some(Segment {
                seq: self.snd_nxt,
                ack,
                wnd: self.rcv_edge() - ack,
                ece,
                ..Segment::default()
            });
        }
        if self.rtx_pending {
            self.rtx_pending = false;
            if self.snd_max > self.snd_una {
                let len = (self.snd_max - self.snd_una).min(self.mss);
                return Some(self.emit(now, self.snd_una, len, false));
            }
        }
        if let Some(seg) = self.send_data(now) {
            return Some(seg);
        }
        if self.ack_now || self.delack.is_some_and(|t| t <= now) {
            self.counters.acks_sent += 1;
            let mut seg = Segment {
                seq: self.snd_nxt,
                ..Segment::default()
            };
            self.stamp_ack(&mut seg);
            return Some(seg);
        }
        if self.timer.is_none() && self.snd_max == self.snd_una && self.written > self.snd_nxt {
            self.timer = Some((now + self.persist_interval(), Timer::Persist));
        }
        None
    }

    /// A segment from the peer arrived at `now`: its ACK feeds the send half, its payload
    /// (if any) the receive half.
    pub(crate) fn on_segment(&mut self, now: Time, seg: &Segment) {
        self.counters.ece_received += u64::from(seg.ece);
        self.counters.ce_received += u64::from(seg.ce);
        self.on_ack(now, seg);
        if seg.len > 0 {
            self.on_data(now, seg);
        }
    }

    /// The earliest deadline armed: the retransmission or persist timer, or the delayed ACK.
    /// `None` when neither is armed.
    pub(crate) fn next_timeout(&self) -> Option<Time> {
        match (self.timer.map(|(t, _)| t), self.delack) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles whatever has expired by `now` (a call before any deadline does nothing).
    ///
    /// Delayed ACK: the ACK becomes owed. Retransmission timeout (RFC 6298 §5.4–5.6, RFC 5681
    /// §3.1, RFC 6582 §3.2): ssthresh = max(FlightSize/2, 2·MSS), cwnd = 1 MSS, go-back-N
    /// from `snd_una` (its first segment is sent whatever silly-window avoidance says, or a
    /// one-byte probe if the peer's window is shut), fast recovery left, `recover` =
    /// `snd_max`, the RTO doubled (up to `rto_max`) and the timer restarted. Persist: one
    /// probe is due and the timer restarts at double the interval (Linux `tcp_probe_timer`).
    pub(crate) fn on_timeout(&mut self, now: Time) {
        if self.delack.is_some_and(|t| t <= now) {
            self.delack = None;
            self.ack_now = true;
        }
        let Some((deadline, kind)) = self.timer else {
            return;
        };
        if deadline > now {
            return;
        }
        self.timer = None;
        match kind {
            Timer::Retransmit if self.snd_max > self.snd_una => self.on_rto(now),
            Timer::Persist if self.snd_max == self.snd_una && self.written > self.snd_nxt => {
                self.force_send = true;
                self.probes = (self.probes + 1).min(63);
                self.timer = Some((now + self.persist_interval(), Timer::Persist));
            }
            _ => {}
        }
    }

    /// The counters since creation.
    pub(crate) fn counters(&self) -> TcpCounters {
        self.counters
    }

    /// Congestion window, bytes (initially `init_cwnd`·`mss`; never below one MSS).
    pub(crate) fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Slow-start threshold, bytes (`u64::MAX` until the first congestion event).
    pub(crate) fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Current retransmission timeout, backoff included: `rto_initial` before the first RTT
    /// sample, at most `rto_max`.
    pub(crate) fn rto(&self) -> Span {
        (self.rto_base * (1u64 << self.backoff)).min(self.cfg.rto_max)
    }

    /// Smoothed RTT (RFC 6298 SRTT); `None` before the first sample.
    pub(crate) fn srtt(&self) -> Option<Span> {
        self.srtt
    }

    /// DCTCP's estimate α of the fraction of marked bytes, in [0, 1]; starts at 1 (Linux
    /// `dctcp_alpha_on_init`). Stays 1 without DCTCP.
    pub(crate) fn dctcp_alpha(&self) -> f64 {
        self.alpha
    }

    // ----- send half -----

    /// New data from `snd_nxt` if the windows and silly-window avoidance allow it, or a
    /// zero-window probe when the persist or retransmission timer forces one.
    fn send_data(&mut self, now: Time) -> Option<Segment> {
        let unsent = self.written - self.snd_nxt;
        if unsent == 0 {
            return None;
        }
        let limit = self.snd_una + self.cwnd.min(self.snd_wnd);
        let room = limit.saturating_sub(self.snd_nxt);
        let len = self.mss.min(unsent).min(room);
        if len > 0
            && (len == self.mss || len == unsent || 2 * len >= self.max_snd_wnd || self.force_send)
        {
            return Some(self.emit(now, self.snd_nxt, len, true));
        }
        if self.force_send && room == 0 {
            // Zero-window probe (RFC 1122 §4.2.2.17): one byte past the window. The receiver
            // drops it while its window is shut and ACKs at once; `snd_nxt` stays.
            let probe = self.emit(now, self.snd_nxt, 1, false);
            self.probe_hi = self.probe_hi.max(self.snd_nxt + 1);
            return Some(probe);
        }
        None
    }

    /// Counts and stamps a data segment [seq, seq + len); `advance` moves `snd_nxt` past it.
    fn emit(&mut self, now: Time, seq: u64, len: u64, advance: bool) -> Segment {
        // A byte once sent as a zero-window probe counts as sent.
        let retransmission = seq < self.snd_max.max(self.probe_hi);
        if advance {
            self.snd_nxt = seq + len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
        self.counters.segments_sent += 1;
        self.counters.bytes_sent += len;
        if retransmission {
            self.counters.retransmitted_segments += 1;
            self.rtt_timed = None; // Karn: an ACK may now be for either copy.
        } else if advance && self.rtt_timed.is_none() {
            self.rtt_timed = Some((seq + len, now));
        }
        match self.timer {
            None => self.timer = Some((now + self.rto(), Timer::Retransmit)),
            Some((_, Timer::Persist)) if advance => {
                self.probes = 0;
                self.timer = Some((now + self.rto(), Timer::Retransmit));
            }
            _ => {}
        }
        self.force_send = false;
        let cwr = self.cwr_pending && !retransmission;
        self.cwr_pending &= !cwr;
        let mut seg = Segment {
            seq,
            len: len as u32,
            ect: self.cfg.dctcp,
            cwr,
            ..Segment::default()
        };
        self.stamp_ack(&mut seg);
        seg
    }

    /// The ACK half of a segment from the peer.
    fn on_ack(&mut self, now: Time, seg: &Segment) {
        let ack = seg.ack;
        if ack < self.snd_una || ack > self.snd_max.max(self.probe_hi) {
            return; // an old ACK, or one for data never sent
        }
        if seg.wnd > self.snd_wnd {
            self.probes = 0;
            if matches!(self.timer, Some((_, Timer::Persist))) {
                self.timer = None; // poll_transmit re-arms it if data is still blocked
            }
        }
        let acked = ack - self.snd_una;
        let prior_flight = self.snd_max - self.snd_una;
        let dup = acked == 0 && seg.len == 0 && seg.wnd == self.snd_wnd && prior_flight > 0;
        self.snd_wnd = seg.wnd;
        self.max_snd_wnd = self.max_snd_wnd.max(seg.wnd);
        if dup {
            self.on_dup_ack();
        }
        let mut restart_timer = acked > 0;
        let mut exited_recovery = false;
        if acked > 0 {
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.snd_max = self.snd_max.max(ack);
            self.dup_acks = 0;
            if let Some((end, sent)) = self.rtt_timed {
                if ack >= end {
                    self.rtt_timed = None;
                    self.rtt_sample(now.saturating_since(sent));
                }
            }
            if self.in_recovery {
                if ack >= self.recover {
                    // Full ACK (RFC 6582 §3.2 step 3): deflate to ssthresh, leave recovery.
                    self.in_recovery = false;
                    self.cwnd = self.ssthresh;
                    self.ca_acked = 0;
                    exited_recovery = true;
                } else {
                    // Partial ACK (step 4): retransmit the next hole, deflate by the bytes
                    // ACKed less one MSS; "Impatient": only the first restarts the timer.
                    self.rtx_pending = true;
                    let back = if acked >= self.mss { self.mss } else { 0 };
                    self.cwnd = (self.cwnd.saturating_sub(acked) + back).max(self.mss);
                    restart_timer = self.first_partial;
                    self.first_partial = false;
                }
            }
        }
        if self.in_cwr && self.snd_una > self.cong_end {
            self.in_cwr = false;
        }
        if self.cfg.dctcp {
            self.dctcp_on_ack(acked, seg.ece);
        }
        if acked > 0
            && !self.in_recovery
            && !exited_recovery
            && !self.in_cwr
            && 2 * prior_flight >= self.cwnd
        {
            self.grow_cwnd(acked);
        }
        if self.snd_una == self.snd_max {
            if matches!(self.timer, Some((_, Timer::Retransmit))) {
                self.timer = None; // RFC 6298 §5.2
            }
        } else if restart_timer {
            self.timer = Some((now + self.rto(), Timer::Retransmit)); // RFC 6298 §5.3
        }
    }

    /// A duplicate ACK (RFC 5681 §2): fast retransmit on the third (§3.2), unless a timeout
    /// since left `snd_una` below `recover` (RFC 6582 §3.2 step 2); one MSS of inflation per
    /// further duplicate in recovery.
    fn on_dup_ack(&mut self) {
        if self.in_recovery {
            self.cwnd += self.mss;
            return;
        }
        self.dup_acks += 1;
        if self.dup_acks == DUP_THRESH && self.snd_una >= self.recover {
            let flight = self.snd_max - self.snd_una;
            self.ssthresh = (flight / 2).max(2 * self.mss);
            self.cwnd = self.ssthresh + u64::from(DUP_THRESH) * self.mss;
            self.ca_acked = 0;
            self.recover = self.snd_max;
            self.cong_end = self.snd_max;
            self.in_cwr = false;
            self.in_recovery = true;
            self.first_partial = true;
            self.rtx_pending = true;
            self.counters.fast_retransmits += 1;
        }
    }

    /// Slow start with byte counting, at most 2·MSS per ACK (RFC 3465 §2.2, L = 2·SMSS, so a
    /// delayed-ACK receiver still doubles the window per RTT as Linux's per-packet counting
    /// does); congestion avoidance adds one MSS per cwnd of bytes ACKed (RFC 5681 §3.1's
    /// byte-counting form; Linux `tcp_cong_avoid_ai`).
    fn grow_cwnd(&mut self, acked: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + acked.min(2 * self.mss)).min(self.ssthresh);
        } else {
            self.ca_acked += acked;
            let steps = self.ca_acked / self.cwnd;
            self.ca_acked -= steps * self.cwnd;
            self.cwnd += steps * self.mss;
        }
    }

    /// A retransmission timeout with data outstanding (see [`on_timeout`](Self::on_timeout)).
    fn on_rto(&mut self, now: Time) {
        self.counters.timeouts += 1;
        // Repeated timeouts find the same FlightSize (nothing is ACKed, nothing new is
        // sent), so ssthresh holds as RFC 5681 §3.1 asks.
        self.ssthresh = ((self.snd_max - self.snd_una) / 2).max(2 * self.mss);
        self.cwnd = self.mss;
        self.ca_acked = 0;
        self.recover = self.snd_max;
        self.cong_end = self.snd_max;
        self.in_cwr = false;
        self.in_recovery = false;
        self.rtx_pending = false;
        self.dup_acks = 0;
        self.snd_nxt = self.snd_una;
        self.force_send = true;
        self.rtt_timed = None;
        if self.rto() < self.cfg.rto_max && self.backoff < 63 {
            self.backoff += 1;
        }
        self.timer = Some((now + self.rto(), Timer::Retransmit));
    }

    /// One RTT sample (RFC 6298 §2.2–2.3, α = 1/8, β = 1/4, K = 4); ends any backoff.
    fn rtt_sample(&mut self, r: Span) {
        let (srtt, rttvar) = match self.srtt {
            None => (r, r / 2),
            Some(s) => {
                let err = if s > r { s - r } else { r - s };
                ((s * 7 + r) / 8, (self.rttvar * 3 + err) / 4)
            }
        };
        self.srtt = Some(srtt);
        self.rttvar = rttvar;
        self.rto_base = (srtt + CLOCK_GRANULARITY.max(rttvar * 4))
            .max(self.cfg.rto_min)
            .min(self.cfg.rto_max);
        self.backoff = 0;
    }

    /// Persist interval: the RTO doubled per probe sent, at most `rto_max` (Linux
    /// `tcp_probe0_when`).
    fn persist_interval(&self) -> Span {
        (self.rto() * (1u64 << self.probes)).min(self.cfg.rto_max)
    }

    /// DCTCP sender (RFC 8257 §3.3): α per window of data, and one cut per window on ECE.
    fn dctcp_on_ack(&mut self, acked: u64, ece: bool) {
        if acked > 0 {
            self.window_acked += acked;
            if ece {
                self.window_marked += acked;
            }
            // The window ends when all of it is ACKed (Linux `!before(snd_una, next_seq)`;
            // RFC 8257 waits for one ACK more).
            if self.snd_una >= self.alpha_window_end {
                let g = self.cfg.dctcp_g;
                let f = self.window_marked as f64 / self.window_acked as f64;
                self.alpha = (1.0 - g) * self.alpha + g * f;
                self.alpha_window_end = self.snd_max;
                self.window_acked = 0;
                self.window_marked = 0;
            }
        }
        // Once per window: only after an ACK beyond the reduction's window (Linux holds CWR
        // "until something above high_seq is ACKed"; RFC 3168 §6.1.2).
        if ece && !self.in_recovery && self.snd_una > self.cong_end {
            // cwnd · (1 − α/2), not below 2 MSS (Linux `dctcp_ssthresh`) nor above cwnd.
            let cut = (self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
            self.cwnd = cut.max(2 * self.mss).min(self.cwnd);
            self.ssthresh = self.cwnd;
            self.ca_acked = 0;
            self.cong_end = self.snd_max;
            self.in_cwr = true;
            self.cwr_pending = true;
        }
    }

    // ----- receive half -----

    /// Right edge of the receive window: `rcv_buf` past the application's read point, so the
    /// window (`edge − rcv_nxt`) is `rcv_buf` less the unread bytes and never shrinks.
    fn rcv_edge(&self) -> u64 {
        self.read_to.saturating_add(self.cfg.rcv_buf)
    }

    /// The payload half of a segment from the peer.
    fn on_data(&mut self, now: Time, seg: &Segment) {
        if self.cfg.dctcp && seg.ce != self.ce_state {
            // RFC 8257 §3.2: data before the change is ACKed with the old ECE (if its ACK
            // was being delayed), this segment at once with the new one.
            if self.rcv_nxt > self.ack_sent {
                self.ce_ack = Some((self.rcv_nxt, self.ce_state));
            }
            self.ce_state = seg.ce;
            self.ack_now = true;
        }
        let start = seg.seq;
        let end = (seg.seq + u64::from(seg.len)).min(self.rcv_edge());
        if end <= self.rcv_nxt || start >= end {
            // A duplicate or out of the window: ACK at once (RFC 9293 §3.10.7.4).
            self.ack_now = true;
            return;
        }
        if start > self.rcv_nxt {
            // Out of order: keep it, send a duplicate ACK at once (RFC 5681 §4.2).
            insert_range(&mut self.ooo, start, end);
            self.ack_now = true;
            return;
        }
        let filled_hole = !self.ooo.is_empty();
        self.rcv_nxt = end;
        let mut merged = 0;
        while merged < self.ooo.len() && self.ooo[merged].0 <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(self.ooo[merged].1);
            merged += 1;
        }
        self.ooo.drain(..merged);
        let unacked = self.rcv_nxt - self.ack_sent;
        if filled_hole
            || self.cfg.delayed_ack == Span::ZERO
            || unacked >= u64::from(self.cfg.ack_every) * self.mss
        {
            self.ack_now = true; // RFC 5681 §4.2: a segment into a gap is ACKed at once
        } else if self.delack.is_none() {
            self.delack = Some(now + self.cfg.delayed_ack);
        }
    }

    /// Puts the current `ack`, `wnd` and ECE on an outgoing segment: that ACK is now sent.
    fn stamp_ack(&mut self, seg: &mut Segment) {
        let edge = self.rcv_edge();
        seg.ack = self.rcv_nxt;
        seg.wnd = edge - self.rcv_nxt;
        seg.ece = self.cfg.dctcp && self.ce_state;
        self.ack_sent = self.rcv_nxt;
        self.adv_edge = edge;
        self.ack_now = false;
        self.delack = None;
    }
}

/// Adds [start, end) to sorted, disjoint, non-touching ranges, merging what it overlaps or
/// touches.
fn insert_range(ranges: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let i = ranges.partition_point(|&(_, e)| e < start);
    let j = i + ranges[i..].partition_point(|&(s, _)| s <= end);
    if i == j {
        ranges.insert(i, (start, end));
    } else {
        ranges[i] = (start.min(ranges[i].0), end.max(ranges[j - 1].1));
        ranges.drain(i + 1..j);
    }
}
