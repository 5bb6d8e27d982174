//! The tune table embedded at build time: `PHOBOS_TUNE_TABLE=FILE` names
//! a table exported by `phobos-kbench --export-tune FILE` (phobos-rt's
//! `tune::table`: a header line, then one JSON entry per line). Each
//! kernel module gets its own entries as `TUNE_TABLE`; the runtime checks
//! their fingerprint and device at launch and ignores entries that do not
//! match. The expansion includes the file's bytes and reads the variable
//! through `option_env!`, so cargo rebuilds when either changes.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;

/// The variable naming the table.
pub const TABLE_ENV: &str = "PHOBOS_TUNE_TABLE";

/// The first line of a table; phobos-rt's `tune::table::HEADER` (a test
/// there keeps the two equal).
pub const HEADER: &str = r#"{"format":"phobos-tune-table","version":1}"#;

/// A table read from disk.
#[derive(Debug, Clone)]
pub struct TuneTable {
    /// Absolute path, for `include_bytes!`.
    path: PathBuf,
    /// `(kernel, line)` per entry.
    entries: Vec<(String, String)>,
}

impl TuneTable {
    /// The table `PHOBOS_TUNE_TABLE` names (`None` when unset or empty).
    /// A relative path is taken from the directory rustc runs in (cargo's
    /// workspace root).
    pub fn from_env() -> Result<Option<TuneTable>, String> {
        match std::env::var_os(TABLE_ENV).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(path) => {
                let path = PathBuf::from(path);
                let absolute = if path.is_absolute() {
                    path
                } else {
                    std::env::current_dir()
                        .map_err(|e| format!("{TABLE_ENV}: no current directory ({e})"))?
                        .join(path)
                };
                TuneTable::read(&absolute).map(Some)
            }
        }
    }

    /// Reads and checks a table: the header, and a `kernel` on every entry.
    pub fn read(path: &Path) -> Result<TuneTable, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{TABLE_ENV}={shown}: cannot read the tune table ({e})"))?;
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default().trim();
        if first != HEADER {
            return Err(format!(
                "{TABLE_ENV}={shown}: not a tune table (expected the first line {HEADER}, as `phobos-kbench --export-tune` writes)"
            ));
        }
        let mut entries = Vec::new();
        for (index, line) in lines.enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let kernel = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|value| value.get("kernel")?.as_str().map(str::to_string))
                .ok_or_else(|| {
                    format!(
                        "{TABLE_ENV}={shown}: line {} is not a tune entry (expected a JSON object with a \"kernel\")",
                        index + 2
                    )
                })?;
            entries.push((kernel, line.trim().to_string()));
        }
        Ok(TuneTable {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// The entries of kernel `name`.
    pub fn lines_for(&self, name: &str) -> Vec<String> {
        self.entries
            .iter()
            .filter(|(kernel, _)| kernel == name)
            .map(|(_, line)| line.clone())
            .collect()
    }

    /// Makes cargo rebuild when the file changes.
    pub fn track(&self) -> TokenStream {
        let path = self.path.to_string_lossy().into_owned();
        quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        )
    }
}

/// Makes cargo rebuild when the variable changes (set, unset or renamed).
pub fn track_env() -> TokenStream {
    quote!(
        const _: ::core::option::Option<&str> = ::core::option_env!(#TABLE_ENV);
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_entries_per_kernel_and_rejects_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table.jsonl");
        let a = r#"{"format":"phobos-tune","version":1,"kernel":"saxpy","config":"BLOCK=512"}"#;
        let b = r#"{"format":"phobos-tune","version":1,"kernel":"gemm","config":"TILE_M=64"}"#;
        std::fs::write(&path, format!("{HEADER}\n{a}\n\n{b}\n")).unwrap();
        let table = TuneTable::read(&path).unwrap();
        assert_eq!(table.lines_for("saxpy"), [a]);
        assert_eq!(table.lines_for("gemm"), [b]);
        assert!(table.lines_for("softmax").is_empty());
        assert!(table.track().to_string().contains("include_bytes"));

        std::fs::write(&path, "kernel,config\n").unwrap();
        let err = TuneTable::read(&path).unwrap_err();
        assert!(err.contains("not a tune table"), "{err}");
        std::fs::write(&path, format!("{HEADER}\n{{\"config\":1}}\n")).unwrap();
        let err = TuneTable::read(&path).unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        let err = TuneTable::read(&dir.path().join("missing")).unwrap_err();
        assert!(err.contains("cannot read"), "{err}");
    }
}
