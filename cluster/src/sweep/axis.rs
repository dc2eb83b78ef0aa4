//! Sweep axes: parsing `--axis NAME=V1,V2,...`, the cartesian product of several axes, and
//! applying one point's values to the base scenario.

use std::fmt;

use xrdma::Span;
use xrdma_scenario::units::{parse_size, parse_time, UnitError};
use xrdma_scenario::{Scenario, Stack, Workload};

use xrdma_runner::request::Backend;

/// A setting a sweep can vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AxisKind {
    /// `fan-in`: the incast's sender count (`workload.incast.senders`), ≥ 1.
    FanIn,
    /// `size`: every entry of the message list gets this size in bytes (counts are kept).
    Size,
    /// `beta`: `xrdma.beta`, the window's multiplicative decrease on ECN.
    Beta,
    /// `initial-window`: `xrdma.initial-window`, bytes.
    InitialWindow,
    /// `dcqcn`: `on` = `sim.dcqcn` as in the base scenario or `{}` (defaults) when absent;
    /// `off` = no DCQCN.
    Dcqcn,
    /// `pfc`: `on` = `sim.pfc` as in the base scenario or `{}` (computed thresholds) when
    /// absent; `off` = a lossy fabric.
    Pfc,
    /// `backend`: `sim`, `verbs` or `sockets`.
    Backend,
    /// `seed`: `sim.seed` (also the payload seed on the verbs backend).
    Seed,
    /// `stack`: the message stack (`xrdma`, `tcp`, `dctcp`).
    Stack,
    /// `rto-min`: `tcp.rto-min`, the TCP stacks' lower bound of the retransmission timeout.
    RtoMin,
    /// `delayed-ack`: `tcp.delayed-ack`, the TCP receivers' delayed-ACK timer.
    DelayedAck,
}

/// Every axis with its name, in the order they are listed in errors and help.
pub const AXES: [(AxisKind, &str); 11] = [
    (AxisKind::FanIn, "fan-in"),
    (AxisKind::Size, "size"),
    (AxisKind::Beta, "beta"),
    (AxisKind::InitialWindow, "initial-window"),
    (AxisKind::Dcqcn, "dcqcn"),
    (AxisKind::Pfc, "pfc"),
    (AxisKind::Backend, "backend"),
    (AxisKind::Seed, "seed"),
    (AxisKind::Stack, "stack"),
    (AxisKind::RtoMin, "rto-min"),
    (AxisKind::DelayedAck, "delayed-ack"),
];

impl AxisKind {
    /// The scenario key this axis sets in `sc` (a path from the top), `None` for the backend
    /// axis, which sets no key.
    pub fn scenario_key(self, sc: &Scenario) -> Option<Vec<&'static str>> {
        Some(match self {
            AxisKind::FanIn => vec!["workload", sc.workload.kind(), sc.workload.senders_key()],
            AxisKind::Size => vec!["workload", "incast", "messages"],
            AxisKind::Beta => vec!["xrdma", "beta"],
            AxisKind::InitialWindow => vec!["xrdma", "initial-window"],
            AxisKind::Dcqcn => vec!["sim", "dcqcn"],
            AxisKind::Pfc => vec!["sim", "pfc"],
            AxisKind::Seed => vec!["sim", "seed"],
            AxisKind::Stack => vec!["stack"],
            AxisKind::RtoMin => vec!["tcp", "rto-min"],
            AxisKind::DelayedAck => vec!["tcp", "delayed-ack"],
            AxisKind::Backend => return None,
        })
    }

    /// The axis name as written on the command line.
    pub fn name(self) -> &'static str {
        AXES.iter()
            .find(|(k, _)| *k == self)
            .map_or("?", |(_, n)| n)
    }

    fn from_name(name: &str) -> Option<AxisKind> {
        AXES.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }
}

/// One value of an axis, parsed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AxisValue {
    /// A count (fan-in).
    Count(u32),
    /// Bytes (size, initial-window).
    Bytes(u64),
    /// A ratio (β).
    Ratio(f64),
    /// On or off (dcqcn, pfc).
    Switch(bool),
    /// A backend.
    Backend(Backend),
    /// A seed.
    Seed(u64),
    /// A message stack.
    Stack(Stack),
    /// A duration (rto-min).
    Span(Span),
}

