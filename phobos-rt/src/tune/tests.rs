use super::*;
use crate::Error;
use std::time::Duration;

const CONFIGS: &[&str] = &["BLOCK=64", "BLOCK=128", "BLOCK=256"];

fn request<'a>(
    device: &'a Device,
    dims: &'a [usize],
    embedded: &'static [&'static str],
) -> TuneRequest<'a> {
    TuneRequest {
        kernel: "twice",
        source_hash: 0xfeed,
        compiler_version: "0.1.0",
        configs: CONFIGS,
        embedded,
        device,
        dims,
    }
}

fn quick() -> Plan {
    Plan {
        rounds: 3,
        keep_within: 1e9,
        finalists: 8,
        budget: Duration::from_secs(5),
        min_rounds: 3,
    }
}

/// A "kernel" whose config 1 is clearly fastest and config 2 always fails.
fn run_fake(index: usize) -> crate::Result<()> {
    match index {
        0 => std::thread::sleep(Duration::from_millis(3)),
        1 => {}
        _ => return Err(Error::TileRank { rank: 9, max: 4 }),
    }
    Ok(())
}

fn resolve(tuner: &Tuner, request: &TuneRequest<'_>) -> (usize, Source) {
    match tuner.lookup(request) {
        Lookup::Use(index, source) => (index, source),
        Lookup::Tune(session) => (session.tune(&mut run_fake), Source::Tuned),
    }
}

fn key_for(device: &Device, dims: &[usize]) -> TuneKey {
    TuneKey {
        kernel: "twice".into(),
        source_hash: 0xfeed,
        compiler_version: "0.1.0".into(),
        backend: "host".into(),
        device: device_id::device_id(device),
        bucket: bucket(dims),
    }
}

#[test]
fn modes_parse() {
    assert_eq!(TuneMode::from_value(None), Ok(TuneMode::On));
    assert_eq!(TuneMode::from_value(Some("OFF")), Ok(TuneMode::Off));
    assert_eq!(TuneMode::from_value(Some(" force ")), Ok(TuneMode::Force));
    let err = TuneMode::from_value(Some("fast")).unwrap_err();
    assert!(err.to_string().contains("`on`, `off` or `force`"), "{err}");
}

#[test]
fn measure_picks_the_fastest_and_skips_failures() {
    // The timer reports whatever `run` leaves in `last`.
    let last = std::cell::Cell::new(Duration::ZERO);
    struct Reading<'a>(&'a std::cell::Cell<Duration>);
    impl VariantTimer for Reading<'_> {
        fn time(&mut self, run: &mut dyn FnMut() -> crate::Result<()>) -> crate::Result<Duration> {
            run().map(|()| self.0.get())
        }
    }
    let times = [50u64, 20, 0, 21, 500];
    let mut calls = vec![0usize; times.len()];
    let measured = measure::measure(
        &[0, 1, 2, 3, 4],
        &Plan {
            rounds: 5,
            keep_within: 3.0,
            finalists: 3,
            budget: Duration::from_secs(60),
            min_rounds: 3,
        },
        &mut Reading(&last),
        &mut |i| {
            calls[i] += 1;
            if i == 2 {
                return Err(Error::TileRank { rank: 9, max: 4 });
            }
            // Candidate 3 is faster than 1 in most rounds but one.
            let jitter = if i == 3 && calls[i] == 2 { 1000 } else { 0 };
            let time = if i == 3 { 19 } else { times[i] };
            last.set(Duration::from_micros(time + jitter));
            Ok(())
        },
        &mut |_, _| {},
    );
    assert_eq!(measured.winner().map(|w| w.0), Some(3), "{measured:?}");
    assert_eq!(measured.failed.len(), 1);
    // 500 us is more than 3x the fastest warm-up: dropped after it.
    assert_eq!(calls[4], 1);
    assert_eq!(calls[2], 1);
    assert_eq!(calls[0], 6);
    assert_eq!(measured.runs, 5 + 3 * 5);
}

