use super::*;
use phobos_build::{Source, check_source};

const TWICE: &str = "@autotune(BLOCK in [64, 128])\n@grid(cdiv(N, BLOCK))\n\
kernel twice(x: tensor<f32>[N], y: tensor<f32>[N]) {\n\
  let i = program_id(0) * BLOCK\n  y[i :+ BLOCK] = x[i :+ BLOCK] * 2.0\n}\n";

fn kernel(text: &str) -> Kernel {
    check_source(&Source::file("twice.ph", text))
        .unwrap()
        .kernels
        .remove(0)
}

/// Two chips, this machine's ptxas if it has one.
fn settings(cache: Option<Cache>) -> Settings {
    Settings {
        chips: vec!["sm_80".into(), "sm_90".into()],
        index_bits: vec![32],
        cache,
        jobs: 2,
        ptxas: Ptxas::detect().map_err(|e| e.to_string()),
    }
}

fn without_ptxas(settings: Settings) -> Settings {
    Settings {
        ptxas: Ok(None),
        ..settings
    }
}

#[test]
fn builds_every_config_for_every_chip_in_order() {
    let k = kernel(TWICE);
    let configs = k.configs();
    let build = build_kernel(&k, 7, &settings(None)).unwrap();
    assert_eq!(build.compiled, configs.len() * 2);
    assert_eq!((build.cached, build.pruned), (0, 0));
    let order: Vec<(String, String)> = build
        .embedded
        .variants
        .iter()
        .map(|v| (v.chip.clone(), v.config.to_string()))
        .collect();
    let expected: Vec<(String, String)> = ["sm_80", "sm_90"]
        .iter()
        .flat_map(|chip| configs.iter().map(|c| (chip.to_string(), c.to_string())))
        .collect();
    assert_eq!(order, expected);
    for v in &build.embedded.variants {
        let ptx = lz4_flex::block::decompress_size_prepended(&v.ptx_lz4).unwrap();
        assert_eq!(ptx.len(), v.ptx_len_bytes);
        let ptx = String::from_utf8(ptx).unwrap();
        assert!(ptx.contains(&format!(".target {}", v.chip)), "{ptx}");
        assert!(ptx.contains(".entry twice"), "{ptx}");
    }
}

#[test]
fn a_second_build_comes_from_the_cache_and_a_source_change_misses() {
    let dir = tempfile::tempdir().unwrap();
    let cached = settings(Some(Cache::new(dir.path().to_path_buf())));
    let k = kernel(TWICE);
    let first = build_kernel(&k, 7, &cached).unwrap();
    let second = build_kernel(&k, 7, &cached).unwrap();
    assert_eq!(first.cached, 0);
    assert_eq!(second.compiled, 0);
    assert_eq!(second.cached, first.compiled);
    assert_eq!(second.embedded, first.embedded);
    // Another source hash is another key.
    let changed = build_kernel(&k, 8, &cached).unwrap();
    assert_eq!(changed.compiled, first.compiled);
}

/// A 256x256 tile of f32 per operand needs 64 KiB of shared memory.
#[test]
fn configs_that_do_not_fit_are_pruned_with_the_reason() {
    let text = "@autotune(TILE in [32, 256])\n@grid(cdiv(M, TILE), cdiv(N, TILE))\n\
kernel mm(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {\n\
  var acc: tile<f32>[TILE, TILE] = 0.0\n\
  for kt in range(0, K, 32) {\n\
    acc += dot(A[program_id(0) * TILE :+ TILE, kt :+ 32], B[kt :+ 32, program_id(1) * TILE :+ TILE])\n\
  }\n\
  C[program_id(0) * TILE :+ TILE, program_id(1) * TILE :+ TILE] = acc\n}\n";
    let k = kernel(text);
    let build = build_kernel(&k, 1, &settings(None)).unwrap();
    assert!(build.pruned > 0 && build.compiled > 0, "{build:?}");
    assert_eq!(build.compiled + build.pruned, k.configs().len() * 2);
    for pruned in &build.embedded.pruned {
        assert!(pruned.reason.contains("shared memory"), "{pruned:?}");
        assert!(
            !build
                .embedded
                .variants
                .iter()
                .any(|v| v.config == pruned.config && v.chip == pruned.chip)
        );
    }
}

#[test]
fn without_ptxas_no_registers_are_recorded_and_the_log_says_so() {
    let build = build_kernel(&kernel(TWICE), 7, &without_ptxas(settings(None))).unwrap();
    assert!(!build.embedded.variants.is_empty());
    for v in &build.embedded.variants {
        assert_eq!((v.registers, v.spill_bytes), (None, None), "{v:?}");
    }
    let line = build.log_line("twice", 7, &["sm_80".into()]);
    assert!(line.contains("registers=skipped (no ptxas"), "{line}");
}

