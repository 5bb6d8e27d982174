//! Compiled PTX on disk, keyed by content hash: the SHA-256 of everything
//! that decides the PTX (the kernel source, which kernel, its config, the
//! chip, the offset width, the program-id rewrite and the compiler's
//! fingerprint). A pod that runs a kernel it has compiled before (same
//! source, same compiler) loads it instead of compiling again; a changed
//! source or compiler is a different key, never a stale hit.
//!
//! A file is the PTX text behind one comment line of launch facts
//! (`// phobos-cluster threads=T shared_bytes=S`), so it stays valid PTX
//! that `ptxas` reads as is. Files are written to a temporary and renamed,
//! so pods sharing a cache never read a half-written one.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::store;

/// One compiled kernel, as the launch needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledPtx {
    pub ptx: String,
    /// Threads per CTA.
    pub threads: u32,
    pub shared_bytes: u64,
}

/// What identifies one compiled variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxKey<'a> {
    pub source: &'a str,
    pub kernel: &'a str,
    /// `NAME=VALUE` per tune parameter, in the kernel's order.
    pub config: String,
    pub chip: &'a str,
    pub index_bits: u32,
}

/// Bumped whenever the rewrite a CUDA pod applies changes.
const REWRITE_VERSION: u32 = 1;

impl PtxKey<'_> {
    /// The hex SHA-256 naming the cache file.
    pub fn hash(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            phobos_build::back::fingerprint::compiler_fingerprint().as_str(),
            &REWRITE_VERSION.to_string(),
            self.kernel,
            &self.config,
            self.chip,
            &self.index_bits.to_string(),
            self.source,
        ] {
            // Length-prefixed, so no two different key lists hash alike.
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PtxCacheError {
    #[error("the PTX cache at {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("compiling `{kernel}` to PTX for {chip}: {message}")]
    Compile {
        kernel: String,
        chip: String,
        message: String,
    },
}

/// A directory of compiled PTX files.
#[derive(Clone, Debug)]
pub struct PtxCache {
    dir: PathBuf,
}

const HEADER: &str = "// phobos-cluster";

impl PtxCache {
    pub fn new(dir: impl Into<PathBuf>) -> PtxCache {
        PtxCache { dir: dir.into() }
    }

    /// `$XDG_CACHE_HOME/phobos/cluster-ptx`, else `~/.cache/...`, else the
    /// temporary directory.
    pub fn default_dir() -> PathBuf {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("phobos").join("cluster-ptx")
    }

    pub fn path(&self, key: &PtxKey<'_>) -> PathBuf {
        self.dir.join(format!("{}.ptx", key.hash()))
    }

    /// The cached PTX for `key`, or `compile`'s, stored for next time.
    /// Returns whether it was a hit.
    pub fn get_or_compile(
        &self,
        key: &PtxKey<'_>,
        compile: impl FnOnce() -> Result<CompiledPtx, PtxCacheError>,
    ) -> Result<(CompiledPtx, bool), PtxCacheError> {
        let path = self.path(key);
        if let Ok(text) = std::fs::read_to_string(&path) {
            match parse(&text) {
                Some(hit) => return Ok((hit, true)),
                None => {
                    tracing::warn!(path = %path.display(), "unreadable PTX cache entry; compiling again")
                }
            }
        }
        let compiled = compile()?;
        let io = |e: &dyn std::fmt::Display| PtxCacheError::Io {
            path: path.clone(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&e))?;
        let text = format!(
            "{HEADER} threads={} shared_bytes={}\n{}",
            compiled.threads, compiled.shared_bytes, compiled.ptx
        );
        store::write_atomic(&path, text.as_bytes()).map_err(|e| io(&e))?;
        Ok((compiled, false))
    }
}

fn parse(text: &str) -> Option<CompiledPtx> {
    let (header, ptx) = text.split_once('\n')?;
    let facts = header.strip_prefix(HEADER)?;
    let mut threads = None;
    let mut shared_bytes = None;
    for fact in facts.split_whitespace() {
        match fact.split_once('=')? {
            ("threads", v) => threads = v.parse().ok(),
            ("shared_bytes", v) => shared_bytes = v.parse().ok(),
            _ => {}
        }
    }
    if ptx.is_empty() {
        return None;
    }
    Some(CompiledPtx {
        ptx: ptx.to_string(),
        threads: threads?,
        shared_bytes: shared_bytes?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(source: &'a str, chip: &'a str) -> PtxKey<'a> {
        PtxKey {
            source,
            kernel: "k",
            config: "TILE=32".into(),
            chip,
            index_bits: 32,
        }
    }

    fn ptx(text: &str) -> CompiledPtx {
        CompiledPtx {
            ptx: text.into(),
            threads: 128,
            shared_bytes: 4096,
        }
    }

    #[test]
    fn keys_differ_by_every_part_and_are_stable() {
        let base = key("kernel k() {}", "sm_80");
        assert_eq!(base.hash(), key("kernel k() {}", "sm_80").hash());
        assert_eq!(base.hash().len(), 64);
        let mut others = vec![
            key("kernel k() { }", "sm_80"),
            key("kernel k() {}", "sm_90"),
        ];
        let mut k = base.clone();
        k.config = "TILE=64".into();
        others.push(k);
        let mut k = base.clone();
        k.index_bits = 64;
        others.push(k);
        let mut k = base.clone();
        k.kernel = "k2";
        others.push(k);
        for other in others {
            assert_ne!(base.hash(), other.hash(), "{other:?}");
        }
    }

    #[test]
    fn a_hit_skips_the_compile_and_a_bad_entry_recompiles() {
        let dir = std::env::temp_dir().join(format!("phobos-ptx-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = PtxCache::new(&dir);
        let k = key("src", "sm_90");
        let (first, hit) = cache
            .get_or_compile(&k, || Ok(ptx(".version 8.0\n")))
            .unwrap();
        assert!(!hit);
        assert_eq!(first, ptx(".version 8.0\n"));
        let (again, hit) = cache
            .get_or_compile(&k, || panic!("compiled despite a cached entry"))
            .unwrap();
        assert!(hit);
        assert_eq!(again, first);
        // A truncated entry is compiled again and replaced.
        std::fs::write(cache.path(&k), "// phobos-cluster threads=").unwrap();
        let (fresh, hit) = cache
            .get_or_compile(&k, || Ok(ptx(".version 8.1\n")))
            .unwrap();
        assert!(!hit);
        assert_eq!(fresh.ptx, ".version 8.1\n");
        // A compile error is passed on and caches nothing.
        let other = key("other", "sm_90");
        let err = cache
            .get_or_compile(&other, || {
                Err(PtxCacheError::Compile {
                    kernel: "k".into(),
                    chip: "sm_90".into(),
                    message: "unsupported".into(),
                })
            })
            .unwrap_err();
        assert!(err.to_string().contains("unsupported"));
        assert!(!cache.path(&other).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
