//! The meaning the worker gives the tag the core carries with each message
//! ([`xrdma::Endpoint::send_tagged`]): 0 a plain message, `1..2^31` a call's request, a
//! request's id with bit 31 set its reply ([`crate::rpc`]).

/// The tag bit that marks a reply.
pub(crate) const REPLY: u32 = 1 << 31;

/// What a message's tag makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tagged {
    /// A plain message.
    Plain,
    /// A request, with its call id.
    Request(u32),
    /// The reply to the call with this id.
    Reply(u32),
}

impl Tagged {
    /// What a message tagged `tag` is.
    pub(crate) fn of(tag: u32) -> Tagged {
        match tag {
            0 => Tagged::Plain,
            t if t & REPLY == 0 => Tagged::Request(t),
            t => Tagged::Reply(t & !REPLY),
        }
    }

    /// The tag of the answer to a message tagged `tag`: a reply to a request, plain to a
    /// plain message.
    pub(crate) fn answer(tag: u32) -> u32 {
        match Tagged::of(tag) {
            Tagged::Request(id) => id | REPLY,
            _ => 0,
        }
    }
}
