//! Runs of xrdma scenarios beyond one process, built on the runner (`xrdma_runner`): a
//! scenario's ranks across processes and machines, and sweeps of runs.
//!
//! | module | its one job |
//! |---|---|
//! | [`rank`], [`bootstrap`] | one process (rank) of a multi-process run, and the TCP bootstrap between ranks (every connection proves the job's secret) |
//! | [`launch`] | cluster launch: the rank, the rank count and rank 0 from Slurm, Open MPI, PMI or a hostfile, the rendezvous at rank 0, the hosts of each rank |
//! | [`sweep`] | sweeps: one base scenario, axes to vary, points run in parallel or as a cluster scheduler's jobs |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bootstrap;
pub mod launch;
pub mod rank;
pub mod sweep;
