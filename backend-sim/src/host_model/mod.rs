//! The host model: what posting, the doorbell, the NIC's DMA, completions, polling and the
//! application's own work cost at each host ([`HostModel`], [`crate::SimConfig::host`]).
//!
//! Without it the hosts are free: a WR posted at `t` may leave the NIC at `t`, a completion is
//! seen by `poll_cq` the picosecond it is generated, and a whole driver turn takes no time. With
//! it each host has a **CPU clock**, and every cost is a duration in picoseconds:
//!
//! - **CPU costs** advance the host's CPU clock. A call made at turn time `now` starts at
//!   `max(now, cpu)` and ends its cost later, so later calls of the same turn happen later:
//!   a chain of `k` send WRs costs `k × post-send-wr + doorbell` (one MMIO write per chain),
//!   a receive WR `post-recv-wr`, a `poll_cq` call `poll-call + n × poll-cqe` for the `n`
//!   completions it returns, a turn `turn` at its start, and the application
//!   `app-recv-message` per message delivered to it and `app-send-message` per message it
//!   sends (the runner reports both, `HostTransport::app_messages`). The host's next turn
//!   never starts before its CPU clock: a wake request or a completion that arrives while the
//!   CPU is busy gives the turn at the CPU clock.
//! - **NIC latencies** delay what the NIC does. The NIC sees a chain's doorbell when the CPU
//!   has written it, and may start each of its WRs' first packet `wqe-fetch + payload-read`
//!   later (the WQE fetch and the payload's DMA read, PCIe round trips); a WR without a
//!   payload to read skips `payload-read`: a READ, an empty WR, and a send of at most the
//!   QP's `max_inline_data` bytes, which is inline (the verbs backend posts it with
//!   `IBV_SEND_INLINE`, the NIC takes the bytes from the WQE); each packet holds the
//!   transmit engine `nic-tx-packet + payload × nic-tx-byte` before its serialization; a
//!   completion is visible to `poll_cq` only `cqe-write` after the NIC generated it (the CQE's
//!   DMA write), and a receive completion (and a READ's) `rx-dma-write` later again (the
//!   payload's DMA write to host memory comes first). Every CQE generated pays `cqe-write`;
//!   a WR that generates none (an unsignaled send) pays nothing. CQEs become visible in CQ
//!   order (a CQ is a ring): one is never visible before the one ahead of it.
//!
//! ```text
//!  A's CPU  |turn|poll|app|wr|wr|db|            (a chain of k WRs: k × wr + one db)
//!  A's NIC                          |wqe-fetch|payload-read|tx engine|ser|
//!  wire                                                                  ··· links ···
//!  B's NIC                                          last packet in |rx-dma-write|cqe-write|
//!  B's CPU                      turn at max(CQE visible, CPU free) |turn|poll|app|...
//! ```
//!
//! - **Kernel TCP** (`stack: tcp` or `dctcp`) costs the same CPU clock. A `write` call
//!   costs `tcp-write-call + bytes × tcp-copy-byte` and its bytes may leave only when it
//!   ends; a `read` call `tcp-read-call + bytes × tcp-copy-byte`. Every segment sent, data
//!   or ACK, costs `tcp-tx-segment` when the NIC takes it, and it starts on the wire when
//!   that work ends (the link waits for it: one core's kernel bounds a host's segment
//!   rate). A segment received takes effect `rx-dma-write` after its last bit, plus
//!   `tcp-rx-segment` of the CPU's time: its ACK, its bytes and its news come then. The
//!   news reaches the application's turn `tcp-wakeup` later. Kernel work runs whether or
//!   not the application is in a turn (softirq), and delays its next turn like any call.
//!
//! Every charged cost is also counted as the host's **busy CPU time**
//! (`Simulation::host_cpu_busy`): the CPU column of a run's result.
//!
//! The core and the application see the turn's start as `now` for everything they do in the
//! turn; the CPU clock only moves when the calls reach the NIC. A call outside a turn (the
//! connection setup before a run, `HostTransport::begin_turn` not called) costs no CPU time;
//! its NIC latencies still apply.
//!
//! Left out: cache and TLB effects (every call costs the same, warm or cold), PCIe bandwidth and
//! credit limits (DMA latencies overlap freely; a 1 MiB read costs what a 64 B read costs
//! before the first packet), the WQE's size (an inline WQE costs the CPU and `wqe-fetch`
//! what any other does), the NIC's receive pipeline per packet (ACKs are
//! generated at a packet's arrival), the responder's DMA read of the data a READ asks for (its
//! response starts at the request's arrival), interrupt and event-mode wake-ups (hosts
//! busy-poll), the
//! cost of copying bytes into and out of registered memory, and contention between hosts'
//! CPUs (each host has its own). For kernel TCP: TSO and GRO (every MSS-sized segment pays
//! the per-segment costs), the NIC's DMA reads of a segment's descriptor and payload, and
//! the receiving kernel's cost per byte other than the copy to the application.
//!
//! The ideal model ([`HostModel::IDEAL`], the default) costs nothing and schedules nothing:
//! a simulation with it runs exactly the events it ran before the model existed. The named
//! profiles, with a source for every number, are in [`profiles`].

