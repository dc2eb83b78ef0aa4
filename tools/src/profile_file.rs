//! Host profiles as files: a fitted profile is written as the `sim: { host: ... }` block a
//! scenario takes, so it can be pasted under a scenario's `sim:` unchanged, and read back
//! wherever the command line takes a profile (`--host-profile FILE`).
//!
//! ```yaml
//! # (comments: how the profile was fitted)
//! sim:
//!   host:
//!     profile: rxe-guest
//!     post-send-wr: 612ns
//!     nic-tx-byte: 10250ps
//! ```
//!
//! Every cost the file names overrides the one of `profile` (the base); a cost it leaves out
//! keeps the base's value, as in a scenario ([`xrdma_sim::HostModel`]). Costs are written in
//! whole nanoseconds, or in picoseconds when they are not whole nanoseconds, so a file read
//! back gives exactly the model that was written.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use xrdma::Span;
use xrdma_sim::HostModel;

/// The file's shape: `sim:` holding only `host:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    sim: SimPart,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SimPart {
    host: BTreeMap<String, serde_yaml_ng::Value>,
}

/// A cost as the file writes it: whole ns as `Nns`, else `Nps`.
pub fn format_cost(v: Span) -> String {
    let ps = v.as_ps();
    if ps % 1000 == 0 {
        format!("{}ns", ps / 1000)
    } else {
        format!("{ps}ps")
    }
}

/// The text of a profile file for `model`: the comment lines `header` (each written as
/// `# line`), then `sim:`, `host:`, `profile:` (the base's name) and every cost that differs
/// from the base's, in [`HostModel::COST_KEYS`] order (every cost when the model's name is
/// not a built-in profile).
pub fn to_yaml(model: &HostModel, header: &[String]) -> String {
    let mut o = String::new();
    for line in header {
        // Writing into a String cannot fail.
        let _ = writeln!(o, "# {line}");
    }
    let _ = writeln!(o, "sim:\n  host:\n    profile: {}", model.name());
    let keys = model.overridden();
    for (key, value) in model.costs() {
        if keys.contains(&key) {
            let _ = writeln!(o, "    {key}: {}", format_cost(value));
        }
    }
    o
}

/// Reads a profile from `text` (see the module doc); `what` names it in errors.
///
/// # Errors
/// Not YAML of the file's shape, an unknown profile or cost, a cost without a unit or above
/// [`xrdma_sim::MAX_COST`].
pub fn from_yaml(text: &str, what: &str) -> Result<HostModel> {
    let file: ProfileFile = serde_yaml_ng::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "{what}: not a host profile file (`sim: {{ host: ... }}`): {}",
            xrdma_scenario::without_long_quotes(&e.to_string())
        )
    })?;
    let mut costs = file.sim.host;
    let name = match costs.remove("profile") {
        Some(serde_yaml_ng::Value::String(s)) => s,
        Some(_) => bail!("{what}: sim.host.profile must be a profile name"),
        None => "ideal".into(),
    };
    let mut model =
        HostModel::from_profile(name.trim()).with_context(|| format!("{what}: sim.host"))?;
    for (key, value) in costs {
        let serde_yaml_ng::Value::String(text) = value else {
            bail!("{what}: sim.host.{key} must be a time with a unit, such as `250ns`");
        };
        let span = xrdma_scenario::units::parse_time(&text)
            .with_context(|| format!("{what}: sim.host.{key}"))?;
        model
            .set_cost(&key, span)
            .with_context(|| format!("{what}: sim.host"))?;
    }
    Ok(model)
}

/// Reads the profile file at `path`.
///
/// # Errors
/// The file cannot be read, or [`from_yaml`]'s errors.
pub fn load(path: &Path) -> Result<HostModel> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    from_yaml(&text, &path.display().to_string())
}

/// The host model `arg` names: a built-in profile (`ideal`, `connectx6`, `rxe-guest`), or
/// else a profile file (see the module doc).
///
/// # Errors
/// Neither a built-in profile nor a readable profile file (the message lists the profiles).
pub fn resolve(arg: &str) -> Result<HostModel> {
    let path = Path::new(arg);
    match HostModel::from_profile(arg) {
        Ok(m) => Ok(m),
        // Written as a file (a directory part or a YAML extension): say the file is missing.
        Err(e) if !path.exists() && looks_like_a_file(arg) => Err(anyhow::anyhow!(
            "no host profile file {arg}: it does not exist ({e})"
        )),
        Err(e) if !path.exists() => Err(e.into()),
        Err(_) => load(path),
    }
}

/// Whether `arg` is written as a file's path rather than a profile's name.
fn looks_like_a_file(arg: &str) -> bool {
    arg.contains(std::path::MAIN_SEPARATOR) || arg.ends_with(".yaml") || arg.ends_with(".yml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_profile_file_is_named_as_a_missing_file() {
        let e = format!("{:#}", resolve("/nonexistent/fit.yaml").unwrap_err());
        assert!(
            e.starts_with("no host profile file /nonexistent/fit.yaml: it does not exist"),
            "{e}"
        );
        let e = format!("{:#}", resolve("fitted.yml").unwrap_err());
        assert!(e.contains("no host profile file fitted.yml"), "{e}");
        // A name that is no profile is still reported as one.
        let e = format!("{:#}", resolve("cx7").unwrap_err());
        assert!(
            e.starts_with("no host profile `cx7`: expected one of"),
            "{e}"
        );
    }

    #[test]
    fn a_written_profile_reads_back_exactly() {
        let mut m = HostModel::from_profile("rxe-guest").unwrap();
        m.set_cost("doorbell", Span::from_ns(1234)).unwrap();
        m.set_cost("nic-tx-byte", Span::from_ps(10_250)).unwrap();
        let text = to_yaml(&m, &["fitted".into()]);
        assert_eq!(
            text,
            "# fitted\nsim:\n  host:\n    profile: rxe-guest\n    doorbell: 1234ns\n    \
             nic-tx-byte: 10250ps\n"
        );
        assert_eq!(from_yaml(&text, "x").unwrap(), m);
    }

    #[test]
    fn refuses_what_a_scenario_refuses() {
        let e = from_yaml("sim:\n  host:\n    profile: cx6\n", "f.yaml").unwrap_err();
        assert!(format!("{e:#}").contains("no host profile `cx6`"), "{e:#}");
        let e = from_yaml("sim:\n  host:\n    dorbell: 1ns\n", "f.yaml").unwrap_err();
        assert!(
            format!("{e:#}").contains("`dorbell` is not a host cost"),
            "{e:#}"
        );
        let e = from_yaml("sim:\n  host:\n    doorbell: 5\n", "f.yaml").unwrap_err();
        assert!(format!("{e:#}").contains("sim.host.doorbell"), "{e:#}");
        let e = from_yaml("sim:\n  link-rate: 1Gbps\n  host: {}\n", "f.yaml").unwrap_err();
        assert!(
            format!("{e:#}").contains("not a host profile file"),
            "{e:#}"
        );
        assert!(resolve("no-such-profile-or-file").is_err());
        assert_eq!(resolve("connectx6").unwrap().name(), "connectx6");
    }
}
