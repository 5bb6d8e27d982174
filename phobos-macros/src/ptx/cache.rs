//! The on-disk cache of compiled PTX variants, keyed by content.
//!
//! One file per variant, named by a hash of its key; the file repeats the
//! whole key and a checksum of the PTX, and anything that does not match
//! (another key with the same hash, a truncated or garbled file, an old
//! format) is a miss. Writes go to a temporary file that is renamed into
//! place, so a reader never sees half an entry. Correctness never depends on
//! the cache: every failure to read or write it only costs a recompile.
//!
//! The key holds only what the PTX depends on, never whether ptxas was
//! found: PTX comes from MLIR alone. The `ptxas -v` reading is stored in
//! the entry beside the PTX, tagged with the ptxas build that made it, and
//! is used only by a build with that same ptxas. A build with another
//! ptxas, or one whose entry was written without ptxas, re-runs `ptxas -v`
//! on the cached PTX (milliseconds, no MLIR) and rewrites the entry; a
//! build without ptxas embeds no register count whatever the entry holds.
//! So an entry from a ptxas-less build never pins `None` on later builds,
//! and a ptxas upgrade never serves the old release's counts.

use std::io::Write;
use std::path::PathBuf;

use phobos_build::back::host::source_hash as fnv1a;

/// Where the cache lives: `PHOBOS_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/phobos/ptx`, else `$HOME/.cache/phobos/ptx`.
pub const CACHE_DIR_ENV: &str = "PHOBOS_CACHE_DIR";

/// The log file in the cache dir: one line per kernel build.
pub const LOG_FILE: &str = "build.log";

const MAGIC: &str = "phobos-ptx-cache 2";

/// The cache directory from the environment, if one can be named.
pub fn dir_from_env() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty(CACHE_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("phobos").join("ptx"));
    }
    non_empty("HOME").map(|home| {
        PathBuf::from(home)
            .join(".cache")
            .join("phobos")
            .join("ptx")
    })
}

/// One cached variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub ptx: String,
    pub threads: u32,
    pub shared_bytes: u64,
    /// `ptxas -v` on this PTX; `None` until a build with ptxas measures it.
    pub measured: Option<Measured>,
}

/// What one ptxas said about a variant's PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// [`phobos_build::back::mlir::ptxas::Ptxas::version`] of the ptxas.
    pub ptxas_version: String,
    pub registers: u32,
    /// Spill stores plus spill loads, in bytes.
    pub spill_bytes: u64,
}

/// A cache rooted at a directory (created on first store).
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    #[cfg(test)]
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn path_for(&self, kernel: &str, key: &str) -> PathBuf {
        let safe: String = kernel
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir
            .join(format!("{safe}-{:016x}.ptxentry", fnv1a(key)))
    }

    /// The entry stored under `key`, or `None` on any miss or damage.
    pub fn load(&self, kernel: &str, key: &str) -> Option<Entry> {
        let text = std::fs::read_to_string(self.path_for(kernel, key)).ok()?;
        parse_entry(&text, key)
    }

    /// Stores `entry` under `key`; failures are logged and ignored.
    pub fn store(&self, kernel: &str, key: &str, entry: &Entry) {
        if let Err(error) = self.try_store(kernel, key, entry) {
            tracing::warn!(dir = %self.dir.display(), %error, "PTX cache: could not store a variant");
        }
    }

    fn try_store(&self, kernel: &str, key: &str, entry: &Entry) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path_for(kernel, key);
        let unique = format!(
            "{}.{}.{:?}.tmp",
            path.display(),
            std::process::id(),
            std::thread::current().id()
        )
        .replace(['(', ')'], "");
        let temp = PathBuf::from(unique);
        let result = (|| {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(render_entry(key, entry).as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result
    }

    /// Appends one line to [`LOG_FILE`]; failures are logged and ignored.
    pub fn log(&self, line: &str) {
        let result = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join(LOG_FILE))?;
            // One write per line, so concurrent builds do not interleave.
            file.write_all(format!("{line}\n").as_bytes())
        });
        if let Err(error) = result {
            tracing::warn!(dir = %self.dir.display(), %error, "PTX cache: could not write the log");
        }
    }
}

fn render_entry(key: &str, entry: &Entry) -> String {
    let measured = match &entry.measured {
        Some(m) => format!(
            "ptxas {}\nregisters {}\nspill_bytes {}",
            escape_key(&m.ptxas_version),
            m.registers,
            m.spill_bytes
        ),
        None => "ptxas -\nregisters -\nspill_bytes -".to_string(),
    };
    format!(
        "{MAGIC}\nkey {}\nthreads {}\nshared_bytes {}\n{measured}\nptx_len_bytes {}\nptx_fnv1a {:016x}\n\n{}",
        escape_key(key),
        entry.threads,
        entry.shared_bytes,
        entry.ptx.len(),
        fnv1a(&entry.ptx),
        entry.ptx
    )
}

