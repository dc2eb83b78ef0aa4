//! The handshake of a bootstrap connection ([`Peer::handshake`]): hellos, then, between the
//! ranks of a job, proof that both sides hold the job's secret ([`Auth::Job`]).
//!
//! The scenario's name and hash are no secret, so a hello alone proves nothing. With
//! [`Auth::Job`], after the hellos:
//!
//! 1. each side sends [`Frame::Challenge`] with a fresh random nonce of [`NONCE_BYTES`]; a
//!    peer that sends back this side's own nonce is refused (a reflection);
//! 2. the side that accepted the connection proves first: [`Frame::Proof`], the HMAC-SHA256
//!    ([`JobSecret::mac`]) keyed with the secret over the label `acceptor`, both nonces and
//!    both hellos ([`Session`]);
//! 3. the side that connected checks that proof before it says anything more (so a fake
//!    listener learns nothing of it), then proves in turn under the label `connector`, which
//!    the acceptor checks. The labels differ, so neither proof can be echoed back as the
//!    other; a peer that sends back this side's own proof is refused all the same.
//!
//! MACs are compared in constant time and the secret never goes on the wire. A failed proof is
//! [`BootstrapError::Refused`], naming the peer, the rank its hello claimed and why.
//!
//! [`Auth::Open`] skips the proof: for tools that serve anyone who reaches their port by
//! design, as perftest's servers do (`xrdma ping` and `xrdma bw` with `--server`).
//!
//! Known limit: only the handshake is authenticated. The frames after it (connection records,
//! `start`, records, `bye`) carry no MAC and nothing is encrypted: the secret proves who the
//! peer is when the connection opens, it does not protect the TCP stream from someone who can
//! rewrite it on the path.

use super::secret::{from_hex, random_bytes, to_hex, JobSecret, NONCE_BYTES};
use super::{BootstrapError, Frame, Hello, Peer};
use std::time::Instant;

/// Whether a bootstrap handshake proves the job's secret.
#[derive(Clone, Copy, Debug)]
pub enum Auth<'a> {
    /// Both sides prove they hold this secret (the ranks of a job).
    Job(&'a JobSecret),
    /// No proof: anyone who says the right hello is served (tools that are open by design,
    /// like perftest's servers).
    Open,
}

/// The label of the accepting side's proof.
pub(crate) const LABEL_ACCEPTOR: &str = "xrdma bootstrap 5: acceptor";
/// The label of the connecting side's proof.
pub(crate) const LABEL_CONNECTOR: &str = "xrdma bootstrap 5: connector";

/// What both sides of an authenticated connection MAC: the acceptor's nonce, the
/// connector's, the acceptor's hello and the connector's (as JSON), in that order.
#[derive(Debug)]
pub struct Session {
    fields: Vec<Vec<u8>>,
}

impl Session {
    /// The transcript of nonces `acceptor_nonce`, `connector_nonce` and the two hellos.
    ///
    /// # Errors
    /// [`BootstrapError::Encode`] when a hello cannot be serialized.
    pub(crate) fn new(
        acceptor_nonce: &[u8],
        connector_nonce: &[u8],
        acceptor: &Hello,
        connector: &Hello,
    ) -> Result<Self, BootstrapError> {
        let json = |h: &Hello| {
            serde_json::to_vec(h).map_err(|e| BootstrapError::Encode {
                reason: e.to_string(),
            })
        };
        Ok(Session {
            fields: vec![
                acceptor_nonce.to_vec(),
                connector_nonce.to_vec(),
                json(acceptor)?,
                json(connector)?,
            ],
        })
    }

    fn with<'a>(&'a self, extra: &[&'a [u8]]) -> Vec<&'a [u8]> {
        let mut f: Vec<&[u8]> = self.fields.iter().map(Vec::as_slice).collect();
        f.extend_from_slice(extra);
        f
    }

    /// The MAC (hex) keyed with `secret` under `label` over the transcript, then `extra`.
    pub fn mac(&self, secret: &JobSecret, label: &str, extra: &[&[u8]]) -> String {
        to_hex(&secret.mac(label, &self.with(extra)))
    }

    /// Whether `mac` (hex) is [`Session::mac`] of `label` and `extra`, compared in constant
    /// time.
    pub fn verify(&self, secret: &JobSecret, label: &str, extra: &[&[u8]], mac: &str) -> bool {
        from_hex(mac).is_some_and(|m| secret.verify(label, &self.with(extra), &m))
    }
}

impl Peer {
    /// Send `ours`, read the peer's hello and check it: same protocol and tool version, same
    /// scenario name and hash; with [`Auth::Job`], then prove the secret both ways (see the
    /// module). Returns the peer's hello.
    ///
    /// # Errors
    /// [`BootstrapError::VersionMismatch`], [`BootstrapError::ScenarioMismatch`], [`BootstrapError::TransportMismatch`],
    /// [`BootstrapError::Refused`] when the peer does not prove the secret,
    /// [`BootstrapError::Unexpected`] when a frame is out of place, or an I/O error.
    pub fn handshake(&mut self, ours: &Hello, auth: Auth<'_>) -> Result<Hello, BootstrapError> {
        self.handshake_by(ours, auth, None).map(|(h, _)| h)
    }

