//! The `echo` workload: closed-loop request/response between clients and one server.

use crate::check::{field_error, under, FieldError};
use crate::open_loop::check_fan_in;
use crate::traffic::{check_size_choices, check_stalls, RawSizeChoice, SizeDist, Stall, Stalls};
use crate::units::{parse_size, Size, Span};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use xrdma::Time;

/// Default limit on an echo run: 10 s of run time from the start.
pub const DEFAULT_TIME_LIMIT: xrdma::Span = xrdma::Span::from_ms(10_000);

/// The size of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseSize {
    /// As large as the request it answers (`same`, the default).
    Same,
    /// Always this many bytes (≥ 1).
    Fixed(u64),
}

/// Closed-loop request/response: hosts `0..=clients`, one of them the server. Each client keeps
/// `concurrency` requests outstanding on its connection to the server until it has issued
/// `requests`; the server answers each request as it arrives. A request is intended at the
/// start (the first `concurrency` of them) or at the moment the response freeing its slot
/// arrived (no think time); its latency runs from then until its response has fully arrived at
/// the client.
///
/// ```yaml
/// workload:
///   echo: { clients: 1, server: 0, concurrency: 1, requests: 1000, request-size: 64B }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Echo {
    /// Number of clients, ≥ 1.
    pub clients: u32,
    /// Host index of the server, in `0..=clients`.
    pub server: u32,
    /// Requests outstanding per client, ≥ 1 (default 1).
    pub concurrency: u32,
    /// Requests each client issues, ≥ 1.
    pub requests: u32,
    /// Request sizes (`request-size:` or `request-sizes:`).
    pub request_sizes: SizeDist,
    /// Response sizes (`response-size:`, default `same`).
    pub response_size: ResponseSize,
    /// When the clients issue their first requests, on the run's clock; default 0.
    pub start: Time,
    /// Hosts that stop running for a while (`stall:`).
    pub stalls: Vec<Stall>,
    /// Run time after `start` at which unfinished requests are given up (`time-limit:`,
    /// default [`DEFAULT_TIME_LIMIT`]).
    pub time_limit: xrdma::Span,
}

impl Echo {
    /// Number of hosts: `clients + 1`.
    pub fn hosts(&self) -> u32 {
        self.clients.saturating_add(1)
    }

    /// The client host indices in ascending order: every host but the server.
    pub fn client_hosts(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.hosts()).filter(move |h| *h != self.server)
    }

    /// The response size for a request of `request` bytes.
    pub fn response_for(&self, request: u64) -> u64 {
        match self.response_size {
            ResponseSize::Same => request,
            ResponseSize::Fixed(n) => n,
        }
    }

    /// The largest message either side sends, bytes.
    pub fn largest(&self) -> u64 {
        let req = self.request_sizes.largest();
        req.max(self.response_for(req))
    }
}

impl<'de> Deserialize<'de> for ResponseSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ResponseSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`same` or a size such as `4KiB`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ResponseSize, E> {
                if v.trim() == "same" {
                    return Ok(ResponseSize::Same);
                }
                match parse_size(v).map_err(E::custom)? {
                    0 => Err(E::custom("a response must be at least 1 byte")),
                    n => Ok(ResponseSize::Fixed(n)),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ResponseSize, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ResponseSize, E> {
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(V)
    }
}

/// The `echo:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (an echo workload)"
)]
pub(crate) struct RawEcho {
    clients: u32,
    server: u32,
    #[serde(default = "one")]
    concurrency: u32,
    requests: u32,
    request_size: Option<Size>,
    request_sizes: Option<Vec<RawSizeChoice>>,
    #[serde(default = "same")]
    response_size: ResponseSize,
    #[serde(default)]
    start: Span,
    #[serde(default)]
    stall: Stalls,
    time_limit: Option<Span>,
}

fn one() -> u32 {
    1
}

fn same() -> ResponseSize {
    ResponseSize::Same
}

/// Checks an echo workload: its hosts, counts, sizes, stalls and time limit.
pub(crate) fn check_echo(raw: RawEcho) -> Result<Echo, FieldError> {
    let choices = check_size_choices(raw.request_sizes).map_err(under("request-sizes"))?;
    let stalls = raw.stall.check().map_err(under("stall"))?;
    check_fan_in(raw.clients, "clients", raw.server, "server")?;
    if raw.concurrency == 0 {
        return Err(field_error("concurrency", "must be at least 1"));
    }
    if raw.requests == 0 {
        return Err(field_error("requests", "must be at least 1"));
    }
    let total = u64::from(raw.requests) * u64::from(raw.clients);
    if total as f64 > crate::open_loop::MAX_OPEN_LOOP_MESSAGES {
        return Err(field_error(
            "requests",
            format!("{total} requests in all; at most 20000000 are allowed"),
        ));
    }
    let request_sizes =
        SizeDist::from_keys(raw.request_size, choices, "request-size", "request-sizes")?;
    if let Some(t) = raw.time_limit {
        if t.0.as_ps() == 0 {
            return Err(field_error("time-limit", "must be longer than 0"));
        }
    }
    let echo = Echo {
        clients: raw.clients,
        server: raw.server,
        concurrency: raw.concurrency,
        requests: raw.requests,
        request_sizes,
        response_size: raw.response_size,
        start: Time::ZERO + raw.start.0,
        stalls,
        time_limit: raw.time_limit.map_or(DEFAULT_TIME_LIMIT, |t| t.0),
    };
    check_stalls(&echo.stalls, echo.hosts())?;
    Ok(echo)
}
