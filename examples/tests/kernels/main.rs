//! Every example kernel, launched through its typed launcher on the host,
//! against the plain Rust references in `phobos_examples::reference`, over
//! random shapes (including ones that are no multiple of any tile size) and
//! random configs of each kernel's tune space. Each file states its error
//! bound and why it holds.

mod attention;
mod gemm;
mod gla;
mod inline_matches_file;
mod launch_api;
mod norms;
mod saxpy;
mod softmax;

use phobos::Device;
use proptest::test_runner::Config as ProptestConfig;

/// The host device, whatever `PHOBOS_BACKEND` says: these tests are about
/// the host back end.
pub fn host() -> Device {
    Device::host()
}

/// Few cases per property: each case launches a whole kernel at test
/// optimisation level, and the shapes already cover the ragged edges.
pub fn cases(count: u32) -> ProptestConfig {
    ProptestConfig {
        cases: count,
        ..ProptestConfig::default()
    }
}
