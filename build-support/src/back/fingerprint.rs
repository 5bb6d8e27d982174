//! What identifies the compiler that produced a PTX variant: cache keys and
//! embedded artifacts carry it, so a changed compiler never reuses old PTX.

/// phobos-build's package version.
pub const COMPILER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// FNV-1a over the MLIR back end's source files (computed by build.rs).
pub const MLIR_BACKEND_HASH: &str = env!("PHOBOS_MLIR_BACKEND_HASH");

/// Major version of the LLVM/MLIR the `ptx` feature links (melior 0.27,
/// mlir-sys 220); 0 when built without it.
pub const MLIR_VERSION: u32 = if cfg!(feature = "ptx") { 22 } else { 0 };

/// The whole fingerprint as one string, for cache keys.
pub fn compiler_fingerprint() -> String {
    format!("phobos-build {COMPILER_VERSION} backend {MLIR_BACKEND_HASH} mlir {MLIR_VERSION}")
}

/// [`MLIR_BACKEND_HASH`] as a number (0 if build.rs wrote something else).
pub fn mlir_backend_hash() -> u64 {
    u64::from_str_radix(MLIR_BACKEND_HASH, 16).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_hash_is_sixteen_hex_digits_and_parses() {
        assert_eq!(MLIR_BACKEND_HASH.len(), 16);
        assert_eq!(format!("{:016x}", mlir_backend_hash()), MLIR_BACKEND_HASH);
        assert!(compiler_fingerprint().contains(COMPILER_VERSION));
    }
}
