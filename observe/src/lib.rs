//! What the machine and its RDMA device say about a run, read from procfs and sysfs: the
//! device's own counters by name and the one table mapping them to a result's network counters
//! ([`device_counters`]), and where a run happens — host, kernel, device firmware and driver,
//! each rank's place ([`environment`]), and where a thread runs beside its device
//! ([`placement`]). No verbs call and no run: the
//! runner and the cluster crate read a device through these, whichever backend is built.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device_counters;
pub mod environment;
pub mod placement;
