//! What the application hands the endpoint to send: messages queued per connection, normal
//! ones at the back, urgent ones ahead of every normal message not yet started.

use super::timing::Stamps;
use super::{ConnState, Endpoint, OutMessage};
use crate::error::{ConnId, XrdmaError};
use crate::{MsgId, Time};
use bytes::Bytes;

impl Endpoint {
    /// Queue a message on `conn`. It is sent eagerly or by rendezvous, fragmented and posted
    /// as the window allows; the application hears [`crate::Event::Sent`] once all of it is ACKed.
    ///
    /// # Errors
    /// [`XrdmaError::UnknownConnection`], [`XrdmaError::StaleConnection`],
    /// [`XrdmaError::NotEstablished`], [`XrdmaError::ConnectionFailed`],
    /// [`XrdmaError::ConnectionClosed`], [`XrdmaError::MessageTooLarge`].
    pub fn send(&mut self, now: Time, conn: ConnId, data: Bytes) -> Result<MsgId, XrdmaError> {
        self.send_tagged(now, conn, data, 0)
    }

    /// [`Endpoint::send`] with a tag the receiver gets with the message
    /// ([`crate::Event::Message::tag`]): an application's correlation id, carried in the frame
    /// header (an eager message's, or its RTS entry for a large one) at no extra byte. The
    /// core gives it no meaning.
    ///
    /// # Errors
    /// As [`Endpoint::send`].
    pub fn send_tagged(
        &mut self,
        now: Time,
        conn: ConnId,
        data: Bytes,
        tag: u32,
    ) -> Result<MsgId, XrdmaError> {
        self.enqueue(now, conn, data, tag, false)
    }

    /// [`Endpoint::send_tagged`] for a message that must not wait behind bulk traffic (a
    /// heartbeat, a lease renewal, a small control message): it is queued ahead of every
    /// message on `conn` not yet started, behind earlier urgent ones; a small one (up to
    /// [`crate::Config::eager_limit`]) even goes out between two fragments of a large message
    /// in progress, so it waits for one fragment, not a whole message. A large urgent one
    /// goes only ahead of large messages not yet announced by an RTS (the receiver grants
    /// landing buffers in announcement order), which with many queued is little. It may so
    /// arrive before messages sent earlier, and, with
    /// [`crate::Config::deliver_fragments`], between two fragments of one.
    ///
    /// # Errors
    /// As [`Endpoint::send`].
    pub fn send_urgent(
        &mut self,
        now: Time,
        conn: ConnId,
        data: Bytes,
        tag: u32,
    ) -> Result<MsgId, XrdmaError> {
        self.enqueue(now, conn, data, tag, true)
    }

    /// Queue a message at the back of `conn`'s queue, or (`urgent`) ahead of every normal
    /// message not yet started.
    fn enqueue(
        &mut self,
        now: Time,
        conn: ConnId,
        data: Bytes,
        tag: u32,
        urgent: bool,
    ) -> Result<MsgId, XrdmaError> {
        let Some(c) = self.conns.get_mut(conn) else {
            return Err(self.lookup_error(conn));
        };
        match c.state {
            ConnState::Established => {}
            ConnState::Connecting => return Err(XrdmaError::NotEstablished { conn }),
            ConnState::Failed => return Err(XrdmaError::ConnectionFailed { conn }),
            ConnState::Draining { .. } | ConnState::Closing { .. } | ConnState::Closed => {
                return Err(XrdmaError::ConnectionClosed { conn })
            }
        }
        let (len, max) = (data.len() as u64, self.cfg.max_message_size);
        if len > max {
            return Err(XrdmaError::MessageTooLarge { conn, len, max });
        }
        let id = MsgId(self.next_msg);
        self.next_msg += 1;
        // A normal message goes last; an urgent one before the first normal message none of
        // whose fragments is out. A large one also behind every announced message: the
        // receiver grants landing buffers in the order of the RTSs, and the fragments must
        // come in that order too.
        let large = len > self.cfg.eager_limit;
        let at = if urgent {
            let floor = if large {
                c.queue
                    .iter()
                    .rposition(|m| m.rts_sent)
                    .map_or(0, |i| i + 1)
            } else {
                0
            };
            c.queue
                .range(floor..)
                .position(|m| !m.urgent && m.next_off == 0)
                .map_or(c.queue.len(), |i| floor + i)
        } else {
            c.queue.len()
        };
        c.unannounced += u32::from(large);
        let m = OutMessage {
            id,
            tag,
            data,
            next_off: 0,
            rts_sent: false,
            grant: None,
            stamps: Stamps::accepted(now, at == 0),
            urgent,
        };
        if at == c.queue.len() {
            c.queue.push_back(m);
        } else {
            c.queue.insert(at, m);
        }
        self.wake_tx(conn);
        Ok(id)
    }
}
