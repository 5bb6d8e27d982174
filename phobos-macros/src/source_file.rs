//! Locating and reading the `.ph` file named by `kernel_file!`.

use std::path::{Path, PathBuf};

use proc_macro2::Span;

use crate::error::MacroError;

/// A kernel source file read from disk, with the absolute path used to make
/// cargo rebuild the crate when the file changes.
pub struct KernelFile {
    pub absolute_path: PathBuf,
    pub text: String,
}

/// Resolves `relative` against the crate being compiled (`CARGO_MANIFEST_DIR`),
/// the same base `include_str!` users expect from cargo-relative paths.
pub fn read_kernel_file(relative: &str, span: Span) -> Result<KernelFile, MacroError> {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| {
        MacroError::new(
            span,
            "kernel_file!: CARGO_MANIFEST_DIR is not set; expected to be expanded by cargo",
        )
    })?;
    let absolute_path = resolve(Path::new(&manifest_dir), relative);
    let text = std::fs::read_to_string(&absolute_path).map_err(|io_error| {
        MacroError::new(
            span,
            format!(
                "kernel_file!: cannot read `{relative}` (paths are relative to the directory of the crate's Cargo.toml): {io_error}"
            ),
        )
    })?;
    Ok(KernelFile {
        absolute_path,
        text,
    })
}

fn resolve(manifest_dir: &Path, relative: &str) -> PathBuf {
    let path = Path::new(relative);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        manifest_dir.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_manifest_dir() {
        let resolved = resolve(Path::new("/crate"), "kernels/gemm.ph");
        assert_eq!(resolved, PathBuf::from("/crate/kernels/gemm.ph"));
    }

    #[test]
    fn absolute_paths_are_kept() {
        let resolved = resolve(Path::new("/crate"), "/abs/gemm.ph");
        assert_eq!(resolved, PathBuf::from("/abs/gemm.ph"));
    }
}
