//! Every example kernel, launched through its typed launcher on the host,
//! against the plain Rust references in `phobos_examples::reference`, under
//! the bounds of `phobos_examples::bounds` (each derived there).
//!
//! Per kernel, two tests: `every_config_on_ragged_shapes` runs every config
//! of the tune space once, deterministically, on a shape that spans three
//! tiles of that config in each tiled dim, the last one partial
//! ([`ragged`]); `matches_reference` adds random shapes, configs and inputs
//! (proptest) on top.

mod attention;
mod fused_sum;
mod gemm;
mod gla;
mod inline_matches_file;
mod launch_api;
mod norms;
mod saxpy;
mod simd_levels;
mod softmax;
mod tuned_launch;

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

/// A size of three tiles of `tile`, the last one partial: `2 tile + r`,
/// `0 < r < tile`. `r` moves with `salt` (the config's index), so a kernel's
/// configs see different remainders. A tile of 1 cannot be partial: 3.
pub fn ragged(tile: i64, salt: usize) -> usize {
    let tile = usize::try_from(tile).unwrap_or_else(|_| panic!("tile {tile} is not a size"));
    assert!(tile > 0, "tile {tile}");
    if tile == 1 {
        return 3;
    }
    2 * tile + 1 + (salt * 7 + tile / 3) % (tile - 1)
}

/// `check(index, config)` for every config, in order; fails listing every
/// config that failed (not only the first).
pub fn every_config<C>(configs: &[C], check: impl Fn(usize, &C) -> Result<(), String>) {
    let failures: Vec<String> = configs
        .iter()
        .enumerate()
        .filter_map(|(index, config)| check(index, config).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} configs failed:\n{}",
        failures.len(),
        configs.len(),
        failures.join("\n")
    );
}

#[test]
fn ragged_sizes_span_three_tiles_the_last_partial() {
    for tile in [2, 4, 16, 32, 64, 256, 1024, 4096] {
        for salt in 0..70 {
            let size = ragged(tile, salt);
            let tile = tile as usize;
            assert_eq!(size.div_ceil(tile), 3, "{size} / {tile}");
            assert_ne!(size % tile, 0, "{size} / {tile}");
        }
    }
    assert_eq!(ragged(1, 5), 3);
    // Consecutive configs of one tile size see different remainders.
    assert_ne!(ragged(32, 0), ragged(32, 1));
}