pub(crate) mod clock;
pub mod profiles;

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use xrdma::Span;

/// The largest accepted cost: 1 s, far above any host's, so sums of costs over a run cannot
/// overflow the u64-picosecond clock.
pub const MAX_COST: Span = Span::from_ms(1000);

/// The largest accepted cost per byte (`nic-tx-byte`, `tcp-copy-byte`): 1 µs (1 MB/s), far
/// slower than any host copies, so a run's gigabytes cannot push the clock past its end.
pub const MAX_PER_BYTE_COST: Span = Span::from_us(1);

/// The largest cost `key` takes: [`MAX_PER_BYTE_COST`] for a per-byte cost, else
/// [`MAX_COST`].
pub fn max_cost(key: &str) -> Span {
    if key.ends_with("-byte") {
        MAX_PER_BYTE_COST
    } else {
        MAX_COST
    }
}

/// Declares [`HostModel`] with one field per cost and the lists that name them, from one table.
macro_rules! host_model {
    ($( $(#[doc = $doc:expr])* $field:ident = $key:literal, )*) => {
        /// The per-operation costs of a host and its NIC (see the [module doc](self) for the
        /// timeline). Every cost is a duration in picoseconds; zero means free. Default: the
        /// ideal host ([`HostModel::IDEAL`]).
        ///
        /// In a scenario: `sim: { host: connectx6 }`, or a profile with overrides, each one
        /// key (the names in [`HostModel::COST_KEYS`]): `sim: { host: { profile: connectx6,
        /// doorbell: 150ns } }`.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case", deny_unknown_fields)]
        pub struct HostModel {
            /// The name of the profile the costs were taken from (overridden costs keep it;
            /// compare with [`HostModel::from_profile`] to see which). A label for results only.
            pub profile: Cow<'static, str>,
            $( $(#[doc = $doc])* #[serde(default)] pub $field: Span, )*
        }

        impl HostModel {
            /// The costs' scenario keys, in declaration order.
            pub const COST_KEYS: &'static [&'static str] = &[$($key),*];

            /// The ideal host: every cost zero (the default).
            pub const IDEAL: HostModel = HostModel {
                profile: Cow::Borrowed("ideal"),
                $( $field: Span::ZERO, )*
            };

            /// Every cost with its scenario key, in declaration order.
            pub fn costs(&self) -> Vec<(&'static str, Span)> {
                vec![$( ($key, self.$field), )*]
            }

            /// The cost named by scenario key `key`, to read or override; `None` for a name
            /// that is not a cost.
            pub fn cost_mut(&mut self, key: &str) -> Option<&mut Span> {
                match key {
                    $( $key => Some(&mut self.$field), )*
                    _ => None,
                }
            }

            /// Whether every cost is zero: the host is free and the model schedules nothing.
            pub fn is_ideal(&self) -> bool {
                true $( && self.$field == Span::ZERO )*
            }
        }
    };
}

host_model! {
    /// CPU: building one send WR's WQE in the send queue, per WR of a `post_send` chain.
    post_send_wr = "post-send-wr",
    /// CPU: ringing the doorbell (the MMIO write to the NIC), once per `post_send` chain.
    doorbell = "doorbell",
    /// CPU: posting one receive WR.
    post_recv_wr = "post-recv-wr",
    /// CPU: one `poll_cq` call, whether or not it returns completions.
    poll_call = "poll-call",
    /// CPU: per completion a `poll_cq` call returns.
    poll_cqe = "poll-cqe",
    /// CPU: the fixed cost of one driver turn (its loop, timers, bookkeeping), at its start.
    turn = "turn",
    /// CPU: the application's and middleware's work per message delivered to the application.
    app_recv_message = "app-recv-message",
    /// CPU: the application's and middleware's work per message the application sends.
    app_send_message = "app-send-message",
    /// CPU, kernel TCP: one `write` (`writev`) call on a socket that takes bytes (the system
    /// call's entry and exit, the socket lock, `tcp_sendmsg`'s bookkeeping), before its copy.
    tcp_write_call = "tcp-write-call",
    /// CPU, kernel TCP: one `read` call on a socket that returns bytes, before its copy.
    tcp_read_call = "tcp-read-call",
    /// CPU, kernel TCP: per byte copied between the application and a socket buffer, on
    /// `write` and on `read`.
    tcp_copy_byte = "tcp-copy-byte",
    /// CPU, kernel TCP: the transmit path per segment, data or pure ACK (TCP and IP output,
    /// the qdisc, the driver's descriptor and doorbell); the segment starts on the wire when
    /// it is done.
    tcp_tx_segment = "tcp-tx-segment",
    /// CPU, kernel TCP: the receive path per segment (the interrupt, the NAPI poll, IP and
    /// TCP input, ACK processing); the segment takes effect when it is done.
    tcp_rx_segment = "tcp-rx-segment",
    /// Latency, kernel TCP: from a socket's news (bytes to read, bytes ACKed) to the
    /// application's turn, the wake-up of a thread blocked in `epoll_wait` (0: the
    /// application busy-polls its sockets).
    tcp_wakeup = "tcp-wakeup",
    /// NIC: from the doorbell written to the chain's WQEs in the NIC (the MMIO write crossing
    /// PCIe, and the WQEs' DMA read where they are not written with it).
    wqe_fetch = "wqe-fetch",
    /// NIC: from a WQE fetched to its payload in the NIC (the payload's DMA read, a PCIe read
    /// round trip), per WR, before the WR's first packet may start; none for a READ, an empty
    /// WR or an inline send (at most the QP's `max_inline_data` bytes).
    payload_read = "payload-read",
    /// NIC: the transmit engine's time per packet, before the packet's serialization (packet
    /// processing that a hardware pipeline overlaps with the wire is 0 here).
    nic_tx_packet = "nic-tx-packet",
    /// NIC: the transmit engine's time per payload byte, added to `nic-tx-packet`.
    nic_tx_byte = "nic-tx-byte",
    /// NIC: from a message's last packet received to its data written in host memory (the
    /// payload's DMA write), before its receive completion (or a READ's) is generated.
    rx_dma_write = "rx-dma-write",
    /// NIC: from a completion generated to its CQE visible to `poll_cq` (the CQE's DMA write),
    /// for each CQE generated.
    cqe_write = "cqe-write",
}

impl Default for HostModel {
    fn default() -> Self {
        HostModel::IDEAL
    }
}

/// Why a profile name or a cost override was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostModelError {
    /// No profile has this name.
    #[error("no host profile `{name}`: expected one of {}", list(&profile_names()))]
    UnknownProfile {
        /// The name asked for.
        name: String,
    },
    /// No cost has this name.
    #[error(
        "`{key}` is not a host cost: expected one of {}",
        list(HostModel::COST_KEYS)
    )]
    UnknownCost {
        /// The key given.
        key: String,
    },
    /// A cost above its largest ([`max_cost`]).
    #[error(
        "`{key}` = {value} is above the {} a host cost `{key}` may be",
        max_cost(key)
    )]
    TooLarge {
        /// The cost's key.
        key: &'static str,
        /// The value given.
        value: Span,
    },
}

fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn profile_names() -> Vec<&'static str> {
    profiles::PROFILES.iter().map(|p| p.name()).collect()
}

impl HostModel {
    /// The built-in profile called `name` ([`profiles::PROFILES`]).
    ///
    /// # Errors
    /// [`HostModelError::UnknownProfile`], listing the names there are.
    pub fn from_profile(name: &str) -> Result<HostModel, HostModelError> {
        profiles::PROFILES
            .iter()
            .find(|p| p.name() == name)
            .cloned()
            .ok_or_else(|| HostModelError::UnknownProfile {
                name: name.to_string(),
            })
    }

    /// The name of the profile the costs come from.
    pub fn name(&self) -> &str {
        &self.profile
    }

    /// Set the cost named `key` to `value` (an override of one cost).
    ///
    /// # Errors
    /// [`HostModelError::UnknownCost`] for a name that is not a cost,
    /// [`HostModelError::TooLarge`] above [`max_cost`].
    pub fn set_cost(&mut self, key: &str, value: Span) -> Result<(), HostModelError> {
        let known = HostModel::COST_KEYS.iter().find(|k| **k == key);
        let (Some(&key), Some(slot)) = (known, self.cost_mut(key)) else {
            return Err(HostModelError::UnknownCost {
                key: key.to_string(),
            });
        };
        if value > max_cost(key) {
            return Err(HostModelError::TooLarge { key, value });
        }
        *slot = value;
        Ok(())
    }

