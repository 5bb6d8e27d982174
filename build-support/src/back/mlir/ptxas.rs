//! Finding NVIDIA's `ptxas`, the outside check every PTX variant must pass
//! (shared/VERIFY.md). Needs no LLVM, so it is here without feature `ptx`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `ptxas` to run: `$PHOBOS_PTXAS` when set and non-empty, else `ptxas`
/// on PATH, else the one inside the PyPI package `nvidia-cuda-nvcc-cu12`
/// (`nvidia.cuda_nvcc`). `None` when there is none.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PHOBOS_PTXAS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let on_path = Command::new("ptxas").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import nvidia.cuda_nvcc; print(list(nvidia.cuda_nvcc.__path__)[0])",
        ])
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    let candidate = Path::new(dir.trim()).join("bin").join("ptxas");
    candidate.is_file().then_some(candidate)
}
