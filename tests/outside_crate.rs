//! The bar of issue 8: a crate outside the workspace that depends on
//! `phobos` by path with default features (so PTX is compiled at build
//! time), with a kernel using every operator SPEC.md allows, builds and runs
//! and gets the values plain Rust gets (`tests/outside-crate/`).
//!
//! It builds into this build's target dir (with this workspace's lock file)
//! so dependencies compiled for the workspace are reused.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

#[test]
fn a_crate_outside_the_workspace_builds_with_default_features_and_runs() {
    build_and_run("tests/outside-crate");
}

/// The same without default features (no LLVM, no PTX): quantized
/// contractions in ggml's and the exact form, and the mixed-sign dot.
#[test]
fn a_host_only_crate_with_quantized_operands_builds_and_runs() {
    build_and_run("tests/outside-crate-host");
}

fn build_and_run(dir: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let krate = root.join(dir);
    // The workspace's resolution, so shared dependencies are not rebuilt.
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).expect("copy Cargo.lock");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("run")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(krate.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir(root))
        // The outer build's flags are not the user's.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    let start = Instant::now();
    let out = cmd.output().expect("run cargo");
    eprintln!("{dir}: built and ran in {:.1?}", start.elapsed());
    assert!(
        out.status.success(),
        "{dir} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}
