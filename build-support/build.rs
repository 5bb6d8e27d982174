//! Fingerprints the MLIR back end's sources, so that PTX cached or embedded
//! by one build is never reused by a build whose back end differs, even at
//! the same package version.

use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new("src/back/mlir");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect_rust_files(root, &mut files);
    files.sort();
    let mut hash = Fnv1a::new();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        hash.write(file.to_string_lossy().as_bytes());
        // An unreadable file still changes the hash (its name is in it).
        hash.write(&std::fs::read(file).unwrap_or_default());
    }
    println!("cargo:rustc-env=PHOBOS_MLIR_BACKEND_HASH={:016x}", hash.0);
}

fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}
