//! `sim.host:` — the simulator's host model: what posting, doorbells, DMA, completions,
//! polling and the application cost at each host ([`xrdma_sim::HostModel`]). A profile name,
//! or a profile with some costs overridden, each override one key:
//!
//! ```yaml
//! sim:
//!   host: connectx6           # a built-in profile: ideal (default), connectx6, rxe-guest
//! ---
//! sim:
//!   host: { profile: connectx6, doorbell: 150ns, app-recv-message: 1us }
//! ```
//!
//! The profiles and every cost's meaning and default live in the simulator
//! ([`xrdma_sim::profiles`], [`xrdma_sim::HostModel::COST_KEYS`]); this section only picks
//! and overrides. A mapping without `profile` starts from `ideal`. On a device the host is
//! real: the verbs backend ignores the block, as it ignores the rest of `sim:`.

use crate::check::{field_error, FieldError};
use crate::units::Span;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use xrdma_sim::{HostModel, HostModelError};

/// `sim.host` as written: a profile name (checked as it is read), or a mapping.
pub(crate) enum RawHost {
    /// `host: NAME`, resolved.
    Named(HostModel),
    /// `host: { profile, <cost>: <time>, ... }`.
    Mapping(RawHostMap),
}

/// The `host:` mapping as written.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct RawHostMap {
    profile: Option<String>,
    /// Every other key: a cost override.
    #[serde(flatten)]
    costs: BTreeMap<String, serde_yaml_ng::Value>,
}

/// Checks `sim.host`: the profile named, with each override applied.
pub(crate) fn check_host(raw: RawHost) -> Result<HostModel, FieldError> {
    let raw = match raw {
        RawHost::Named(model) => return Ok(model),
        RawHost::Mapping(m) => m,
    };
    let name = raw.profile.as_deref().unwrap_or("ideal").trim();
    let mut model =
        HostModel::from_profile(name).map_err(|e| field_error("profile", e.to_string()))?;
    for (key, value) in raw.costs {
        // The key as the simulator spells it, so an error can name it.
        let Some(&known) = HostModel::COST_KEYS.iter().find(|k| **k == key) else {
            return Err(FieldError::mapping(
                HostModelError::UnknownCost { key }.to_string() + " (or `profile`)",
            ));
        };
        let span = Span::deserialize(value).map_err(|e| field_error(known, e.to_string()))?;
        model
            .set_cost(known, span.0)
            .map_err(|e| field_error(known, e.to_string()))?;
    }
    Ok(model)
}

struct HostVisitor;

impl<'de> Visitor<'de> for HostVisitor {
    type Value = RawHost;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a host profile name such as `connectx6`, or a mapping `{ profile, <cost>: <time> }`",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawHost, E> {
        HostModel::from_profile(v.trim())
            .map(RawHost::Named)
            .map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawHost, A::Error> {
        RawHostMap::deserialize(MapAccessDeserializer::new(map)).map(RawHost::Mapping)
    }
}

impl<'de> Deserialize<'de> for RawHost {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(HostVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrdma::Span as Dur;

    fn parse(yaml: &str) -> Result<HostModel, String> {
        let raw = serde_yaml_ng::from_str::<RawHost>(yaml).map_err(|e| e.to_string())?;
        check_host(raw).map_err(|e| e.message)
    }

    #[test]
    fn a_name_or_a_profile_with_overrides() {
        let cx6 = HostModel::from_profile("connectx6").unwrap();
        assert_eq!(parse("connectx6").unwrap(), cx6);
        let m = parse("{ profile: connectx6, doorbell: 150ns, app-recv-message: 1us }").unwrap();
        assert_eq!(m.doorbell, Dur::from_ns(150));
        assert_eq!(m.app_recv_message, Dur::from_us(1));
        assert_eq!(m.overridden(), vec!["doorbell", "app-recv-message"]);
        assert_eq!(m.post_send_wr, cx6.post_send_wr);
        // Without a profile: the ideal host with the costs given.
        let m = parse("{ turn: 2us }").unwrap();
        assert_eq!((m.name(), m.turn), ("ideal", Dur::from_us(2)));
        assert_eq!(m.overridden(), vec!["turn"]);
    }

    #[test]
    fn refuses_unknown_names_keys_and_values() {
        let e = parse("cx6").unwrap_err();
        assert!(
            e.contains("no host profile `cx6`") && e.contains("`rxe-guest`"),
            "{e}"
        );
        let e = parse("{ profile: connectx6, dorbell: 1ns }").unwrap_err();
        assert!(
            e.contains("`dorbell` is not a host cost") && e.contains("`doorbell`"),
            "{e}"
        );
        let e = parse("{ doorbell: 150 }").unwrap_err();
        assert!(e.contains("`150` has no unit"), "{e}");
        let e = parse("{ doorbell: 2s }").unwrap_err();
        assert!(e.contains("`doorbell` = 2.000 s is above the"), "{e}");
    }
}
