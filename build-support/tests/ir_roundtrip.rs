//! Every example kernel (examples/kernels) and test kernel (tests/in)
//! checks, prints IR text that re-parses to the same text and verifies, and
//! checks identically from macro tokens. The IR text of this crate's own
//! test kernels (tests/in) is also snapshotted; the examples belong to
//! another crate and may change without this crate's snapshots changing.
//! Bless changed snapshots with `INSTA_UPDATE=always cargo test`.

use std::path::{Path, PathBuf};

use phobos_build::ir::{self, parse::parse_module, print::module_to_string};
use phobos_build::{Source, check_source};

fn kernel_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    files_in(&[root.join("../examples/kernels"), root.join("tests/in")])
}

fn own_kernel_files() -> Vec<PathBuf> {
    files_in(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/in")])
}

fn files_in(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "ph") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn check_file(path: &Path) -> (String, ir::Module) {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    match check_source(&Source::file(name, text)) {
        Ok(m) => (module_to_string(&m), m),
        Err(d) => panic!("{} does not check:\n{}", path.display(), d.render()),
    }
}

#[test]
fn kernels_are_found() {
    // saxpy and gemm come with the repository; features.ph with this crate.
    let names: Vec<String> = kernel_files()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    assert!(names.iter().any(|n| n == "features"), "{names:?}");
    assert!(names.iter().any(|n| n == "saxpy"), "{names:?}");
}

#[test]
fn ir_text_matches_snapshots() {
    for path in own_kernel_files() {
        let (text, _) = check_file(&path);
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        insta::assert_snapshot!(format!("ir_{stem}"), text);
    }
}

#[test]
fn ir_text_round_trips_and_verifies() {
    for path in kernel_files() {
        let (text, module) = check_file(&path);
        ir::verify(&module).unwrap();
        let reparsed =
            parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
        ir::verify(&reparsed).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(module_to_string(&reparsed), text, "{}", path.display());
    }
}

#[test]
fn macro_tokens_check_like_the_file() {
    for path in kernel_files() {
        let (text, _) = check_file(&path);
        let source = std::fs::read_to_string(&path).unwrap();
        // proc-macro2 drops `//` comments as rustc does for macro input.
        let tokens: proc_macro2::TokenStream = source.parse().unwrap();
        let module = check_source(&Source::Tokens(tokens))
            .unwrap_or_else(|d| panic!("{} from tokens:\n{}", path.display(), d.render()));
        assert_eq!(module_to_string(&module), text, "{}", path.display());
    }
}