fn escape_key(key: &str) -> String {
    key.replace('\\', "\\\\").replace('\n', "\\n")
}

fn parse_entry(text: &str, key: &str) -> Option<Entry> {
    let (header, ptx) = text.split_once("\n\n")?;
    let mut lines = header.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let mut field = |name: &str| -> Option<String> {
        lines
            .next()?
            .strip_prefix(name)?
            .strip_prefix(' ')
            .map(str::to_string)
    };
    if field("key")? != escape_key(key) {
        return None;
    }
    let threads = field("threads")?.parse().ok()?;
    let shared_bytes = field("shared_bytes")?.parse().ok()?;
    let ptxas = field("ptxas")?;
    let registers = field("registers")?;
    let spill_bytes = field("spill_bytes")?;
    let measured = match (ptxas.as_str(), registers.as_str(), spill_bytes.as_str()) {
        ("-", "-", "-") => None,
        (version, registers, spill_bytes) => Some(Measured {
            ptxas_version: unescape_key(version),
            registers: registers.parse().ok()?,
            spill_bytes: spill_bytes.parse().ok()?,
        }),
    };
    let len: usize = field("ptx_len_bytes")?.parse().ok()?;
    let checksum = u64::from_str_radix(&field("ptx_fnv1a")?, 16).ok()?;
    (ptx.len() == len && fnv1a(ptx) == checksum).then(|| Entry {
        ptx: ptx.to_string(),
        threads,
        shared_bytes,
        measured,
    })
}

fn unescape_key(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            ptx: ".version 7.0\n\n.target sm_80\n".into(),
            threads: 128,
            shared_bytes: 4096,
            measured: None,
        }
    }

    fn measured_entry() -> Entry {
        Entry {
            measured: Some(Measured {
                ptxas_version: "Build cuda_12.9.r12.9/compiler.36037853_0".into(),
                registers: 40,
                spill_bytes: 16,
            }),
            ..entry()
        }
    }

    #[test]
    fn stores_and_loads_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().join("nested"));
        assert_eq!(cache.load("k", "key one"), None);
        cache.store("k", "key one", &entry());
        assert_eq!(cache.load("k", "key one"), Some(entry()));
        assert_eq!(cache.load("k", "key two"), None);
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(cache.dir()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_measurement_round_trips_and_replaces_none() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf());
        cache.store("k", "key", &entry());
        assert_eq!(cache.load("k", "key").unwrap().measured, None);
        cache.store("k", "key", &measured_entry());
        assert_eq!(cache.load("k", "key"), Some(measured_entry()));
        let odd = Entry {
            measured: Some(Measured {
                ptxas_version: "a\\b\nc".into(),
                ..measured_entry().measured.unwrap()
            }),
            ..entry()
        };
        cache.store("k", "key", &odd);
        assert_eq!(cache.load("k", "key"), Some(odd));
    }

    #[test]
    fn damaged_entries_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf());
        cache.store("k", "key", &measured_entry());
        let path = cache.path_for("k", "key");
        let good = std::fs::read_to_string(&path).unwrap();
        for damaged in [
            good[..good.len() - 3].to_string(),
            good.replace(".target sm_80", ".target sm_90"),
            good.replace("threads 128", "threads x"),
            good.replace("registers 40", "registers x"),
            good.replace("registers 40", "registers -"),
            good.replace(MAGIC, "phobos-ptx-cache 0"),
            String::new(),
        ] {
            std::fs::write(&path, &damaged).unwrap();
            assert_eq!(cache.load("k", "key"), None, "{damaged:?}");
        }
        std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(cache.load("k", "key"), None);
    }

    #[test]
    fn a_different_key_under_the_same_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf());
        cache.store("k", "key a", &entry());
        // Simulate a hash collision: key b's file holds key a's entry.
        std::fs::copy(cache.path_for("k", "key a"), cache.path_for("k", "key b")).unwrap();
        assert_eq!(cache.load("k", "key b"), None);
    }

    #[test]
    fn log_lines_append() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().join("c"));
        cache.log("one");
        cache.log("two");
        let log = std::fs::read_to_string(dir.path().join("c").join(LOG_FILE)).unwrap();
        assert_eq!(log, "one\ntwo\n");
    }
}
