//! What the PTX test suites share: finding ptxas and assembling with it.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// The ptxas to use, or `None` (after saying so) when it may be skipped.
pub fn ptxas() -> Option<PathBuf> {
    use phobos_build::back::mlir::ptxas;
    let found = ptxas::find();
    if found.is_none() {
        assert!(!ptxas::required(), "{}", ptxas::MISSING_BUT_REQUIRED);
        eprintln!("note: ptxas not found; PTX is produced but not assembled");
    }
    found
}

/// Assembles `ptx` for `chip`; panics with ptxas's message on failure.
pub fn assemble(ptxas: &Path, ptx: &str, chip: &str, what: &str) {
    let tmp = tempfile::Builder::new()
        .prefix("phobos-mlir-test-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let stem = format!(
        "{}_{chip}",
        what.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    );
    let ptx_path = dir.join(format!("{stem}.ptx"));
    std::fs::write(&ptx_path, ptx).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("-arch={chip}"))
        .arg(&ptx_path)
        .arg("-o")
        .arg(dir.join(format!("{stem}.cubin")))
        .output()
        .unwrap();
    if !out.status.success() {
        // The PTX stays for whoever reads the failure.
        let _kept = tmp.keep();
        panic!(
            "ptxas -arch={chip} rejected {what}:\n{}\n(PTX kept at {})",
            String::from_utf8_lossy(&out.stderr),
            ptx_path.display()
        );
    }
}