#[test]
fn a_second_run_of_a_tuned_launch_does_no_timing() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::host();
    let dims = [1000usize];
    let first = Tuner::new(TuneMode::On, Some(Store::new(dir.path()))).with_plan(quick());
    assert_eq!(
        resolve(&first, &request(&device, &dims, &[])),
        (1, Source::Tuned)
    );
    let stats = first.stats();
    assert_eq!((stats.tuned, stats.cache_hits), (1, 0));
    assert!(stats.timed_runs >= 3 + 2 * 3, "{stats:?}");
    // Same process: memory, no timing.
    assert_eq!(
        resolve(&first, &request(&device, &[700], &[])),
        (1, Source::Memory)
    );
    assert_eq!(first.stats().timed_runs, stats.timed_runs);

    // A new process (a new tuner on the same cache): read from disk, no timing.
    let second = Tuner::new(TuneMode::On, Some(Store::new(dir.path()))).with_plan(quick());
    assert_eq!(
        resolve(&second, &request(&device, &dims, &[])),
        (1, Source::Cache)
    );
    assert_eq!(
        second.stats(),
        TuneStats {
            cache_hits: 1,
            ..TuneStats::default()
        }
    );

    // Another bucket is another key.
    assert_eq!(
        resolve(&second, &request(&device, &[5000], &[])).1,
        Source::Tuned
    );
    let listing = Store::new(dir.path()).list().unwrap();
    assert_eq!(listing.entries.len(), 2);
    assert!(listing.unreadable.is_empty());
    assert_eq!(listing.entries[0].config, "BLOCK=128");
    assert_eq!(Store::new(dir.path()).clear().unwrap(), 2);
    assert!(Store::new(dir.path()).list().unwrap().entries.is_empty());
}

#[test]
fn damaged_or_stale_cache_entries_are_misses() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let device = Device::host();
    let dims = [64usize];
    let key = key_for(&device, &dims);
    let good = TuneEntry::new(key.clone(), "BLOCK=256".into(), 10, 3);
    store.put(&good).unwrap();
    let fresh = || Tuner::new(TuneMode::On, Some(store.clone())).with_plan(quick());
    assert_eq!(
        resolve(&fresh(), &request(&device, &dims, &[])),
        (2, Source::Cache)
    );

    let path = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let line = good.to_line();
    let mut wrong_version = good.clone();
    wrong_version.version = VERSION_FOR_TEST + 1;
    let mut wrong_fingerprint = good.clone();
    wrong_fingerprint.key.source_hash = 0xbeef;
    let mut wrong_compiler = good.clone();
    wrong_compiler.key.compiler_version = "0.0.9".into();
    let mut wrong_device = good.clone();
    wrong_device.key.device = "another cpu".into();
    let mut unknown_config = good.clone();
    unknown_config.config = "BLOCK=7".into();
    let damaged: Vec<(&str, String)> = vec![
        ("truncated", line[..line.len() / 2].to_string()),
        ("garbage", "\u{0}\u{1}not json at all".to_string()),
        ("empty", String::new()),
        ("wrong version", wrong_version.to_line()),
        ("wrong fingerprint", wrong_fingerprint.to_line()),
        ("wrong compiler", wrong_compiler.to_line()),
        ("wrong device", wrong_device.to_line()),
        ("config not in the tune space", unknown_config.to_line()),
    ];
    for (what, text) in damaged {
        std::fs::write(&path, text).unwrap();
        let tuner = fresh();
        let (index, source) = resolve(&tuner, &request(&device, &dims, &[]));
        assert_eq!((index, source), (1, Source::Tuned), "{what}");
        assert_eq!(tuner.stats().cache_hits, 0, "{what}");
    }
}

const VERSION_FOR_TEST: u32 = entry::VERSION;

/// Embedded lines are `'static`: leak the test's.
fn leak_lines(lines: Vec<String>) -> &'static [&'static str] {
    let lines: Vec<&'static str> = lines
        .into_iter()
        .map(|l| &*Box::leak(l.into_boxed_str()))
        .collect();
    Box::leak(lines.into_boxed_slice())
}

