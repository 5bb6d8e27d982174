use super::*;

fn leak(bytes: Vec<u8>) -> &'static [u8] {
    Box::leak(bytes.into_boxed_slice())
}

fn variant(chip: &'static str, ptx: &str) -> PtxVariant {
    PtxVariant {
        config: &[("BLOCK", 256)],
        chip,
        index_bits: 32,
        ptx_lz4: leak(lz4_flex::block::compress_prepend_size(ptx.as_bytes())),
        ptx_len_bytes: ptx.len(),
        threads: 128,
        shared_bytes: 0,
        registers: None,
        spill_bytes: None,
    }
}

fn artifact(variants: &'static [PtxVariant], autotune: &'static [AutotuneEntry]) -> KernelArtifact {
    KernelArtifact {
        name: "k",
        ptx_built: true,
        variants,
        pruned: &[],
        grid: &["N"],
        params: &[],
        dims: &["N"],
        fingerprint: Fingerprint {
            source_hash: 1,
            compiler_version: "0.1.0",
            backend_hash: 2,
            mlir_version: 22,
        },
        autotune,
    }
}

#[test]
fn ptx_round_trips_through_compression() {
    let text = ".version 7.0\n.target sm_80\n.entry k() { ret; }\n".repeat(50);
    let v = variant("sm_80", &text);
    assert!(v.ptx_lz4.len() < text.len());
    assert_eq!(v.ptx().unwrap(), text);
    assert_eq!(v.config_value("BLOCK"), Some(256));
    assert_eq!(v.config_value("NOPE"), None);
}

#[test]
fn corrupt_or_mislabelled_ptx_is_an_error() {
    let mut v = variant("sm_80", "abc");
    v.ptx_len_bytes = 4;
    assert!(matches!(v.ptx(), Err(ArtifactError::Corrupt(_))));
    v.ptx_lz4 = &[200, 0, 0, 0, 1, 2];
    assert!(matches!(v.ptx(), Err(ArtifactError::Corrupt(_))));
}

#[test]
fn default_variant_follows_the_autotune_table() {
    let variants: &'static [PtxVariant] = Box::leak(Box::new([
        variant("sm_75", "a"),
        variant("sm_80", "b"),
        variant("sm_80", "c"),
    ]));
    let table: &'static [AutotuneEntry] = &[
        AutotuneEntry {
            chip: "sm_75",
            variant: 0,
        },
        AutotuneEntry {
            chip: "sm_80",
            variant: 2,
        },
    ];
    let a = artifact(variants, table);
    assert_eq!(a.default_variant("sm_80").unwrap().ptx().unwrap(), "c");
    assert_eq!(a.default_variant("sm_75").unwrap().ptx().unwrap(), "a");
    assert!(a.default_variant("sm_90").is_none());
    assert_eq!(a.variants_for("sm_80").count(), 2);
    assert_eq!(a.chips(), ["sm_75", "sm_80"]);
}
