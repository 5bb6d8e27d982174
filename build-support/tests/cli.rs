//! `phobos-compile` end to end: each `--emit` phase, errors and exit codes.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos-compile"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("phobos-compile-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const FEATURES: &str = "tests/in/features.ph";

#[test]
fn emits_each_phase() {
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(FEATURES)
            .exists()
    );
    let (code, tokens, _) = run(&[FEATURES, "--emit", "tokens"]);
    assert_eq!(code, 0);
    assert!(tokens.starts_with("`@` @"), "{tokens}");
    assert!(tokens.contains("Ident(autotune)"));
    let (code, ast, _) = run(&[FEATURES, "--emit", "ast"]);
    assert_eq!(code, 0);
    assert!(
        ast.contains("kernel qmatvec(W: tensor<q4_0>[M, K]"),
        "{ast}"
    );
    let (code, ir, _) = run(&[FEATURES]);
    assert_eq!(code, 0);
    assert!(
        ir.starts_with("kernel qmatvec {\n  param W: tensor<q4_0>[M, K]\n"),
        "{ir}"
    );
}

#[test]
fn source_errors_render_and_exit_1() {
    let path = temp_file(
        "bad.ph",
        "kernel k(X: tensor<f32>[N]) {\n  let y = X[0:]\n}\n",
    );
    let (code, out, err) = run(&[&path, "--emit", "ir"]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        err.contains("bad.ph:2:13: error: open-ended slice `0:` is not allowed"),
        "{err}"
    );
    assert!(
        err.contains("2 |   let y = X[0:]\n  |             ^^"),
        "{err}"
    );
}

#[test]
fn ptx_is_not_built_yet() {
    let (code, _, err) = run(&[FEATURES, "--emit", "ptx"]);
    assert_ne!(code, 0);
    assert!(err.contains("not built yet"), "{err}");
}

#[test]
fn missing_file_names_the_path() {
    let (code, _, err) = run(&["no/such/file.ph"]);
    assert_ne!(code, 0);
    assert!(err.contains("no/such/file.ph"), "{err}");
}
