//! The per-connection send window: grows from RTT history, shrinks by β on an ECN echo.
//!
//! The window caps the bytes of fragments (header included) in flight, i.e. posted and not yet
//! ACKed by the receiving xrdma endpoint. It sits on top of the NIC's own rate control (DCQCN),
//! as in XRDMA.
//!
//! * **Growth** (delay-based, in the spirit of TIMELY, SIGCOMM'15, and Swift, SIGCOMM'20):
//!   each ACK with an RTT sample `r` and `acked` bytes adds `a · acked` where
//!   `a = alpha · max(0, 1 − (r − min_rtt) / target_delay)`. Over one RTT about one window is
//!   ACKed, so the window grows by the factor `(1 + a)` per RTT: fastest when the path shows no
//!   queueing, not at all once queueing delay reaches `target_delay`.
//! * **Decrease**: on an ECN echo (a CNP reported for the connection's QP), at most once per
//!   smoothed RTT, `window ← max(min_window, β · window)` (DCTCP-style once-per-RTT reaction,
//!   SIGCOMM'10; β ∈ [0.5, 0.8] from the XRDMA description).
//! * RTT history: `min_rtt` is the smallest sample seen, `srtt` the RFC 6298 EWMA with gain 1/8.

use crate::Time;

/// Send window state of one connection. All sizes in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct SendWindow {
    window: u64,
    min: u64,
    max: u64,
    beta: f64,
    alpha: f64,
    target_delay: Time,
    min_rtt: Option<Time>,
    srtt: Option<Time>,
    last_decrease: Option<Time>,
    growth_credit: f64,
    decreases: u64,
    fixed: bool,
}

impl SendWindow {
    /// A window of `initial` bytes clamped to `[min, max]`.
    pub fn new(
        initial: u64,
        min: u64,
        max: u64,
        alpha: f64,
        beta: f64,
        target_delay: Time,
    ) -> Self {
        SendWindow {
            window: initial.clamp(min, max.max(min)),
            min,
            max: max.max(min),
            beta,
            alpha,
            target_delay,
            min_rtt: None,
            srtt: None,
            last_decrease: None,
            growth_credit: 0.0,
            decreases: 0,
            fixed: false,
        }
    }

    /// The same window, but fixed: RTTs are still recorded, the size never changes.
    pub fn fixed(mut self) -> Self {
        self.fixed = true;
        self
    }

    /// Current window, bytes.
    pub fn bytes(&self) -> u64 {
        self.window
    }

