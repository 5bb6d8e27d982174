use super::*;
use crate::artifact::Fingerprint;

fn gpu() -> GpuInfo {
    GpuInfo {
        ordinal: 0,
        name: "NVIDIA H200".into(),
        chip: "sm_90".into(),
        driver_version: 12040,
        total_mem_bytes: 1 << 30,
    }
}

fn artifact(source_hash: u64) -> KernelArtifact {
    KernelArtifact {
        name: "gemm",
        ptx_built: true,
        variants: &[],
        pruned: &[],
        grid: &[],
        params: &[],
        dims: &["M", "N", "K"],
        fingerprint: Fingerprint {
            source_hash,
            compiler_version: "0.1.0",
            backend_hash: 7,
            mlir_version: 22,
        },
        autotune: &[],
    }
}

/// A cache path in a folder that does not exist yet (the cache makes it),
/// under a directory removed when the guard drops.
fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("phobos-tune-{name}-"))
        .tempdir()
        .unwrap();
    let path = tmp.path().join("cache").join("cuda-tune.txt");
    (tmp, path)
}

#[test]
fn keys_hold_every_part_and_bucket_shapes() {
    let key = TuneKey::new(&gpu(), &artifact(1), &[1000, 1024, 1025]);
    assert_eq!(key.shape_bucket, vec![1024, 1024, 2048]);
    let text = key.text();
    for part in [
        "NVIDIA H200",
        "sm_90",
        "12040",
        "gemm",
        "0.1.0",
        "mlir22",
        "1024x1024x2048",
    ] {
        assert!(text.contains(part), "{text} lacks {part}");
    }
    assert_eq!(shape_bucket(&[0, 1, 3]), vec![1, 1, 4]);
    // Same bucket, same key; another driver, chip, GPU or source: another key.
    assert_eq!(key, TuneKey::new(&gpu(), &artifact(1), &[513, 1000, 1500]));
    let mut other = gpu();
    other.driver_version = 12080;
    assert_ne!(
        key.text(),
        TuneKey::new(&other, &artifact(1), &[1000, 1024, 1025]).text()
    );
    let mut other = gpu();
    other.name = "NVIDIA H100".into();
    assert_ne!(
        key.text(),
        TuneKey::new(&other, &artifact(1), &[1000, 1024, 1025]).text()
    );
    assert_ne!(
        key.text(),
        TuneKey::new(&gpu(), &artifact(2), &[1000, 1024, 1025]).text()
    );
}

#[test]
fn winners_round_trip_and_stale_keys_miss() {
    let (_tmp, path) = temp_path("round-trip");
    let key = TuneKey::new(&gpu(), &artifact(1), &[64, 64, 64]);
    let tuned = Tuned {
        config: vec![("BM".into(), 128), ("BN".into(), 64)],
        time_ms: 0.25,
    };
    let mut cache = TuneCache::load(&path).unwrap();
    assert!(cache.get(&key).is_none());
    cache.store(&key, tuned.clone()).unwrap();
    let cache = TuneCache::load(&path).unwrap();
    assert_eq!(cache.get(&key), Some(&tuned));
    assert_eq!(cache.ignored_lines, 0);
    // The kernel changed: its fingerprint, so the key, differs.
    let stale = TuneKey::new(&gpu(), &artifact(99), &[64, 64, 64]);
    assert!(cache.get(&stale).is_none());
}

#[test]
fn corrupt_lines_and_other_formats_are_misses() {
    let (_tmp, path) = temp_path("corrupt");
    let key = TuneKey::new(&gpu(), &artifact(1), &[64]);
    let other = TuneKey::new(&gpu(), &artifact(1), &[4096]);
    let mut cache = TuneCache::load(&path).unwrap();
    let tuned = |ms| Tuned {
        config: vec![("BLOCK".into(), 256)],
        time_ms: ms,
    };
    cache.store(&key, tuned(1.0)).unwrap();
    cache.store(&other, tuned(2.0)).unwrap();
    // Flip one digit of the first entry's time: its checksum fails.
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged = text.replacen("\t1\t", "\t7\t", 1);
    assert_ne!(damaged, text);
    std::fs::write(&path, format!("{damaged}garbage line\n")).unwrap();
    let cache = TuneCache::load(&path).unwrap();
    assert!(cache.get(&key).is_none());
    assert_eq!(cache.get(&other), Some(&tuned(2.0)));
    assert_eq!(cache.ignored_lines, 2);

    std::fs::write(&path, text.replace(CACHE_HEADER, "phobos-cuda-tune v0")).unwrap();
    let cache = TuneCache::load(&path).unwrap();
    assert!(cache.get(&other).is_none());
    assert!(cache.ignored_lines >= 2);

    std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    assert!(TuneCache::load(&path).unwrap().get(&other).is_none());
}

/// Variant `i` takes `times[i]` ms (`None`: fails to launch) and matches
/// the host when `correct[i]`.
struct Fake {
    times: Vec<Option<f64>>,
    correct: Vec<bool>,
    checked: Vec<usize>,
}

impl VariantRunner for Fake {
    fn time_ms(&mut self, variant: usize) -> Result<f64> {
        self.times[variant].ok_or_else(|| Error::Backend {
            backend: "cuda",
            message: "launch failed".into(),
        })
    }

    fn matches_host(&mut self, variant: usize) -> Result<bool> {
        self.checked.push(variant);
        Ok(self.correct[variant])
    }
}

#[test]
fn the_fastest_correct_variant_wins_and_failures_are_skipped() {
    let mut fake = Fake {
        times: vec![Some(3.0), None, Some(1.0), Some(2.0), Some(f64::NAN)],
        correct: vec![true, true, false, true, true],
        checked: vec![],
    };
    assert_eq!(tune(&[0, 1, 2, 3, 4], &mut fake), Some((3, 2.0)));
    // Only the winners are checked, fastest first: 2 (wrong), then 3.
    assert_eq!(fake.checked, vec![2, 3]);

    let mut none_work = Fake {
        times: vec![None, Some(1.0)],
        correct: vec![true, false],
        checked: vec![],
    };
    assert_eq!(tune(&[0, 1], &mut none_work), None);
}
