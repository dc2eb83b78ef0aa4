//! What senders and the receiving side recorded, and the one delivery tally over them.

use super::{Arrival, ErrorAt};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use xrdma::Time;
use xrdma_reports as rep;

/// An XXH3-128 payload digest; serialised as 32 lowercase hex digits (JSON numbers cannot
/// hold 128 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digest(pub u128);

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:032x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() != 32 {
            return Err(serde::de::Error::custom(format!(
                "a digest is 32 hex digits, got {text:?}"
            )));
        }
        u128::from_str_radix(&text, 16)
            .map(Digest)
            .map_err(|e| serde::de::Error::custom(format!("digest {text:?}: {e}")))
    }
}

/// The response a message asks for (an echo request's), as its sender saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Response {
    /// Response payload bytes expected.
    pub bytes: u64,
    /// Whether it arrived with the expected size and digest (false also when it never did).
    pub intact: bool,
}

/// One message a sender intended, as the sender saw it, in a form another process can read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SentRecord {
    /// Position in the sender's list, from 0.
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// Intended send time, ps on the sender's clock (latency counts from here).
    pub intended_ps: u64,
    /// Digest of the payload handed to xrdma; `None`: never handed over (the sender stopped
    /// first, e.g. its connection failed).
    pub digest: Option<Digest>,
    /// When the message completed, ps on the sender's clock: the receiver's ACK of its last
    /// fragment arrived, or (for a message with a [`Response`]) its response had fully
    /// arrived. `None`: never.
    pub completed_ps: Option<u64>,
    /// The response it asks for, if any.
    pub response: Option<Response>,
    /// The sender's instants of it from xrdma ([`xrdma::SendTiming`]): one-way messages
    /// that were ACKed; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<xrdma::SendTiming>,
}

/// One sender's outcome: what the report needs from it, and what a rank of a multi-process
/// run sends to the receiver's rank at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SenderRecord {
    /// The sender's scenario host.
    pub host: u32,
    /// Every message it intended, in index order, posted or not.
    pub messages: Vec<SentRecord>,
    /// Errors xrdma reported on it, and when.
    pub errors: Vec<ErrorAt>,
    /// How its send windows moved (the runner adds it from the sender's endpoint after the
    /// run; [`crate::transport_info::add_windows`]); absent from a rank that did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<rep::WindowTally>,
}

/// What the receiving side got: every arrival, in arrival order, and its errors.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverView<'a> {
    /// Every whole message that arrived.
    pub arrivals: &'a [Arrival],
    /// Errors xrdma reported at the receiving host, and when.
    pub errors: &'a [ErrorAt],
}

/// The delivery tally of a run: one record per intended message, the check, and the errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Tally {
    /// One record per intended message, by sender (as given) then index.
    pub messages: Vec<rep::MessageRecord>,
    /// Delivered, mismatched, duplicated and missing counts.
    pub delivery: rep::DeliveryCheck,
    /// Every host's errors in the order they happened (at one instant the receiving side's
    /// first, then each sender's), each naming its host and time (`host H: ... (at T µs)`):
    /// the first is the earliest, which is the root cause as a rule (a sender's retry
    /// exceeded before the receiver sees its connection end).
    pub errors: Vec<String>,
}

