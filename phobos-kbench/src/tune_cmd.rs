//! `phobos-kbench tune list|clear|export` and `--export-tune`.

use std::path::Path;

use anyhow::{Context, Result};
use phobos::tune::{Store, table};

use crate::cli::TuneAction;

fn store() -> Result<Store> {
    phobos::tune::store::default_dir()
        .map(Store::new)
        .context("no tune cache directory: set PHOBOS_TUNE_DIR, XDG_CACHE_HOME or HOME")
}

pub fn run(action: &TuneAction) -> Result<()> {
    let store = store()?;
    match action {
        TuneAction::List => {
            let listing = store.list()?;
            println!(
                "tune cache {}: {} entries",
                store.dir().display(),
                listing.entries.len()
            );
            for entry in &listing.entries {
                let key = &entry.key;
                println!(
                    "{:<16} {:<8} dims {:?}  {}  ({:.1} us, {} configs timed)  {:016x} {}  {}",
                    key.kernel,
                    key.backend,
                    key.bucket,
                    entry.config,
                    entry.median_ns as f64 / 1e3,
                    entry.timed_configs,
                    key.source_hash,
                    key.compiler_version,
                    key.device
                );
            }
            for path in &listing.unreadable {
                println!("unreadable (ignored at launch): {}", path.display());
            }
        }
        TuneAction::Clear => {
            let removed = store.clear()?;
            println!("removed {removed} entries from {}", store.dir().display());
        }
        TuneAction::Export { file } => export(file)?,
    }
    Ok(())
}

/// Writes every stored winner as a table `PHOBOS_TUNE_TABLE` can embed.
pub fn export(path: &Path) -> Result<()> {
    let store = store()?;
    let listing = store.list()?;
    std::fs::write(path, table::write_table(&listing.entries))
        .with_context(|| format!("writing the tune table {}", path.display()))?;
    println!(
        "exported {} tuned configs from {} to {} (build with PHOBOS_TUNE_TABLE={} to embed them)",
        listing.entries.len(),
        store.dir().display(),
        path.display(),
        path.display()
    );
    Ok(())
}