    /// [`Peer::handshake`], everything due by `deadline` (a stranger that connects and says
    /// nothing is given up at the deadline).
    ///
    /// # Errors
    /// As [`Peer::handshake`]; [`BootstrapError::Timeout`] at the deadline.
    pub fn handshake_until(
        &mut self,
        ours: &Hello,
        auth: Auth<'_>,
        deadline: Instant,
    ) -> Result<Hello, BootstrapError> {
        self.handshake_by(ours, auth, Some(deadline))
            .map(|(h, _)| h)
    }

    /// [`Peer::handshake`] with [`Auth::Job`] of `secret`, also returning the [`Session`] so
    /// later frames can carry MACs bound to this connection (the rendezvous's).
    ///
    /// # Errors
    /// As [`Peer::handshake`].
    pub(crate) fn handshake_session(
        &mut self,
        ours: &Hello,
        secret: &JobSecret,
        deadline: Option<Instant>,
    ) -> Result<(Hello, Session), BootstrapError> {
        let theirs = self.hellos(ours, deadline)?;
        let session = self.prove(ours, &theirs, secret, deadline)?;
        Ok((theirs, session))
    }

    fn handshake_by(
        &mut self,
        ours: &Hello,
        auth: Auth<'_>,
        deadline: Option<Instant>,
    ) -> Result<(Hello, Option<Session>), BootstrapError> {
        match auth {
            Auth::Open => Ok((self.hellos(ours, deadline)?, None)),
            Auth::Job(secret) => self
                .handshake_session(ours, secret, deadline)
                .map(|(h, s)| (h, Some(s))),
        }
    }

    /// Send `ours`, take and check the peer's hello.
    fn hellos(&mut self, ours: &Hello, deadline: Option<Instant>) -> Result<Hello, BootstrapError> {
        self.send(&Frame::Hello(ours.clone()))?;
        let theirs = match self.recv_by("waiting for the peer's hello", deadline)? {
            Frame::Hello(h) => h,
            other => {
                return Err(BootstrapError::Unexpected {
                    peer: self.peer,
                    expected: "hello",
                    got: other.kind(),
                })
            }
        };
        if theirs.protocol != ours.protocol || theirs.tool_version != ours.tool_version {
            return Err(BootstrapError::VersionMismatch {
                ours: Box::new(ours.clone()),
                theirs: Box::new(theirs),
                peer: self.peer,
            });
        }
        if theirs.scenario == ours.scenario
            && theirs.scenario_hash == ours.scenario_hash
            && theirs.transport != ours.transport
        {
            return Err(BootstrapError::TransportMismatch {
                ours: Box::new(ours.clone()),
                theirs: Box::new(theirs),
                peer: self.peer,
            });
        }
        if theirs.scenario != ours.scenario || theirs.scenario_hash != ours.scenario_hash {
            return Err(BootstrapError::ScenarioMismatch {
                ours: Box::new(ours.clone()),
                theirs: Box::new(theirs),
                peer: self.peer,
            });
        }
        Ok(theirs)
    }

    /// Nonces each way, then the proofs, the acceptor's first (see the module).
    fn prove(
        &mut self,
        ours: &Hello,
        theirs: &Hello,
        secret: &JobSecret,
        deadline: Option<Instant>,
    ) -> Result<Session, BootstrapError> {
        let (peer, rank) = (self.peer, Some(theirs.rank));
        let refuse = |reason: &str| BootstrapError::Refused {
            peer,
            rank,
            reason: reason.to_string(),
        };
        let mine = random_bytes::<NONCE_BYTES>()?;
        self.send(&Frame::Challenge {
            nonce: to_hex(&mine),
        })?;
        let Frame::Challenge { nonce } = self.expect_by("challenge", deadline)? else {
            unreachable!("expect returns the kind asked for")
        };
        let Some(nonce) = from_hex(&nonce).filter(|n| n.len() == NONCE_BYTES) else {
            return Err(refuse("sent a malformed nonce"));
        };
        if nonce == mine {
            return Err(refuse(
                "sent back this side's own nonce (a reflection, not a rank of this job)",
            ));
        }
        let session = if self.accepted {
            Session::new(&mine, &nonce, ours, theirs)?
        } else {
            Session::new(&nonce, &mine, theirs, ours)?
        };
        let (my_label, their_label) = if self.accepted {
            (LABEL_ACCEPTOR, LABEL_CONNECTOR)
        } else {
            (LABEL_CONNECTOR, LABEL_ACCEPTOR)
        };
        let proof = session.mac(secret, my_label, &[]);
        let check = |mac: &str| {
            if mac == proof {
                Err(refuse(
                    "sent back this side's own proof (a reflection, not a rank of this job)",
                ))
            } else if !session.verify(secret, their_label, &[], mac) {
                Err(refuse(
                    "no valid MAC over the handshake: it does not hold this job's secret",
                ))
            } else {
                Ok(())
            }
        };
        if self.accepted {
            self.send(&Frame::Proof { mac: proof.clone() })?;
            let mac = match self.expect_by("proof", deadline) {
                Ok(Frame::Proof { mac }) => mac,
                Ok(_) => unreachable!("expect returns the kind asked for"),
                Err(BootstrapError::PeerClosed { .. }) => {
                    return Err(refuse(
                        "closed the connection on this side's proof (a rank with another job \
                         secret refuses it)",
                    ))
                }
                Err(e) => return Err(e),
            };
            check(&mac)?;
        } else {
            let Frame::Proof { mac } = self.expect_by("proof", deadline)? else {
                unreachable!("expect returns the kind asked for")
            };
            check(&mac)?;
            self.send(&Frame::Proof { mac: proof })?;
        }
        Ok(session)
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
