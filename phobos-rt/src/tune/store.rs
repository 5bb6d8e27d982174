//! The user's tune cache: one file per key under `PHOBOS_TUNE_DIR`
//! (default `$XDG_CACHE_HOME/phobos/tune`, else `~/.cache/phobos/tune`),
//! named by the key's digest, holding one [`TuneEntry`]. Written through a
//! temp file and a rename, so readers never see half an entry; a file that
//! does not parse, is of another version, or holds another key is a miss.

use std::path::{Path, PathBuf};

use super::entry::TuneEntry;
use super::key::TuneKey;

/// Overrides where the cache lives.
pub const TUNE_DIR_ENV: &str = "PHOBOS_TUNE_DIR";

/// The cache directory the environment names; `None` without a home.
pub fn default_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty(TUNE_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    let cache = non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(cache.join("phobos").join("tune"))
}

/// A failure to read or write the cache directory.
#[derive(Debug, thiserror::Error)]
#[error("tune cache {path}: {source}")]
pub struct StoreError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The tune cache in one directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// What [`Store::list`] found.
#[derive(Debug, Default)]
pub struct Listing {
    pub entries: Vec<TuneEntry>,
    /// Files that are not a current entry (damaged, another version).
    pub unreadable: Vec<PathBuf>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, key: &TuneKey) -> PathBuf {
        let kernel: String = key
            .kernel
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        self.dir
            .join(format!("{kernel}-{:016x}.json", key.digest()))
    }

    /// The entry for exactly `key`, or `None` (absent or unusable).
    pub fn get(&self, key: &TuneKey) -> Option<TuneEntry> {
        let text = std::fs::read_to_string(self.path_of(key)).ok()?;
        TuneEntry::parse(&text).filter(|entry| entry.key == *key)
    }

    /// Writes `entry` under its key, replacing any older one.
    pub fn put(&self, entry: &TuneEntry) -> Result<(), StoreError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError { path, source }
        };
        std::fs::create_dir_all(&self.dir).map_err(err(&self.dir))?;
        let path = self.path_of(&entry.key);
        let temp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, entry.to_line() + "\n").map_err(err(&temp))?;
        std::fs::rename(&temp, &path).map_err(err(&path))
    }

    /// Every entry file in the directory (none when it does not exist).
    pub fn list(&self) -> Result<Listing, StoreError> {
        let mut listing = Listing::default();
        let read_dir = match std::fs::read_dir(&self.dir) {
            Ok(read_dir) => read_dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
            Err(source) => {
                return Err(StoreError {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut paths: Vec<PathBuf> = read_dir
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        for path in paths {
            match std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| TuneEntry::parse(&text))
            {
                Some(entry) => listing.entries.push(entry),
                None => listing.unreadable.push(path),
            }
        }
        Ok(listing)
    }

    /// Removes every entry file (and leftover temp files); returns how many.
    pub fn clear(&self) -> Result<usize, StoreError> {
        let read_dir = match std::fs::read_dir(&self.dir) {
            Ok(read_dir) => read_dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(source) => {
                return Err(StoreError {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut removed = 0;
        for path in read_dir.filter_map(|entry| entry.ok().map(|e| e.path())) {
            let ours = path
                .extension()
                .is_some_and(|ext| ext == "json" || ext.to_string_lossy().starts_with("tmp"));
            if ours && path.is_file() {
                std::fs::remove_file(&path).map_err(|source| StoreError {
                    path: path.clone(),
                    source,
                })?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}