/// A parsed axis: its kind, the values and their text as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// What it varies.
    pub kind: AxisKind,
    /// The values, in the order given.
    pub values: Vec<AxisValue>,
    /// The values as written (trimmed), same order; they name point directories.
    pub texts: Vec<String>,
}

/// A bad `--axis` argument; nothing has run.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisError {
    /// No `=` in the argument.
    Syntax(String),
    /// The name is not an axis.
    UnknownName(String),
    /// A value does not parse for the axis.
    BadValue {
        /// The axis name.
        axis: &'static str,
        /// The value as written.
        value: String,
        /// Why.
        reason: String,
    },
    /// The same axis twice.
    Repeated(&'static str),
    /// No value, or the same value twice.
    Values {
        /// The axis name.
        axis: &'static str,
        /// Why.
        reason: String,
    },
}

fn valid_names() -> String {
    AXES.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for AxisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AxisError::Syntax(s) => write!(
                f,
                "--axis `{s}`: expected NAME=V1,V2,... with NAME one of {}",
                valid_names()
            ),
            AxisError::UnknownName(n) => write!(
                f,
                "--axis: unknown axis `{n}`; the axes are {}",
                valid_names()
            ),
            AxisError::BadValue {
                axis,
                value,
                reason,
            } => write!(f, "--axis {axis}: `{value}`: {reason}"),
            AxisError::Repeated(a) => write!(f, "--axis {a} is given twice; give its values once"),
            AxisError::Values { axis, reason } => write!(f, "--axis {axis}: {reason}"),
        }
    }
}

impl std::error::Error for AxisError {}

fn parse_value(kind: AxisKind, text: &str) -> Result<AxisValue, String> {
    let unit = |e: UnitError| e.to_string();
    match kind {
        AxisKind::FanIn => match text.parse::<u32>() {
            Ok(n) if (1..u32::MAX).contains(&n) => Ok(AxisValue::Count(n)),
            _ => Err("expected a sender count, a whole number ≥ 1".into()),
        },
        AxisKind::Size | AxisKind::InitialWindow => match parse_size(text).map_err(unit)? {
            0 => Err("must be at least 1 byte".into()),
            b => Ok(AxisValue::Bytes(b)),
        },
        AxisKind::Beta => match text.parse::<f64>() {
            Ok(b) if (0.5..=0.8).contains(&b) => Ok(AxisValue::Ratio(b)),
            Ok(b) => Err(format!("{b} is outside [0.5, 0.8]")),
            Err(_) => Err("expected a number within [0.5, 0.8]".into()),
        },
        AxisKind::Dcqcn | AxisKind::Pfc => match text {
            "on" => Ok(AxisValue::Switch(true)),
            "off" => Ok(AxisValue::Switch(false)),
            _ => Err("expected `on` or `off`".into()),
        },
        AxisKind::Backend => text.parse::<Backend>().map(AxisValue::Backend),
        AxisKind::Seed => text
            .parse::<u64>()
            .map(AxisValue::Seed)
            .map_err(|_| "expected a whole number".into()),
        AxisKind::Stack => text.parse::<Stack>().map(AxisValue::Stack),
        AxisKind::RtoMin => match parse_time(text).map_err(unit)? {
            Span::ZERO => Err("must be above 0".into()),
            t => Ok(AxisValue::Span(t)),
        },
        AxisKind::DelayedAck => parse_time(text).map(AxisValue::Span).map_err(unit),
    }
}

/// Parses one `--axis NAME=V1,V2,...` argument. Sizes take the scenario units (`64KiB`, `1MiB`,
/// a bare number is bytes); β must lie within [0.5, 0.8] as in the scenario format.
///
/// # Errors
/// [`AxisError`]: no `=`, an unknown name (the message lists the valid ones), a value that does
/// not parse, no value, or a value given twice.
pub fn parse_axis(spec: &str) -> Result<Axis, AxisError> {
    let (name, values) = spec
        .split_once('=')
        .ok_or_else(|| AxisError::Syntax(spec.to_string()))?;
    let kind = AxisKind::from_name(name.trim())
        .ok_or_else(|| AxisError::UnknownName(name.trim().to_string()))?;
    let mut axis = Axis {
        kind,
        values: Vec::new(),
        texts: Vec::new(),
    };
    for text in values.split(',').map(str::trim) {
        if text.is_empty() {
            return Err(AxisError::Values {
                axis: kind.name(),
                reason: "an empty value; write NAME=V1,V2,...".into(),
            });
        }
        let v = parse_value(kind, text).map_err(|reason| AxisError::BadValue {
            axis: kind.name(),
            value: text.to_string(),
            reason,
        })?;
        if axis.values.contains(&v) {
            return Err(AxisError::Values {
                axis: kind.name(),
                reason: format!("`{text}` is given twice"),
            });
        }
        axis.values.push(v);
        axis.texts.push(text.to_string());
    }
    Ok(axis)
}