    /// Smallest RTT sample seen.
    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }

    /// Smoothed RTT (RFC 6298, gain 1/8).
    pub fn srtt(&self) -> Option<Time> {
        self.srtt
    }

    /// Number of β decreases applied so far.
    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    /// The growth factor `a` an RTT sample `rtt` earns (see the module docs); 0 before any
    /// minimum is known.
    pub fn growth_factor(&self, rtt: Time) -> f64 {
        let Some(min_rtt) = self.min_rtt else {
            return 0.0;
        };
        let queueing = rtt.saturating_sub(min_rtt).as_ps() as f64;
        let target = self.target_delay.as_ps().max(1) as f64;
        self.alpha * (1.0 - queueing / target).max(0.0)
    }

    /// `acked` bytes were ACKed; `rtt` is the sample of the newest of them.
    pub fn on_ack(&mut self, acked: u64, rtt: Time) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.srtt = Some(match self.srtt {
            None => rtt,
            // srtt ← 7/8·srtt + 1/8·rtt, in integer picoseconds.
            Some(s) => Time((s.as_ps() / 8) * 7 + (s.as_ps() % 8) * 7 / 8 + rtt.as_ps() / 8),
        });
        if self.fixed {
            return;
        }
        let a = self.growth_factor(rtt);
        // Whole bytes only; the fraction carries over so small ACKs still add up.
        self.growth_credit += a * acked as f64;
        let whole = self.growth_credit.floor();
        self.growth_credit -= whole;
        self.window = self.window.saturating_add(whole as u64).min(self.max);
    }

    /// An ECN echo arrived at `now`. Applies `window ← max(min, β·window)` unless a decrease
    /// already happened less than one smoothed RTT ago; returns whether it applied.
    pub fn on_congestion(&mut self, now: Time) -> bool {
        if self.fixed {
            return false;
        }
        if let (Some(last), Some(srtt)) = (self.last_decrease, self.srtt) {
            if now < last + srtt {
                return false;
            }
        }
        self.window = ((self.window as f64 * self.beta) as u64).max(self.min);
        self.last_decrease = Some(now);
        self.growth_credit = 0.0;
        self.decreases += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(initial: u64, beta: f64) -> SendWindow {
        SendWindow::new(initial, 4096, 1 << 20, 0.125, beta, Time::from_us(10))
    }

    #[test]
    fn ecn_echo_multiplies_by_beta() {
        let mut w = win(65536, 0.5);
        assert!(w.on_congestion(Time::from_us(1)));
        assert_eq!(w.bytes(), 32768);
        let mut w = win(100_000, 0.8);
        assert!(w.on_congestion(Time::from_us(1)));
        assert_eq!(w.bytes(), 80_000);
    }

    #[test]
    fn decrease_is_floored_at_min_and_once_per_rtt() {
        let mut w = win(5000, 0.5);
        w.on_ack(0, Time::from_us(8)); // srtt = 8 us
        assert!(w.on_congestion(Time::from_us(100)));
        assert_eq!(w.bytes(), 4096); // 2500 floored to min 4096
        let mut w = win(65536, 0.5);
        w.on_ack(0, Time::from_us(8));
        assert!(w.on_congestion(Time::from_us(100)));
        assert!(!w.on_congestion(Time::from_us(107))); // within one srtt of 100 us
        assert_eq!(w.bytes(), 32768);
        assert!(w.on_congestion(Time::from_us(108)));
        assert_eq!(w.bytes(), 16384);
    }

    #[test]
    fn growth_follows_queueing_delay() {
        let mut w = win(65536, 0.5);
        // First sample sets min_rtt = 5 us and grows by alpha * acked = 0.125 * 8192 = 1024.
        w.on_ack(8192, Time::from_us(5));
        assert_eq!(w.bytes(), 65536 + 1024);
        // 5 us of queueing = half the 10 us target: a = 0.0625, 0.0625 * 16384 = 1024.
        w.on_ack(16384, Time::from_us(10));
        assert_eq!(w.bytes(), 65536 + 2048);
        // Queueing at or beyond target: no growth.
        w.on_ack(65536, Time::from_us(15));
        assert_eq!(w.bytes(), 65536 + 2048);
        assert_eq!(w.growth_factor(Time::from_us(30)), 0.0);
    }

    #[test]
    fn a_fixed_window_never_moves_but_measures_rtt() {
        let mut w = win(65536, 0.5).fixed();
        w.on_ack(65536, Time::from_us(5));
        assert!(!w.on_congestion(Time::from_us(100)));
        assert_eq!((w.bytes(), w.decreases()), (65536, 0));
        assert_eq!(w.min_rtt(), Some(Time::from_us(5)));
    }

    #[test]
    fn growth_stops_at_max() {
        let mut w = SendWindow::new(60_000, 4096, 65536, 1.0, 0.5, Time::from_us(10));
        w.on_ack(60_000, Time::from_us(5));
        assert_eq!(w.bytes(), 65536);
    }

    #[test]
    fn srtt_is_rfc6298_ewma() {
        let mut w = win(65536, 0.5);
        w.on_ack(0, Time(8000));
        w.on_ack(0, Time(16000));
        // 7/8 * 8000 + 1/8 * 16000 = 7000 + 2000 = 9000
        assert_eq!(w.srtt(), Some(Time(9000)));
        assert_eq!(w.min_rtt(), Some(Time(8000)));
    }
}
