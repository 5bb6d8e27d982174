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

const SAXPY: &str = "../examples/kernels/saxpy.ph";

#[cfg(not(feature = "ptx"))]
#[test]
fn ptx_needs_the_feature() {
    let (code, _, err) = run(&[SAXPY, "--emit", "ptx"]);
    assert_ne!(code, 0);
    assert!(err.contains("feature `ptx`"), "{err}");
}

#[cfg(feature = "ptx")]
#[test]
fn emits_ptx_for_a_chip_index_width_and_config_to_a_file() {
    let out = temp_file("saxpy.ptx", "");
    let (code, stdout, err) = run(&[
        SAXPY,
        "--emit",
        "ptx",
        "--chip",
        "sm_75",
        "--index-bits",
        "64",
        "--config",
        "BLOCK=1024",
        "-o",
        &out,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(err.contains("BLOCK=1024"), "{err}");
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".target sm_75"), "{ptx}");
    assert!(ptx.contains(".entry saxpy"), "{ptx}");
}

#[test]
fn ptx_rejects_configs_outside_the_tune_space() {
    let (code, _, err) = run(&[SAXPY, "--emit", "ptx", "--config", "BLOCK=3"]);
    assert_ne!(code, 0);
    assert!(err.contains("not in the tune space"), "{err}");
    let (code, _, err) = run(&[SAXPY, "--emit", "ptx", "--config", "NOPE=3"]);
    assert_ne!(code, 0);
    assert!(err.contains("no tune parameter `NOPE`"), "{err}");
    let (code, _, err) = run(&[FEATURES, "--emit", "ptx", "--kernel", "absent"]);
    assert_ne!(code, 0);
    assert!(err.contains("no kernel of that name"), "{err}");
}

#[test]
fn missing_file_names_the_path() {
    let (code, _, err) = run(&["no/such/file.ph"]);
    assert_ne!(code, 0);
    assert!(err.contains("no/such/file.ph"), "{err}");
}
