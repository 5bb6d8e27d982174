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

fn settings(cache: Option<Cache>) -> Settings {
    Settings {
        chips: vec!["sm_80".into(), "sm_90".into()],
        index_bits: vec![32],
        cache,
        jobs: 2,
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