    /// The keys of the costs that differ from the built-in profile this model is named after
    /// (every key when no built-in profile has its name).
    pub fn overridden(&self) -> Vec<&'static str> {
        match HostModel::from_profile(&self.profile) {
            Ok(base) => self
                .costs()
                .into_iter()
                .zip(base.costs())
                .filter(|((_, v), (_, b))| v != b)
                .map(|((k, _), _)| k)
                .collect(),
            Err(_) => HostModel::COST_KEYS.to_vec(),
        }
    }

    /// Check every cost is at most [`MAX_COST`].
    ///
    /// # Errors
    /// [`HostModelError::TooLarge`] naming the first one above it.
    pub fn validate(&self) -> Result<(), HostModelError> {
        match self.costs().into_iter().find(|(k, v)| *v > max_cost(k)) {
            Some((key, value)) => Err(HostModelError::TooLarge { key, value }),
            None => Ok(()),
        }
    }

    /// Whether any of kernel TCP's costs (the `tcp-*` keys) is above zero.
    pub fn charges_kernel_tcp(&self) -> bool {
        [
            self.tcp_write_call,
            self.tcp_read_call,
            self.tcp_copy_byte,
            self.tcp_tx_segment,
            self.tcp_rx_segment,
            self.tcp_wakeup,
        ]
        .iter()
        .any(|&c| c > Span::ZERO)
    }

    /// The transmit engine's time for a packet carrying `payload` bytes:
    /// `nic-tx-packet + payload × nic-tx-byte`.
    #[inline]
    pub fn tx_engine(&self, payload: u32) -> Span {
        self.nic_tx_packet + self.nic_tx_byte * u64::from(payload)
    }

    /// CPU time of posting a chain of `wrs` send WRs: `wrs × post-send-wr + doorbell` (no
    /// doorbell for an empty chain).
    pub fn post_send_cost(&self, wrs: u64) -> Span {
        if wrs == 0 {
            return Span::ZERO;
        }
        self.post_send_wr * wrs + self.doorbell
    }

    /// CPU time of a `poll_cq` call that returns `cqes` completions:
    /// `poll-call + cqes × poll-cqe`.
    pub fn poll_cost(&self, cqes: u64) -> Span {
        self.poll_call + self.poll_cqe * cqes
    }

    /// CPU time of a `write` call on a TCP socket that takes `bytes`:
    /// `tcp-write-call + bytes × tcp-copy-byte`.
    pub fn tcp_write_cost(&self, bytes: u64) -> Span {
        self.tcp_write_call + self.tcp_copy_byte * bytes
    }

    /// CPU time of a `read` call on a TCP socket that returns `bytes`:
    /// `tcp-read-call + bytes × tcp-copy-byte`.
    pub fn tcp_read_cost(&self, bytes: u64) -> Span {
        self.tcp_read_call + self.tcp_copy_byte * bytes
    }

    /// CPU time of the application's work on `delivered` messages delivered to it and `sent`
    /// messages it sent.
    pub fn app_cost(&self, delivered: u64, sent: u64) -> Span {
        self.app_recv_message * delivered + self.app_send_message * sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_is_all_zero_and_the_default() {
        assert!(HostModel::IDEAL.is_ideal());
        assert_eq!(HostModel::default(), HostModel::IDEAL);
        assert_eq!(HostModel::IDEAL.costs().len(), HostModel::COST_KEYS.len());
        assert!(HostModel::IDEAL.overridden().is_empty());
    }

    #[test]
    fn one_override_is_one_key() {
        let mut m = HostModel::from_profile("connectx6").unwrap();
        let before = m.doorbell;
        m.set_cost("doorbell", before + Span::from_ns(1)).unwrap();
        assert_eq!(m.doorbell, before + Span::from_ns(1));
        assert_eq!(m.overridden(), vec!["doorbell"]);
        assert_eq!(m.name(), "connectx6");
        assert!(matches!(
            m.set_cost("doorbel", Span::ZERO),
            Err(HostModelError::UnknownCost { .. })
        ));
        assert!(matches!(
            m.set_cost("turn", Span::from_ms(1001)),
            Err(HostModelError::TooLarge { key: "turn", .. })
        ));
        // A per-byte cost is bounded per byte: a run's gigabytes times 1 s would end the clock.
        let e = m
            .set_cost("tcp-copy-byte", Span::from_ms(1000))
            .unwrap_err();
        assert!(e.to_string().contains("above the 1.000 us"), "{e}");
        assert!(m.set_cost("nic-tx-byte", Span::from_us(1)).is_ok());
        let e = HostModel::from_profile("cx6").unwrap_err().to_string();
        assert!(
            e.contains("`connectx6`") && e.contains("`rxe-guest`"),
            "{e}"
        );
    }

    #[test]
    fn chain_and_poll_costs_follow_their_formulas() {
        let m = HostModel {
            post_send_wr: Span::from_ps(10),
            doorbell: Span::from_ps(100),
            poll_call: Span::from_ps(7),
            poll_cqe: Span::from_ps(3),
            nic_tx_packet: Span::from_ps(50),
            nic_tx_byte: Span::from_ps(2),
            app_recv_message: Span::from_ps(11),
            app_send_message: Span::from_ps(13),
            ..HostModel::IDEAL
        };
        assert_eq!(m.post_send_cost(0), Span::ZERO);
        assert_eq!(m.post_send_cost(4), Span::from_ps(4 * 10 + 100));
        assert_eq!(m.poll_cost(0), Span::from_ps(7));
        assert_eq!(m.poll_cost(5), Span::from_ps(7 + 5 * 3));
        assert_eq!(m.tx_engine(1024), Span::from_ps(50 + 2 * 1024));
        assert_eq!(m.app_cost(2, 3), Span::from_ps(2 * 11 + 3 * 13));
    }
}
