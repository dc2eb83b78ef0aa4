//! Errors of the verbs backend.

use thiserror::Error;
use xrdma::TransportError;

/// Why opening a device, creating a transport or waiting for completions failed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum VerbsError {
    /// The machine has no RDMA device at all (no kernel support, no `ib_uverbs`, or no device
    /// bound). Tests skip on this error.
    #[error("no RDMA device: {reason}")]
    NoDevice {
        /// What `ibv_get_device_list` said.
        reason: String,
    },
    /// A device was asked for by name but is not present.
    #[error("RDMA device {name:?} not found; present: {available:?}")]
    DeviceNotFound {
        /// The name asked for.
        name: String,
        /// The devices that exist.
        available: Vec<String>,
    },
    /// The port is not ACTIVE (`ibv_port_attr.state`), so no QP can reach RTR through it.
    #[error("port {port} of {device} is {state}, not ACTIVE")]
    PortNotActive {
        /// Device name.
        device: String,
        /// Port number (1-based).
        port: u8,
        /// The port's state as verbs names it.
        state: &'static str,
    },
    /// No GID of the port fits: the explicit index is empty or out of range, or (without an
    /// explicit index) the port has no RoCE v2 GID with an IPv4-mapped or routable IPv6
    /// (unique-local or global) address (see [`crate::gid::choose_gid`]). `table` lists every
    /// non-empty entry as `index: gid (type)`.
    #[error("no usable GID on {device} port {port}: {why}; GID table: {table}")]
    NoUsableGid {
        /// Device name.
        device: String,
        /// Port number.
        port: u8,
        /// What was looked for.
        why: String,
        /// The GID table, one `index: gid (type)` per non-empty entry.
        table: String,
    },
    /// A configuration value (e.g. an environment variable) could not be used.
    #[error("bad setting {name}={value:?}: {reason}")]
    BadSetting {
        /// The setting's name.
        name: &'static str,
        /// Its value.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// A verb failed; `errno` and its text as the OS gives them.
    #[error("{verb} failed: {reason}")]
    Verb {
        /// The verb, e.g. `ibv_alloc_pd`.
        verb: &'static str,
        /// The OS error number.
        errno: i32,
        /// Its text.
        reason: String,
    },
}

impl VerbsError {
    /// A [`VerbsError::Verb`] from an errno value.
    pub(crate) fn verb(verb: &'static str, errno: i32) -> Self {
        VerbsError::Verb {
            verb,
            errno,
            reason: std::io::Error::from_raw_os_error(errno).to_string(),
        }
    }

    /// A [`VerbsError::Verb`] from the thread's current `errno` (verbs that return NULL or -1).
    pub(crate) fn last(verb: &'static str) -> Self {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        Self::verb(verb, errno)
    }
}

impl From<VerbsError> for TransportError {
    fn from(e: VerbsError) -> Self {
        match e {
            VerbsError::Verb { verb, reason, .. } => TransportError::Other { verb, reason },
            other => TransportError::Other {
                verb: "verbs backend",
                reason: other.to_string(),
            },
        }
    }
}
