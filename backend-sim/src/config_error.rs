//! The error of a simulator configuration that does not validate; below the modules whose
//! parts of the configuration it reports on ([`crate::SimConfig`], DCQCN, the topology).

use thiserror::Error;

/// Why a [`SimConfig`](crate::SimConfig) was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SimConfigError {
    /// A field has a value the simulator cannot run with.
    #[error("invalid simulator config: `{field}`: {reason}")]
    Invalid {
        /// The field name (dotted for nested fields, e.g. `ecn.pmax`).
        field: &'static str,
        /// What is wrong, with the offending values.
        reason: String,
    },
}