#[test]
fn embedded_entries_apply_only_to_their_fingerprint_and_device() {
    let device = Device::host();
    let dims = [64usize];
    let key = key_for(&device, &dims);
    let matching = TuneEntry::new(key.clone(), "BLOCK=256".into(), 10, 3);
    let mut other_source = matching.clone();
    other_source.key.source_hash = 1;
    other_source.config = "BLOCK=128".into();
    let mut other_device = matching.clone();
    other_device.key.device = "some other cpu|avx2|threads=64".into();
    other_device.config = "BLOCK=128".into();

    let mismatched = leak_lines(vec![other_source.to_line(), other_device.to_line()]);
    let tuner = Tuner::new(TuneMode::Off, None);
    assert_eq!(
        resolve(&tuner, &request(&device, &dims, mismatched)),
        (0, Source::Default)
    );
    assert_eq!(tuner.stats().embedded_hits, 0);

    let with_match = leak_lines(vec![
        other_source.to_line(),
        other_device.to_line(),
        matching.to_line(),
    ]);
    for mode in [TuneMode::Off, TuneMode::On] {
        let tuner = Tuner::new(mode, None);
        assert_eq!(
            resolve(&tuner, &request(&device, &dims, with_match)),
            (2, Source::Embedded)
        );
        assert_eq!(tuner.stats().timed_runs, 0);
    }
    // The user's cache comes before the embedded table ...
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    store
        .put(&TuneEntry::new(key, "BLOCK=64".into(), 5, 3))
        .unwrap();
    let tuner = Tuner::new(TuneMode::On, Some(store.clone()));
    assert_eq!(
        resolve(&tuner, &request(&device, &dims, with_match)),
        (0, Source::Cache)
    );
    // ... and `force` ignores both.
    let tuner = Tuner::new(TuneMode::Force, Some(store)).with_plan(quick());
    assert_eq!(
        resolve(&tuner, &request(&device, &dims, with_match)),
        (1, Source::Tuned)
    );
}

#[test]
fn off_mode_never_times_and_single_configs_are_not_tuned() {
    let device = Device::host();
    let tuner = Tuner::new(TuneMode::Off, None);
    assert_eq!(
        resolve(&tuner, &request(&device, &[8], &[])),
        (0, Source::Default)
    );
    let single = TuneRequest {
        configs: &["BLOCK=64"],
        ..request(&device, &[8], &[])
    };
    let tuner = Tuner::new(TuneMode::On, None);
    assert_eq!(resolve(&tuner, &single), (0, Source::Default));
    assert_eq!(
        resolve(&tuner, &request(&device, &[0], &[])),
        (0, Source::Default)
    );
    assert_eq!(tuner.stats().timed_runs, 0);
}

#[test]
fn when_every_config_fails_the_default_is_used() {
    let device = Device::host();
    let tuner = Tuner::new(TuneMode::On, None).with_plan(quick());
    let Lookup::Tune(session) = tuner.lookup(&request(&device, &[8], &[])) else {
        panic!("expected a tuning");
    };
    assert_eq!(
        session.tune(&mut |_| Err(Error::TileRank { rank: 9, max: 4 })),
        0
    );
}

#[test]
fn tables_round_trip_and_bad_tables_name_the_problem() {
    let device = Device::host();
    let entry = TuneEntry::new(key_for(&device, &[3]), "BLOCK=64".into(), 1, 3);
    let text = table::write_table(std::slice::from_ref(&entry));
    assert_eq!(table::parse_table(&text).unwrap(), vec![entry]);
    let err = table::parse_table("{}\n").unwrap_err();
    assert!(err.to_string().contains("phobos-tune-table"), "{err}");
    let err = table::parse_table(&format!("{}\nnot json\n", table::HEADER)).unwrap_err();
    assert_eq!(err, table::TableError::Entry { line: 2 });
}

#[test]
fn the_macros_read_the_same_table_header() {
    // phobos-macros checks the header of PHOBOS_TUNE_TABLE on its own (it
    // cannot depend on this crate): keep its copy equal.
    let macros_source = include_str!("../../../phobos-macros/src/tune_table.rs");
    assert!(
        macros_source.contains(&format!("r#\"{}\"#", table::HEADER)),
        "phobos-macros/src/tune_table.rs must hold HEADER = {}",
        table::HEADER
    );
}
