//! The Phobos cluster runtime.
//!
//! - [`job`]: the job file (kernel source, dims, tensors, scalars) and its
//!   check against the kernel.
//! - [`store`]: raw tensor files (`file://`), staging and atomic commits.
//! - [`interp`]: runs a kernel read at run time on the host, by
//!   interpreting the typed tile IR over the host tile library.
//! - [`plan`]: supertiles, footprints, the cost model, placement, segments
//!   and the per-node instruction DAG.
//! - [`exec`]: running supertiles against tensor files; a whole plan in
//!   one process with [`exec::run_local`].

pub mod exec;
pub mod interp;
pub mod job;
pub mod plan;
pub mod store;
