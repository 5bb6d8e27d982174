//! `phobos-compile` end to end: PTX by default, each `--emit` phase,
//! contradictory flags, errors and exit codes.
//!
//! The binary is the one `cargo build -p phobos-build --bin phobos-compile`
//! makes (default features, so with PTX); `make test` fails if the PTX
//! tests here report 0 (scripts/check_test_counts.py).

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos-compile"))
        .args(args)
        .current_dir(dir)
        // As a user's shell may have it: errors must still print no backtrace.
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory, removed when the guard drops.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("phobos-compile-test-")
        .tempdir()
        .unwrap()
}

fn temp_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
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
    let (code, ir, _) = run(&[FEATURES, "--emit", "ir"]);
    assert_eq!(code, 0);
    assert!(
        ir.starts_with("kernel qmatvec {\n  param W: tensor<q4_0>[M, K]\n"),
        "{ir}"
    );
}

#[test]
fn source_errors_render_and_exit_1() {
    let tmp = temp_dir();
    let path = temp_file(
        &tmp,
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
    for args in [
        &[SAXPY][..],
        &[SAXPY, "--emit", "ptx"],
        &[SAXPY, "--chip", "sm_80"],
    ] {
        let (code, _, err) = run(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains("feature `ptx`"), "{args:?}: {err}");
    }
}

#[cfg(feature = "ptx")]
#[test]
fn emits_ptx_for_a_chip_index_width_and_config_to_a_file() {
    let tmp = temp_dir();
    let out = temp_file(&tmp, "saxpy.ptx", "");
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
    assert!(err.contains("index_bits=64"), "{err}");
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".target sm_75"), "{ptx}");
    assert!(ptx.contains(".entry saxpy"), "{ptx}");
}

/// Like the original tool, a plain `phobos-compile FILE.ph` prints PTX:
/// for sm_80, 32-bit offsets, the default config.
#[cfg(feature = "ptx")]
#[test]
fn ptx_is_the_default_output() {
    let (code, ptx, err) = run(&[SAXPY]);
    assert_eq!(code, 0, "{err}");
    assert!(ptx.contains(".target sm_80"), "{ptx}");
    assert!(ptx.contains(".entry saxpy"), "{ptx}");
    assert!(
        err.contains("saxpy [BLOCK=256] sm_80 index_bits=32"),
        "{err}"
    );
}

/// The command, from the workspace root: `phobos-compile
/// examples/kernels/saxpy.ph --chip sm_80 -o s.ptx` writes PTX that ptxas
/// accepts (assembled here; no ptxas is a skip with a note, or a failure
/// under `PHOBOS_REQUIRE_PTXAS=1`).
#[cfg(feature = "ptx")]
#[test]
fn chip_and_a_ptx_output_write_ptx_that_ptxas_accepts() {
    use phobos_build::back::mlir::ptxas;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tmp = temp_dir();
    let out = tmp.path().join("s.ptx");
    let out_arg = out.display().to_string();
    let (code, stdout, err) = run_in(
        &root,
        &[
            "examples/kernels/saxpy.ph",
            "--chip",
            "sm_80",
            "-o",
            &out_arg,
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".target sm_80"), "{ptx}");
    assert!(ptx.contains(".visible .entry saxpy("), "{ptx}");
    let Some(ptxas) = ptxas::find() else {
        assert!(!ptxas::required(), "{}", ptxas::MISSING_BUT_REQUIRED);
        eprintln!("note: no ptxas; s.ptx written but not assembled");
        return;
    };
    let assembled = Command::new(&ptxas)
        .arg("-arch=sm_80")
        .arg(&out)
        .arg("-o")
        .arg(out.with_extension("cubin"))
        .output()
        .unwrap();
    assert!(
        assembled.status.success(),
        "ptxas rejected phobos-compile's PTX:\n{}",
        String::from_utf8_lossy(&assembled.stderr)
    );
    assert!(out.with_extension("cubin").metadata().unwrap().len() > 0);
}

/// PTX-only flags with another `--emit`, or a `.ptx` output for a phase
/// that is not PTX, are an error naming the conflict, and nothing is
/// written.
#[test]
fn contradictory_flags_are_an_error() {
    let (code, out, err) = run(&[SAXPY, "--emit", "ir", "--chip", "sm_80"]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("--chip only applies to PTX, but --emit ir asks for another output"),
        "{err}"
    );
    let (code, _, err) = run(&[
        SAXPY,
        "--emit",
        "ast",
        "--index-bits",
        "64",
        "--config",
        "BLOCK=256",
        "--kernel",
        "saxpy",
        "-v",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("--index-bits, --config, --kernel, --verbose only apply to PTX"),
        "{err}"
    );
    let tmp = temp_dir();
    let target = tmp.path().join("tokens.ptx");
    let target_arg = target.display().to_string();
    let (code, _, err) = run(&[SAXPY, "--emit", "tokens", "-o", &target_arg]);
    assert_eq!(code, 1);
    assert!(
        err.contains("tokens.ptx: a `.ptx` file would hold the output of --emit tokens"),
        "{err}"
    );
    assert!(!target.exists());
    // Another name for the same phase's output is fine.
    let ir_file = tmp.path().join("saxpy.ir");
    let (code, _, err) = run(&[SAXPY, "--emit", "ir", "-o", &ir_file.display().to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::read_to_string(&ir_file)
            .unwrap()
            .starts_with("kernel saxpy")
    );
}

#[test]
fn index_bits_are_32_or_64() {
    let (code, _, err) = run(&[SAXPY, "--index-bits", "48"]);
    assert_eq!(code, 2);
    assert!(err.contains("the index width is 32 or 64"), "{err}");
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
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("error: reading kernel file no/such/file.ph: "),
        "{err}"
    );
    assert!(!err.contains("backtrace"), "{err}");
}
