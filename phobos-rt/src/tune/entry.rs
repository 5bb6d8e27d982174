//! One tuned winner as stored on disk (one file per key) and in exported
//! tables (one JSON object per line). The format is versioned: an entry of
//! another version, another format or with any field missing is a miss.

use serde::{Deserialize, Serialize};

use super::key::TuneKey;

/// The `format` field of every entry.
pub const FORMAT: &str = "phobos-tune";
/// Bumped whenever the meaning of an entry changes.
pub const VERSION: u32 = 1;

/// A winner and how it was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneEntry {
    pub format: String,
    pub version: u32,
    #[serde(flatten)]
    pub key: TuneKey,
    /// The winning config as `NAME=value` pairs joined by `,` (the kernel's
    /// `CONFIG_TEXTS` form).
    pub config: String,
    /// Median time of the winner, nanoseconds.
    pub median_ns: u64,
    /// Configs that were timed successfully.
    pub timed_configs: usize,
}

impl TuneEntry {
    pub fn new(key: TuneKey, config: String, median_ns: u64, timed_configs: usize) -> TuneEntry {
        TuneEntry {
            format: FORMAT.to_string(),
            version: VERSION,
            key,
            config,
            median_ns,
            timed_configs,
        }
    }

    /// The entry in `text` when it is one of this format and version.
    pub fn parse(text: &str) -> Option<TuneEntry> {
        let entry: TuneEntry = serde_json::from_str(text.trim()).ok()?;
        (entry.format == FORMAT && entry.version == VERSION).then_some(entry)
    }

    /// One line of JSON.
    pub fn to_line(&self) -> String {
        // A struct of strings and integers always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}