/// Check every message the `senders` intended against what arrived at `receiver` (`got`):
///
/// - **delivered**: it was handed to xrdma, arrived once with the size and digest sent and,
///   when it asks for a response, that response completed intact;
/// - **digest mismatch**: it arrived altered (or arrived without being sent, or its response
///   arrived altered);
/// - **missing**: it never arrived (or its response never did);
/// - **duplicates**: second arrivals of a (sender, index), and arrivals no sender claims.
///
/// With `trace`, each one-way message that completed also gets its stages (`stages`).
pub fn tally(receiver: u32, senders: &[SenderRecord], got: ReceiverView<'_>, trace: bool) -> Tally {
    // Hashed, not ordered: only looked up and counted, so the tally stays linear.
    let mut arrivals: HashMap<(u32, u32), &Arrival> = HashMap::with_capacity(got.arrivals.len());
    let mut duplicates = 0;
    for a in got.arrivals {
        if arrivals.insert((a.sender, a.index), a).is_some() {
            duplicates += 1;
        }
    }
    let mut timed: Vec<(u64, u32, &ErrorAt)> =
        got.errors.iter().map(|e| (e.at_ps, receiver, e)).collect();
    for s in senders {
        timed.extend(s.errors.iter().map(|e| (e.at_ps, s.host, e)));
    }
    // Stable: at one instant the receiving side's come first, then the senders' as given.
    timed.sort_by_key(|(at, _, _)| *at);
    let errors: Vec<String> = timed
        .into_iter()
        .map(|(at, host, e)| format!("host {host}: {} (at {})", e.what, Time::from_ps(at)))
        .collect();
    let mut messages = Vec::with_capacity(senders.iter().map(|s| s.messages.len()).sum());
    let mut check = rep::DeliveryCheck {
        delivered: 0,
        digest_mismatches: 0,
        duplicates: 0,
        missing: 0,
    };
    for s in senders {
        for m in &s.messages {
            let arrival = arrivals.remove(&(s.host, m.index));
            let intact =
                arrival.is_some_and(|a| Some(Digest(a.digest)) == m.digest && a.size == m.size);
            match (arrival.is_some(), intact, m.response) {
                (_, true, None) => check.delivered += 1,
                (_, true, Some(r)) if m.completed_ps.is_some() => {
                    if r.intact {
                        check.delivered += 1
                    } else {
                        check.digest_mismatches += 1
                    }
                }
                (true, false, _) => check.digest_mismatches += 1,
                _ => check.missing += 1,
            }
            messages.push(rep::MessageRecord {
                sender: s.host,
                receiver,
                index: m.index,
                size: m.size,
                intended_ps: m.intended_ps,
                completed_ps: m.completed_ps,
                delivered_ps: arrival.map(|a| a.at.as_ps()),
                response_bytes: m.response.map(|r| r.bytes),
                stages: m.timing.filter(|_| trace).and_then(|t| {
                    stages(
                        m.intended_ps,
                        &t,
                        arrival.map(|a| a.at.as_ps()),
                        m.completed_ps,
                    )
                }),
            });
        }
    }
    // Arrivals no sender claims are duplicates or strays.
    check.duplicates = duplicates + arrivals.len() as u64;
    Tally {
        messages,
        delivery: check,
        errors,
    }
}