/// With this machine's ptxas (`PHOBOS_PTXAS`, PATH, or the PyPI package):
/// every variant carries its registers, and an entry cached by a build
/// without ptxas is measured (not recompiled) by the next build with one.
/// Without one it skips with a note, unless `PHOBOS_REQUIRE_PTXAS=1`; a
/// ptxas that is named but does not run is a failure either way.
#[test]
fn with_ptxas_registers_are_recorded_even_for_entries_cached_without_it() {
    let Some(ptxas) = Ptxas::detect().unwrap() else {
        assert!(!ptxas::required(), "{}", ptxas::MISSING_BUT_REQUIRED);
        eprintln!("note: no ptxas; register measurement not exercised");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let with = settings(Some(Cache::new(dir.path().to_path_buf())));
    let k = kernel(TWICE);
    let bare = build_kernel(&k, 7, &without_ptxas(with.clone())).unwrap();
    let measured = build_kernel(&k, 7, &with).unwrap();
    assert_eq!(measured.compiled, 0);
    assert_eq!(measured.cached, bare.compiled);
    assert_eq!(measured.measured, bare.compiled);
    for v in &measured.embedded.variants {
        let registers = v.registers.unwrap();
        assert!(registers > 0 && registers <= 255, "{v:?}");
        assert!(ptxas::register_file_overflow(registers, v.threads).is_none());
        assert!(v.spill_bytes.is_some());
    }
    let again = build_kernel(&k, 7, &with).unwrap();
    assert_eq!((again.compiled, again.measured), (0, 0));
    assert_eq!(again.embedded, measured.embedded);
    let line = again.log_line("twice", 7, &with.chips);
    assert!(line.contains("registers=checked measured=0"), "{line}");
    assert!(line.contains(&ptxas.version), "{line}");
}

/// A stand-in ptxas that reports `registers` for entry `twice` (so the
/// register rule is exercised whatever the real code generator does), or
/// rejects everything when `registers` is `None`.
#[cfg(unix)]
fn fake_ptxas(dir: &std::path::Path, registers: Option<u32>) -> Ptxas {
    use std::os::unix::fs::PermissionsExt;
    let body = match registers {
        Some(n) => format!(
            "echo \"ptxas info    : Compiling entry function 'twice' for 'sm_80'\" >&2\n\
             echo \"ptxas info    : Function properties for twice\" >&2\n\
             echo \"    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\" >&2\n\
             echo \"ptxas info    : Used {n} registers, used 0 barriers\" >&2\n"
        ),
        None => {
            "echo \"ptxas x.ptx, line 3; error   : Unknown modifier '.q32'\" >&2\nexit 255\n".into()
        }
    };
    let path = dir.join(format!("fake-ptxas-{}", registers.unwrap_or(0)));
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"fake ptxas {registers:?}\"; exit 0; fi\n{body}"
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Ptxas::at(path).unwrap()
}

#[cfg(unix)]
#[test]
fn ctas_that_overflow_the_register_file_are_pruned_with_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let k = kernel(TWICE);
    let threads: Vec<u32> = build_kernel(&k, 7, &without_ptxas(settings(None)))
        .unwrap()
        .embedded
        .variants
        .iter()
        .map(|v| v.threads)
        .collect();
    // 255 registers fit 256 threads (8 warps) and no more.
    assert!(threads.iter().all(|&t| t <= 256), "{threads:?}");
    let fits = Settings {
        ptxas: Ok(Some(fake_ptxas(dir.path(), Some(255)))),
        ..settings(None)
    };
    let build = build_kernel(&k, 7, &fits).unwrap();
    assert_eq!(build.pruned, 0);
    assert!(
        build
            .embedded
            .variants
            .iter()
            .all(|v| v.registers == Some(255) && v.spill_bytes == Some(12))
    );

    let heavy = TWICE.replace("@grid", "@launch(1024)\n@grid");
    let k = kernel(&heavy);
    let build = build_kernel(&k, 7, &fits).unwrap();
    assert_eq!(build.pruned, k.configs().len() * 2, "{build:?}");
    assert_eq!(build.pruned_by_registers, build.pruned);
    assert!(build.embedded.variants.is_empty());
    for pruned in &build.embedded.pruned {
        assert!(
            pruned.reason.contains("255 registers per thread")
                && pruned.reason.contains("1024 threads are 32 warps"),
            "{pruned:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn ptx_that_ptxas_rejects_is_a_build_error_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let rejecting = Settings {
        ptxas: Ok(Some(fake_ptxas(dir.path(), None))),
        ..settings(None)
    };
    let error = build_kernel(&kernel(TWICE), 7, &rejecting).unwrap_err();
    assert!(error.0.contains("rejected the PTX"), "{error:?}");
    assert!(error.0.contains("Unknown modifier '.q32'"), "{error:?}");
    let broken = Settings {
        ptxas: Err("could not run /nowhere/ptxas".into()),
        ..settings(None)
    };
    let error = build_kernel(&kernel(TWICE), 7, &broken).unwrap_err();
    assert!(error.0.contains("/nowhere/ptxas"), "{error:?}");
}