/// Parses every `--axis` argument and checks that no axis repeats.
///
/// # Errors
/// The first [`AxisError`]; [`AxisError::Repeated`] for an axis given twice.
pub fn parse_axes<S: AsRef<str>>(specs: &[S]) -> Result<Vec<Axis>, AxisError> {
    let mut axes: Vec<Axis> = Vec::new();
    for s in specs {
        let a = parse_axis(s.as_ref())?;
        if axes.iter().any(|b| b.kind == a.kind) {
            return Err(AxisError::Repeated(a.kind.name()));
        }
        axes.push(a);
    }
    Ok(axes)
}

/// The value indices of each point of the cartesian product of `axes`, the last axis varying
/// fastest (like nested loops in the order the axes are given). `Π |values|` points; one empty
/// point when `axes` is empty.
pub fn cartesian(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut points = vec![Vec::new()];
    for a in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                (0..a.values.len()).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    points
}

/// Applies `value` of `kind` to `sc` (and, for the backend axis, to `backend`).
///
/// # Errors
/// A fan-in that leaves the base scenario's receiver outside the hosts `0..=senders`, or a
/// size axis on a workload that is not an incast.
pub fn apply(
    sc: &mut Scenario,
    backend: &mut Backend,
    kind: AxisKind,
    value: AxisValue,
) -> Result<(), String> {
    match (kind, value) {
        (AxisKind::FanIn, AxisValue::Count(n)) => {
            // The senders of an incast or open-loop workload, the clients of an echo.
            let (count, receiver) = match &mut sc.workload {
                Workload::Incast(i) => (&mut i.senders, i.receiver),
                Workload::OpenLoop(o) => (&mut o.senders, o.receiver),
                Workload::Echo(e) => (&mut e.clients, e.server),
            };
            if receiver > n {
                return Err(format!(
                    "fan-in {n}: the base scenario's receiver is host {receiver}, but with {n} \
                     senders the hosts are 0..={n}"
                ));
            }
            *count = n;
        }
        (AxisKind::Size, AxisValue::Bytes(b)) => {
            let Workload::Incast(incast) = &mut sc.workload else {
                return Err(format!(
                    "the size axis sets an incast's message sizes; this scenario's workload \
                     is {}",
                    sc.workload.kind()
                ));
            };
            for m in &mut incast.messages {
                m.size = b;
            }
        }
        (AxisKind::Beta, AxisValue::Ratio(b)) => sc.xrdma.beta = b,
        (AxisKind::InitialWindow, AxisValue::Bytes(b)) => sc.xrdma.initial_window = b,
        (AxisKind::Dcqcn, AxisValue::Switch(on)) => {
            let mut s = sc.sim_or_default();
            s.dcqcn = on.then(|| s.dcqcn.unwrap_or_default());
            sc.sim = Some(s);
        }
        (AxisKind::Pfc, AxisValue::Switch(on)) => {
            let mut s = sc.sim_or_default();
            s.pfc = on.then(|| s.pfc.unwrap_or_default());
            sc.sim = Some(s);
        }
        (AxisKind::Backend, AxisValue::Backend(b)) => *backend = b,
        (AxisKind::Seed, AxisValue::Seed(seed)) => {
            let mut s = sc.sim_or_default();
            s.seed = seed;
            sc.sim = Some(s);
        }
        (AxisKind::Stack, AxisValue::Stack(stack)) => sc.stack = stack,
        (AxisKind::RtoMin, AxisValue::Span(t)) => {
            if t > sc.tcp.rto_max {
                return Err(format!(
                    "rto-min {t} is above the base scenario's tcp.rto-max ({})",
                    sc.tcp.rto_max
                ));
            }
            sc.tcp.rto_min = t;
        }
        (AxisKind::DelayedAck, AxisValue::Span(t)) => sc.tcp.delayed_ack = t,
        (k, v) => return Err(format!("value {v:?} does not belong to axis {}", k.name())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_and_rto_min_axes_set_the_scenario_and_refuse_what_is_not_one() {
        let a = parse_axis("stack=xrdma,tcp,dctcp").unwrap();
        assert_eq!(
            a.values,
            [Stack::Xrdma, Stack::Tcp, Stack::Dctcp].map(AxisValue::Stack)
        );
        let e = parse_axis("stack=udp").unwrap_err().to_string();
        assert!(e.contains("`udp`") && e.contains("`dctcp`"), "{e}");
        let r = parse_axis("rto-min=1ms,200ms").unwrap();
        assert_eq!(
            r.values,
            [Span::from_ms(1), Span::from_ms(200)].map(AxisValue::Span)
        );
        assert!(parse_axis("rto-min=0s").is_err());
        let mut sc = xrdma_scenario::parse(
            "name: x\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages: [ { size: 1 } ]\n",
            std::path::Path::new("x.yaml"),
        )
        .unwrap();
        let mut backend = Backend::Sim;
        apply(
            &mut sc,
            &mut backend,
            AxisKind::Stack,
            AxisValue::Stack(Stack::Dctcp),
        )
        .unwrap();
        apply(&mut sc, &mut backend, AxisKind::RtoMin, r.values[0]).unwrap();
        assert_eq!((sc.stack, sc.tcp.rto_min), (Stack::Dctcp, Span::from_ms(1)));
        let too_long = AxisValue::Span(Span::from_ms(200_000));
        assert!(apply(&mut sc, &mut backend, AxisKind::RtoMin, too_long).is_err());
        let d = parse_axis("delayed-ack=0s,40ms").unwrap();
        apply(&mut sc, &mut backend, AxisKind::DelayedAck, d.values[1]).unwrap();
        assert_eq!(sc.tcp.delayed_ack, Span::from_ms(40));
    }

    #[test]
    fn parses_units_and_switches() {
        let a = parse_axis("size=64KiB,1MiB").unwrap();
        // 64 KiB = 64·1024 = 65536 B; 1 MiB = 1024·1024 = 1048576 B.
        assert_eq!(
            a.values,
            vec![AxisValue::Bytes(65_536), AxisValue::Bytes(1_048_576)]
        );
        assert_eq!(a.texts, vec!["64KiB", "1MiB"]);
        assert_eq!(
            parse_axis("pfc=on,off").unwrap().values,
            vec![AxisValue::Switch(true), AxisValue::Switch(false)]
        );
        assert_eq!(
            parse_axis("beta=0.5, 0.8").unwrap().values,
            vec![AxisValue::Ratio(0.5), AxisValue::Ratio(0.8)]
        );
    }

    #[test]
    fn errors_name_the_valid_axes() {
        let e = parse_axis("fanin=2,4").unwrap_err().to_string();
        assert!(e.contains("unknown axis `fanin`"), "{e}");
        for (_, n) in AXES {
            assert!(e.contains(n), "{e} lacks {n}");
        }
        let e = parse_axis("fan-in").unwrap_err().to_string();
        assert!(e.contains("NAME=V1,V2"), "{e}");
        let e = parse_axis("beta=0.9").unwrap_err().to_string();
        assert!(e.contains("outside [0.5, 0.8]"), "{e}");
        let e = parse_axis("size=64Kb").unwrap_err().to_string();
        assert!(e.starts_with("--axis size: `64Kb`"), "{e}");
        let e = parse_axis("fan-in=0").unwrap_err().to_string();
        assert!(e.contains("≥ 1"), "{e}");
        let e = parse_axis("dcqcn=yes").unwrap_err().to_string();
        assert!(e.contains("`on` or `off`"), "{e}");
        let e = parse_axis("seed=1,,2").unwrap_err().to_string();
        assert!(e.contains("empty value"), "{e}");
        let e = parse_axis("seed=1,1").unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
        let e = parse_axes(&["seed=1", "seed=2"]).unwrap_err();
        assert_eq!(e, AxisError::Repeated("seed"));
    }

    #[test]
    fn cartesian_product_last_axis_fastest() {
        let axes = parse_axes(&["fan-in=2,4,8", "beta=0.5,0.8"]).unwrap();
        let pts = cartesian(&axes);
        // 3 × 2 = 6 points, beta varying fastest.
        assert_eq!(
            pts,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![1, 0],
                vec![1, 1],
                vec![2, 0],
                vec![2, 1]
            ]
        );
        assert_eq!(cartesian(&[]), vec![Vec::<usize>::new()]);
    }
}
