//! What a tuned winner is keyed by: the kernel's fingerprint, the backend,
//! the device and the shape bucket.

use serde::{Deserialize, Serialize};

/// Everything a winner depends on. Two launches with equal keys may share a
/// winner; anything that differs (the kernel source, the compiler, the
/// machine, the thread count, the shape bucket) is a miss.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TuneKey {
    /// The kernel's name in its source.
    pub kernel: String,
    /// FNV-1a of the kernel source text.
    pub source_hash: u64,
    /// phobos-build's version (the compiler that generated the variants).
    pub compiler_version: String,
    /// `host` or `cuda`.
    pub backend: String,
    /// The device as [`super::device_id`] describes it.
    pub device: String,
    /// The symbolic dims, each rounded up to a power of two ([`bucket`]).
    pub bucket: Vec<usize>,
}

impl TuneKey {
    /// A stable 64-bit digest (FNV-1a over the fields), for file names.
    pub fn digest(&self) -> u64 {
        let mut hash = Fnv::new();
        hash.text(&self.kernel);
        hash.u64(self.source_hash);
        hash.text(&self.compiler_version);
        hash.text(&self.backend);
        hash.text(&self.device);
        for &dim in &self.bucket {
            hash.u64(dim as u64);
        }
        hash.finish()
    }
}

/// The shape bucket of a launch: each dim rounded up to a power of two (0
/// stays 0). Launches in one bucket share a winner: close sizes behave
/// alike, and tuning each exact size would tune forever.
pub fn bucket(dims: &[usize]) -> Vec<usize> {
    dims.iter()
        .map(|&d| {
            if d == 0 {
                0
            } else {
                d.checked_next_power_of_two().unwrap_or(d)
            }
        })
        .collect()
}

/// FNV-1a 64, the same hash `KERNEL.source_hash` uses: stable across
/// toolchains, so file names survive a Rust update.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Length-prefixed, so `("ab", "c")` and `("a", "bc")` differ.
    pub(crate) fn text(&mut self, text: &str) {
        self.u64(text.len() as u64);
        self.bytes(text.as_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.bytes(&value.to_le_bytes());
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_each_dim_up_to_a_power_of_two() {
        assert_eq!(
            bucket(&[0, 1, 3, 4, 1000, 1024, 1025]),
            [0, 1, 4, 4, 1024, 1024, 2048]
        );
        assert_eq!(bucket(&[usize::MAX]), [usize::MAX]);
    }

    #[test]
    fn digests_differ_in_every_field() {
        let key = TuneKey {
            kernel: "k".into(),
            source_hash: 1,
            compiler_version: "0.1.0".into(),
            backend: "host".into(),
            device: "cpu".into(),
            bucket: vec![4, 8],
        };
        let mut others = vec![key.clone(); 6];
        others[0].kernel = "k2".into();
        others[1].source_hash = 2;
        others[2].compiler_version = "0.1.1".into();
        others[3].backend = "cuda".into();
        others[4].device = "cpu2".into();
        others[5].bucket = vec![8, 4];
        for other in others {
            assert_ne!(key.digest(), other.digest(), "{other:?}");
        }
        assert_eq!(key.digest(), key.clone().digest());
    }
}
