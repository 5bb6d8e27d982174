//! Which instruction set generated program bodies run with.
//!
//! The host back end compiles each kernel's launch body three times
//! (`build-support`'s `back/host/launcher.rs`): under
//! `#[target_feature(enable = ...)]` with [`AVX512_FEATURES`], with
//! [`AVX2_FEATURES`], and for the baseline target. [`simd_level`] picks one
//! once per process from what the CPU reports, so a binary built for plain
//! x86-64 still runs its fused loops 16 lanes wide on an AVX-512 machine,
//! and anywhere else falls back to the portable body.
//!
//! The three bodies compute the same results bit for bit: rustc never
//! contracts `a * b + c` into an FMA or reorders float operations, so a
//! wider vector changes only how many elements one instruction handles.
//! `PHOBOS_SIMD` caps the level (`portable`, `avx2`, `avx512`), which is how
//! tests compare the bodies and benchmarks measure each; it never raises it
//! above what the CPU has.

use std::cell::Cell;
use std::sync::OnceLock;

/// The environment variable that caps the level.
pub const SIMD_ENV: &str = "PHOBOS_SIMD";

/// The features of the AVX-512 body (what x86-64-v4 adds, and all of v3).
/// The generated `#[target_feature]` attribute and the run-time check both
/// use this list, so they cannot disagree.
pub const AVX512_FEATURES: &[&str] = &[
    "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma", "bmi1", "bmi2", "lzcnt",
    "popcnt", "f16c",
];

/// The features of the AVX2 body (x86-64-v3).
pub const AVX2_FEATURES: &[&str] = &["avx2", "fma", "bmi1", "bmi2", "lzcnt", "popcnt", "f16c"];

/// An instruction-set level for generated bodies, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// The baseline target (SSE2 on x86-64).
    Portable,
    /// [`AVX2_FEATURES`].
    Avx2,
    /// [`AVX512_FEATURES`].
    Avx512,
}

impl SimdLevel {
    /// The name `PHOBOS_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Portable => "portable",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }

    /// The level a `PHOBOS_SIMD` value names.
    pub fn from_name(name: &str) -> Option<SimdLevel> {
        [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512]
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(name.trim()))
    }
}

thread_local! {
    /// A cap set by [`with_simd_cap`] for launches made on this thread.
    static THREAD_CAP: Cell<Option<SimdLevel>> = const { Cell::new(None) };
}

/// The level generated bodies run with for a launch made on this thread:
/// the highest the CPU supports, capped by `PHOBOS_SIMD` (read once per
/// process) and by [`with_simd_cap`].
///
/// Generated code calls a `#[target_feature]` body only when this returns
/// its level, which is only when every feature of that body was detected
/// ([`detected_level`]); that is the safety argument of those calls.
pub fn simd_level() -> SimdLevel {
    let level = process_level();
    match THREAD_CAP.with(Cell::get) {
        Some(cap) => level.min(cap),
        None => level,
    }
}

/// Runs `f` with the launches it makes on this thread capped at `cap`
/// (never above what the CPU has): how tests compare the bodies of every
/// level within one process.
pub fn with_simd_cap<R>(cap: SimdLevel, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<SimdLevel>);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_CAP.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(THREAD_CAP.with(|c| c.replace(Some(cap))));
    f()
}

/// The detected level capped by `PHOBOS_SIMD`, decided on the first call.
fn process_level() -> SimdLevel {
    static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let detected = detected_level();
        let value = std::env::var(SIMD_ENV).ok();
        let (level, unknown) = capped_level(detected, value.as_deref());
        if let Some(value) = unknown {
            tracing::warn!(
                "{SIMD_ENV}={value:?} is not a level; expected portable, avx2 or avx512 (using {})",
                level.name()
            );
        }
        level
    })
}

/// `detected` capped by a `PHOBOS_SIMD` value, and the value when it names
/// no level (then `detected` is used).
pub fn capped_level(detected: SimdLevel, value: Option<&str>) -> (SimdLevel, Option<&str>) {
    match value.filter(|v| !v.trim().is_empty()) {
        None => (detected, None),
        Some(text) => match SimdLevel::from_name(text) {
            Some(cap) => (detected.min(cap), None),
            None => (detected, Some(text)),
        },
    }
}

/// The highest level whose every feature the CPU reports.
pub fn detected_level() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        // `is_x86_feature_detected!` needs literal names: this list must
        // match AVX2_FEATURES (checked by a test).
        let avx2 = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("lzcnt")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("f16c");
        // The four AVX-512 subsets of AVX512_FEATURES.
        let avx512 = avx2
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl");
        if avx512 {
            SimdLevel::Avx512
        } else if avx2 {
            SimdLevel::Avx2
        } else {
            SimdLevel::Portable
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    SimdLevel::Portable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_cap_never_raises() {
        for level in [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512] {
            assert_eq!(SimdLevel::from_name(level.name()), Some(level));
        }
        assert_eq!(SimdLevel::from_name(" AVX2 "), Some(SimdLevel::Avx2));
        assert_eq!(SimdLevel::from_name("sse"), None);
        let cap = |detected, value| capped_level(detected, value).0;
        assert_eq!(cap(SimdLevel::Avx2, Some("avx512")), SimdLevel::Avx2);
        assert_eq!(cap(SimdLevel::Avx512, Some("avx2")), SimdLevel::Avx2);
        assert_eq!(
            cap(SimdLevel::Avx512, Some("portable")),
            SimdLevel::Portable
        );
        assert_eq!(cap(SimdLevel::Avx512, None), SimdLevel::Avx512);
        assert_eq!(cap(SimdLevel::Avx512, Some("")), SimdLevel::Avx512);
        assert_eq!(
            capped_level(SimdLevel::Avx2, Some("sse")),
            (SimdLevel::Avx2, Some("sse"))
        );
    }

    #[test]
    fn the_level_is_at_most_what_the_cpu_has() {
        assert!(simd_level() <= detected_level());
        let outer = simd_level();
        with_simd_cap(SimdLevel::Portable, || {
            assert_eq!(simd_level(), SimdLevel::Portable);
            with_simd_cap(SimdLevel::Avx512, || assert_eq!(simd_level(), outer));
            assert_eq!(simd_level(), SimdLevel::Portable);
        });
        assert_eq!(simd_level(), outer);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_detected_level_checks_every_listed_feature() {
        // The run-time check spells the names out (the macro needs
        // literals); this keeps it equal to the lists the bodies use.
        let source = include_str!("simd.rs");
        for feature in AVX512_FEATURES {
            let check = format!("is_x86_feature_detected!(\"{feature}\")");
            assert!(source.contains(&check), "{feature} is not checked");
        }
        assert!(AVX2_FEATURES.iter().all(|f| AVX512_FEATURES.contains(f)));
    }
}