/// A one-way message's completion time cut into stages at the sender's instants `t` and
/// its delivery at the receiver (see [`rep::MessageStages`]); the stages add up to
/// `completed − intended` exactly. `None` when it was not delivered, or when the instants are
/// out of order (the receiver's clock is another process's) or the completion is not the
/// ACK `t` ends with (an echo exchange completes on its response).
pub fn stages(
    intended_ps: u64,
    t: &xrdma::SendTiming,
    delivered_ps: Option<u64>,
    completed_ps: Option<u64>,
) -> Option<rep::MessageStages> {
    let cuts = [
        intended_ps,
        t.accepted.as_ps(),
        t.head.as_ps(),
        t.ready().as_ps(),
        t.last_post.as_ps(),
        delivered_ps?,
        t.acked.as_ps(),
    ];
    if completed_ps != Some(t.acked.as_ps()) || cuts.windows(2).any(|w| w[0] > w[1]) {
        return None;
    }
    let d = |i: usize| cuts[i + 1] - cuts[i];
    Some(rep::MessageStages {
        app_ps: d(0),
        queue_ps: d(1),
        grant_ps: d(2),
        send_ps: d(3),
        network_ps: d(4),
        ack_ps: d(5),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrdma::Time;

    fn sent(index: u32, digest: Option<u128>, response: Option<Response>) -> SentRecord {
        SentRecord {
            index,
            size: 10,
            intended_ps: 0,
            digest: digest.map(Digest),
            completed_ps: Some(5),
            response,
            timing: None,
        }
    }

    fn arrival(sender: u32, index: u32, digest: u128) -> Arrival {
        Arrival {
            sender,
            index,
            size: 10,
            digest,
            at: Time::from_ps(3),
        }
    }

    #[test]
    fn every_intended_message_is_delivered_mismatched_or_missing_once() {
        let senders = [SenderRecord {
            host: 1,
            messages: vec![
                sent(0, Some(7), None), // arrives intact
                sent(1, Some(8), None), // arrives altered
                sent(2, Some(9), None), // never arrives
                sent(3, None, None),    // never posted, yet something arrived
                sent(4, None, None),    // never posted, nothing arrived
            ],
            errors: vec![ErrorAt::new(Time::from_ps(5_000_000), "boom")],
            window: None,
        }];
        let arrivals = [
            arrival(1, 0, 7),
            arrival(1, 0, 7), // a second copy
            arrival(1, 1, 0xbad),
            arrival(1, 3, 1),
            arrival(2, 0, 7), // from a host that sent nothing
        ];
        let errors = [ErrorAt::new(Time::from_ps(5_000_000), "receiver trouble")];
        let t = tally(
            0,
            &senders,
            ReceiverView {
                arrivals: &arrivals,
                errors: &errors,
            },
            false,
        );
        assert_eq!(
            t.delivery,
            rep::DeliveryCheck {
                delivered: 1,
                digest_mismatches: 2,
                duplicates: 2,
                missing: 2,
            }
        );
        assert_eq!(t.messages.len(), 5);
        assert_eq!(t.messages[2].delivered_ps, None);
        assert_eq!(t.messages[0].delivered_ps, Some(3));
        assert_eq!(
            t.errors,
            vec![
                "host 0: receiver trouble (at 5.000 us)",
                "host 1: boom (at 5.000 us)"
            ]
        );
    }

    #[test]
    fn errors_are_listed_in_the_order_they_happened() {
        // A sender's retry exceeded (the root cause) and, later, the receiver's connection
        // failing because of it: the receiver's came first and led the summary.
        let senders = [SenderRecord {
            host: 3,
            messages: vec![],
            errors: vec![ErrorAt::new(Time::from_ps(7_000_000), "RnrRetryExcErr")],
            window: None,
        }];
        let errors = [ErrorAt::new(Time::from_ps(9_000_000), "peer went away")];
        let t = tally(
            0,
            &senders,
            ReceiverView {
                arrivals: &[],
                errors: &errors,
            },
            false,
        );
        assert_eq!(
            t.errors,
            vec![
                "host 3: RnrRetryExcErr (at 7.000 us)",
                "host 0: peer went away (at 9.000 us)"
            ]
        );
    }

    #[test]
    fn a_message_asking_for_a_response_is_delivered_only_with_its_response_intact() {
        let ok = Response {
            bytes: 64,
            intact: true,
        };
        let bad = Response {
            intact: false,
            ..ok
        };
        let mut unanswered = sent(2, Some(3), Some(ok));
        unanswered.completed_ps = None;
        let senders = [SenderRecord {
            host: 1,
            messages: vec![
                sent(0, Some(1), Some(ok)),
                sent(1, Some(2), Some(bad)),
                unanswered,
            ],
            errors: vec![],
            window: None,
        }];
        let arrivals = [arrival(1, 0, 1), arrival(1, 1, 2), arrival(1, 2, 3)];
        let t = tally(
            0,
            &senders,
            ReceiverView {
                arrivals: &arrivals,
                errors: &[],
            },
            false,
        );
        assert_eq!(
            (
                t.delivery.delivered,
                t.delivery.digest_mismatches,
                t.delivery.missing
            ),
            (1, 1, 1)
        );
        assert!(t.messages.iter().all(|m| m.response_bytes == Some(64)));
    }

    #[test]
    fn digests_travel_as_32_hex_digits() {
        let d = Digest(0xabc);
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(text, "\"00000000000000000000000000000abc\"");
        assert_eq!(serde_json::from_str::<Digest>(&text).unwrap(), d);
        assert!(serde_json::from_str::<Digest>("\"abc\"").is_err());
        assert!(serde_json::from_str::<Digest>("\"zz000000000000000000000000000000\"").is_err());
    }

    fn timing(ps: [u64; 5], granted: Option<u64>) -> xrdma::SendTiming {
        let [accepted, head, last_post, _, acked] = ps;
        xrdma::SendTiming {
            accepted: Time::from_ps(accepted),
            head: Time::from_ps(head),
            granted: granted.map(Time::from_ps),
            last_post: Time::from_ps(last_post),
            acked: Time::from_ps(acked),
        }
    }

    #[test]
    fn stages_cut_the_completion_at_each_instant_and_add_up() {
        // Intended 10, accepted 15, head 20, granted 35, last post 60, delivered 80, ACK 83.
        let t = timing([15, 20, 60, 0, 83], Some(35));
        let s = stages(10, &t, Some(80), Some(83)).expect("ordered");
        assert_eq!(
            s.values(),
            [5, 5, 15, 25, 20, 3],
            "app, queue, grant, send, network, ack"
        );
        assert_eq!(s.total_ps(), 83 - 10);
        // A grant back before the head costs nothing.
        let early = timing([15, 20, 60, 0, 83], Some(12));
        assert_eq!(
            stages(10, &early, Some(80), Some(83)).map(|s| s.grant_ps),
            Some(0)
        );
    }

    #[test]
    fn out_of_order_instants_or_another_completion_give_no_stages() {
        let t = timing([15, 20, 60, 0, 83], None);
        // Delivered before its last fragment was posted: another process's clock.
        assert_eq!(stages(10, &t, Some(50), Some(83)), None);
        // Delivered after the ACK.
        assert_eq!(stages(10, &t, Some(90), Some(83)), None);
        // Never delivered.
        assert_eq!(stages(10, &t, None, Some(83)), None);
        // Completed on something else than this ACK (an echo's response).
        assert_eq!(stages(10, &t, Some(80), Some(99)), None);
        // Intended after it was accepted.
        assert_eq!(stages(16, &t, Some(80), Some(83)), None);
    }
}
