//! The `sim.topology:` block: the shape of the simulated fabric.
//!
//! ```yaml
//! topology: { star: {} }                                   # every host on one switch (default)
//! topology: { leaf-spine: { leaves: 4, spines: 2, hosts-per-leaf: 16, uplink-rate: 100Gbps } }
//! topology: { fat-tree: { k: 16 } }                        # k³/4 = 1024 hosts
//! ```

use crate::check::FieldError;
use crate::units::Rate;
use serde::{Deserialize, Deserializer};

/// The fabric's shape; the simulator checks the counts (even `k`, switch limits) and that the
/// workload's hosts fit.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum TopologySection {
    /// Every host on one switch.
    #[default]
    Star,
    /// Two tiers: leaves with `hosts_per_leaf` hosts each, every leaf linked to every spine.
    LeafSpine {
        /// Leaf switches.
        leaves: u32,
        /// Spine switches.
        spines: u32,
        /// Hosts per leaf.
        hosts_per_leaf: u32,
        /// Leaf–spine link rate, bits per second; `None` = the host link rate.
        uplink_rate_bps: Option<u64>,
    },
    /// Three-tier k-ary fat-tree (Al-Fares et al., SIGCOMM 2008).
    FatTree {
        /// Switch radix (even).
        k: u32,
        /// Hosts per edge switch; `None` = k/2 (no oversubscription).
        hosts_per_edge: Option<u32>,
    },
}

/// The `topology:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a topology `{ star | leaf-spine | fat-tree: ... }`)"
)]
pub(crate) struct RawTopology {
    /// Present (as `star:`, `star: {}` or `star: ~`) or not.
    #[serde(default, deserialize_with = "present")]
    star: bool,
    leaf_spine: Option<RawLeafSpine>,
    fat_tree: Option<RawFatTree>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStar {}

/// A key that takes no parameters: written with an empty mapping or no value at all.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Option::<RawStar>::deserialize(d).map(|_| true)
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawLeafSpine {
    leaves: u32,
    spines: u32,
    hosts_per_leaf: u32,
    uplink_rate: Option<Rate>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawFatTree {
    k: u32,
    hosts_per_edge: Option<u32>,
}

/// Checks that exactly one topology kind is given.
pub(crate) fn check_topology(raw: RawTopology) -> Result<TopologySection, FieldError> {
    let given = [raw.star, raw.leaf_spine.is_some(), raw.fat_tree.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(FieldError::mapping(
            "give exactly one topology kind: `star`, `leaf-spine` or `fat-tree`",
        ));
    }
    Ok(if let Some(l) = raw.leaf_spine {
        TopologySection::LeafSpine {
            leaves: l.leaves,
            spines: l.spines,
            hosts_per_leaf: l.hosts_per_leaf,
            uplink_rate_bps: l.uplink_rate.map(|r| r.0),
        }
    } else if let Some(f) = raw.fat_tree {
        TopologySection::FatTree {
            k: f.k,
            hosts_per_edge: f.hosts_per_edge,
        }
    } else {
        TopologySection::Star
    })
}
