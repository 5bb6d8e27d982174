//! The `ARTIFACT` static of each kernel module: the data the GPU runtime
//! needs (`phobos_rt::artifact::KernelArtifact`). The PTX itself comes from
//! the caller (the macro, which compiles and compresses it); without it the
//! artifact still carries the ABI, grid and fingerprint, with no variants.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::expr::private;
use super::launcher::expr_text;
use crate::back::fingerprint;
use crate::ir::{Config, Dim, Kernel, ParamKind};

/// One compiled variant, PTX already compressed for embedding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddedVariant {
    pub config: Config,
    pub chip: String,
    pub index_bits: u32,
    /// lz4 block format, length prepended (what the runtime decompresses).
    pub ptx_lz4: Vec<u8>,
    pub ptx_len_bytes: usize,
    pub threads: u32,
    pub shared_bytes: u64,
    /// Registers per thread from `ptxas -v`; `None` when the build had no
    /// ptxas (the build log says register pruning was skipped).
    pub registers: Option<u32>,
    /// Spill stores plus spill loads from `ptxas -v`, in bytes.
    pub spill_bytes: Option<u64>,
}

/// A config not compiled for a chip, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedVariant {
    pub config: Config,
    pub chip: String,
    pub reason: String,
}

/// The PTX side of a kernel's artifact.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmbeddedPtx {
    /// In build order: chips in `PHOBOS_CHIPS` order, configs in tune-space
    /// order within a chip.
    pub variants: Vec<EmbeddedVariant>,
    pub pruned: Vec<PrunedVariant>,
}

/// `pub static ARTIFACT: KernelArtifact = ...;` for `kernel`.
pub fn artifact_static(
    kernel: &Kernel,
    source_hash: u64,
    ptx: Option<&EmbeddedPtx>,
) -> TokenStream {
    let p = private();
    let a = quote!(#p::artifact);
    let name = &kernel.name;
    let ptx_built = ptx.is_some();
    let empty = EmbeddedPtx::default();
    let ptx = ptx.unwrap_or(&empty);

    let variants = ptx.variants.iter().map(|v| {
        let config = config_tokens(&v.config);
        let chip = &v.chip;
        let index_bits = v.index_bits;
        let bytes = Literal::byte_string(&v.ptx_lz4);
        let len = v.ptx_len_bytes;
        let threads = v.threads;
        let shared = v.shared_bytes;
        let registers = option_tokens(v.registers.map(Literal::u32_suffixed));
        let spill_bytes = option_tokens(v.spill_bytes.map(Literal::u64_suffixed));
        quote!(#a::PtxVariant {
            config: #config,
            chip: #chip,
            index_bits: #index_bits,
            ptx_lz4: #bytes,
            ptx_len_bytes: #len,
            threads: #threads,
            shared_bytes: #shared,
            registers: #registers,
            spill_bytes: #spill_bytes,
        })
    });
    let pruned = ptx.pruned.iter().map(|pr| {
        let config = config_tokens(&pr.config);
        let chip = &pr.chip;
        let reason = &pr.reason;
        quote!(#a::PrunedConfig { config: #config, chip: #chip, reason: #reason })
    });
    let autotune = autotune_table(&ptx.variants)
        .into_iter()
        .map(|(chip, index)| quote!(#a::AutotuneEntry { chip: #chip, variant: #index }));
    let params = kernel.params.iter().map(|param| {
        let pname = &param.name;
        let kind = match &param.kind {
            ParamKind::Tensor { elem, dims, written } => {
                let elem = elem.to_string();
                let dims = dims.iter().map(|d| match d {
                    Dim::Sym(s) => s.clone(),
                    Dim::Lit(v) => v.to_string(),
                });
                quote!(#a::AbiParamKind::Pointer { elem: #elem, dims: &[#(#dims),*], written: #written })
            }
            ParamKind::Scalar { dtype } => {
                let dtype = dtype.name();
                quote!(#a::AbiParamKind::Value { dtype: #dtype })
            }
        };
        quote!(#a::AbiParam { name: #pname, kind: #kind })
    });
    let dims = kernel.dims();
    let grid: Vec<String> = kernel.grid.iter().map(expr_text).collect();
    let hash = Literal::u64_suffixed(source_hash);
    let version = fingerprint::COMPILER_VERSION;
    let backend_hash = Literal::u64_suffixed(fingerprint::mlir_backend_hash());
    let mlir_version = if ptx_built {
        fingerprint::MLIR_VERSION
    } else {
        0
    };
    quote! {
        /// What the GPU runtime loads: the embedded PTX variants, pruned
        /// configs, ABI, grid rule, fingerprint and autotune table.
        pub static ARTIFACT: #a::KernelArtifact = #a::KernelArtifact {
            name: #name,
            ptx_built: #ptx_built,
            variants: &[#(#variants),*],
            pruned: &[#(#pruned),*],
            grid: &[#(#grid),*],
            params: &[#(#params),*],
            dims: &[#(#dims),*],
            fingerprint: #a::Fingerprint {
                source_hash: #hash,
                compiler_version: #version,
                backend_hash: #backend_hash,
                mlir_version: #mlir_version,
            },
            autotune: &[#(#autotune),*],
        };
    }
}

fn option_tokens(value: Option<Literal>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

fn config_tokens(config: &Config) -> TokenStream {
    let pairs = config.values.iter().map(|(name, value)| {
        let value = Literal::i64_suffixed(*value);
        quote!((#name, #value))
    });
    quote!(&[#(#pairs),*])
}

/// The default variant per chip: the first one built for it (variants are
/// in tune-space order, so the earliest config that survived pruning).
fn autotune_table(variants: &[EmbeddedVariant]) -> Vec<(String, usize)> {
    let mut table: Vec<(String, usize)> = Vec::new();
    for (index, variant) in variants.iter().enumerate() {
        if !table.iter().any(|(chip, _)| *chip == variant.chip) {
            table.push((variant.chip.clone(), index));
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(chip: &str, block: i64) -> EmbeddedVariant {
        EmbeddedVariant {
            config: Config {
                values: vec![("BLOCK".into(), block)],
            },
            chip: chip.into(),
            index_bits: 32,
            ptx_lz4: vec![1, 2],
            ptx_len_bytes: 9,
            threads: 64,
            shared_bytes: 0,
            registers: Some(20),
            spill_bytes: Some(0),
        }
    }

    #[test]
    fn autotune_table_takes_the_first_variant_of_each_chip() {
        let variants = [
            variant("sm_75", 64),
            variant("sm_75", 128),
            variant("sm_80", 128),
        ];
        assert_eq!(
            autotune_table(&variants),
            [("sm_75".to_string(), 0), ("sm_80".to_string(), 2)]
        );
        assert!(autotune_table(&[]).is_empty());
    }
}
