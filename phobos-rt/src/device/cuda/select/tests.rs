use super::*;
use crate::artifact::{AutotuneEntry, Fingerprint, PrunedConfig};

fn variant(chip: &'static str, block: i64) -> PtxVariant {
    let config: &'static [(&'static str, i64)] = Box::leak(Box::new([("BLOCK", block)]));
    PtxVariant {
        config,
        chip,
        index_bits: 32,
        ptx_lz4: &[],
        ptx_len_bytes: 0,
        threads: 128,
        shared_bytes: 0,
        registers: None,
        spill_bytes: None,
    }
}

fn artifact(variants: Vec<PtxVariant>, pruned: Vec<PrunedConfig>) -> KernelArtifact {
    KernelArtifact {
        name: "k",
        ptx_built: true,
        variants: Box::leak(variants.into_boxed_slice()),
        pruned: Box::leak(pruned.into_boxed_slice()),
        grid: &["N"],
        params: &[],
        dims: &["N"],
        fingerprint: Fingerprint {
            source_hash: 1,
            compiler_version: "0.1.0",
            backend_hash: 2,
            mlir_version: 22,
        },
        autotune: &[AutotuneEntry {
            chip: "sm_80",
            variant: 2,
        }],
    }
}

fn three_chips() -> KernelArtifact {
    artifact(
        vec![
            variant("sm_75", 128),
            variant("sm_80", 128),
            variant("sm_80", 256),
            variant("sm_90", 128),
        ],
        vec![PrunedConfig {
            config: &[("BLOCK", 256)],
            chip: "sm_90",
            reason: "too much shared memory",
        }],
    )
}

#[test]
fn chip_numbers_parse() {
    assert_eq!(chip_number("sm_90"), Some(90));
    assert_eq!(chip_number("sm_90a"), Some(90));
    assert_eq!(chip_number("sm_120"), Some(120));
    assert_eq!(chip_number("compute_90"), None);
    assert_eq!(chip_number("sm_x"), None);
    assert_eq!(chip_name(8, 9), "sm_89");
}

#[test]
fn the_exact_chip_wins() {
    let a = three_chips();
    assert_eq!(pick_chip(&a, "sm_90").unwrap(), "sm_90");
    assert_eq!(select_variant(&a, "sm_90", &[("BLOCK", 128)]).unwrap(), 3);
    assert_eq!(select_variant(&a, "sm_80", &[("BLOCK", 256)]).unwrap(), 2);
}

#[test]
fn a_lower_chip_is_the_fallback() {
    let a = three_chips();
    // sm_86 and sm_89 run sm_80's PTX; sm_100 runs sm_90's.
    assert_eq!(pick_chip(&a, "sm_86").unwrap(), "sm_80");
    assert_eq!(pick_chip(&a, "sm_89").unwrap(), "sm_80");
    assert_eq!(pick_chip(&a, "sm_100").unwrap(), "sm_90");
    assert_eq!(select_variant(&a, "sm_86", &[("BLOCK", 256)]).unwrap(), 2);
    assert_eq!(default_variant(&a, "sm_89").unwrap(), 2);
    // No autotune entry for sm_90: its first variant.
    assert_eq!(default_variant(&a, "sm_90").unwrap(), 3);
}

#[test]
fn no_lower_chip_names_the_chips_the_binary_has() {
    let a = three_chips();
    let err = pick_chip(&a, "sm_70").unwrap_err().to_string();
    assert!(err.contains("sm_75, sm_80, sm_90"), "{err}");
    assert!(err.contains("no PTX for sm_70"), "{err}");
    let err = default_variant(&a, "sm_61").unwrap_err().to_string();
    assert!(err.contains("PHOBOS_CHIPS"), "{err}");
    let empty = artifact(vec![], vec![]);
    let err = pick_chip(&empty, "sm_90").unwrap_err().to_string();
    assert!(err.contains("no PTX at all"), "{err}");
    let mut host_only = artifact(vec![], vec![]);
    host_only.ptx_built = false;
    let err = pick_chip(&host_only, "sm_90").unwrap_err().to_string();
    assert!(err.contains("without PTX"), "{err}");
}

#[test]
fn a_pruned_or_unknown_config_says_why() {
    let a = three_chips();
    let err = select_variant(&a, "sm_90", &[("BLOCK", 256)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("pruned: too much shared memory"), "{err}");
    let err = select_variant(&a, "sm_90", &[("BLOCK", 64)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("not in the tune space"), "{err}");
    assert!(select_variant(&a, "sm_90", &[("OTHER", 128)]).is_err());
}

#[test]
fn ptx_versions_are_read_and_checked_against_the_driver() {
    let ptx = "//\n// Generated\n.version 8.4\n.target sm_90\n";
    assert_eq!(ptx_isa_version(ptx), Some((8, 4)));
    assert_eq!(ptx_isa_version(".target sm_90"), None);
    assert_eq!(max_ptx_isa(12040), (8, 4));
    assert_eq!(max_ptx_isa(12080), (8, 7));
    assert_eq!(max_ptx_isa(11080), (7, 8));
    assert_eq!(max_ptx_isa(13000), (9, 0));
    check_driver_for_ptx("k", ptx, 12040).unwrap();
    check_driver_for_ptx("k", ptx, 12090).unwrap();
    let err = check_driver_for_ptx("k", ptx, 12020)
        .unwrap_err()
        .to_string();
    assert!(err.contains("driver is too old"), "{err}");
    assert!(err.contains("ISA 8.4"), "{err}");
    assert!(err.contains("driver 12.2"), "{err}");
    assert!(check_driver_for_ptx("k", ".target sm_90", 12090).is_err());
}
