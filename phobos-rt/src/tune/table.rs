//! Exported tune tables: what `phobos-kbench --export-tune FILE` writes and
//! `PHOBOS_TUNE_TABLE=FILE` embeds at build time. A header line, then one
//! [`TuneEntry`] per line (JSON). The macro (phobos-macros) checks the
//! header and embeds each kernel's lines in its module as `TUNE_TABLE`;
//! the runtime parses them on the first launch of the kernel.

use super::entry::TuneEntry;

/// The first line of every table.
pub const HEADER: &str = r#"{"format":"phobos-tune-table","version":1}"#;

/// A table that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("a tune table starts with the line {HEADER}; this one starts with {found:?}")]
    Header { found: String },
    #[error("line {line} of the tune table is not a current tune entry")]
    Entry { line: usize },
}

/// The table's text for `entries`.
pub fn write_table(entries: &[TuneEntry]) -> String {
    let mut text = String::from(HEADER);
    text.push('\n');
    for entry in entries {
        text.push_str(&entry.to_line());
        text.push('\n');
    }
    text
}

/// Every entry of a table; any bad line is an error naming it.
pub fn parse_table(text: &str) -> Result<Vec<TuneEntry>, TableError> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().trim();
    if first != HEADER {
        return Err(TableError::Header {
            found: first.chars().take(80).collect(),
        });
    }
    lines
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| TuneEntry::parse(line).ok_or(TableError::Entry { line: index + 2 }))
        .collect()
}
