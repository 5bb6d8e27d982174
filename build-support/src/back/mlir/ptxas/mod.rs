//! NVIDIA's `ptxas`: the outside check every PTX variant must pass
//! (shared/VERIFY.md), and, with `-v`, the source of each variant's real
//! resource usage (registers per thread, spills), which the build uses to
//! prune configs whose CTA does not fit the register file. Needs no LLVM, so
//! it is here without feature `ptx`.

mod usage;

pub use usage::{
    REGISTER_ALLOCATION_UNIT, REGISTER_FILE_SUB_PARTITIONS, ResourceUsage, parse_verbose,
    register_file_overflow, registers_per_cta_max, warps_that_fit,
};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the `ptxas` to use.
pub const PTXAS_ENV: &str = "PHOBOS_PTXAS";

/// The environment variable that makes a missing `ptxas` a failure of every
/// check that would assemble or measure PTX, instead of a skip with a note.
pub const REQUIRE_ENV: &str = "PHOBOS_REQUIRE_PTXAS";

/// What a check says when there is no ptxas and [`required`] is set.
pub const MISSING_BUT_REQUIRED: &str = "PHOBOS_REQUIRE_PTXAS=1 but no ptxas was found: \
     pip install nvidia-cuda-nvcc-cu12 (scripts/setup_ptxas.sh) or set PHOBOS_PTXAS";

/// Whether `PHOBOS_REQUIRE_PTXAS=1`: every ptxas check must run (as `make
/// test` sets it), so CI can never pass by skipping one.
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// The `ptxas` to run: `$PHOBOS_PTXAS` when set and non-empty, else `ptxas`
/// on PATH, else the one inside the PyPI package `nvidia-cuda-nvcc-cu12`
/// (`nvidia.cuda_nvcc`). `None` when there is none.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(PTXAS_ENV).filter(|p| !p.is_empty()) {
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

/// Why `ptxas` gave no resource usage for a variant.
#[derive(Debug, thiserror::Error)]
pub enum PtxasError {
    #[error("could not run {path}: {source}")]
    Run {
        path: String,
        source: std::io::Error,
    },
    #[error("could not write the PTX for ptxas to {path}: {source}")]
    TempFile {
        path: String,
        source: std::io::Error,
    },
    /// ptxas refused the PTX. The back end must always emit PTX that
    /// assembles, so this is a compiler bug, never a reason to prune.
    #[error(
        "ptxas -arch={chip} rejected the PTX (a compiler bug: emitted PTX must assemble):\n{message}"
    )]
    Rejected { chip: String, message: String },
    /// ptxas succeeded but `-v` printed nothing we could read for the entry.
    #[error("ptxas -v printed no resource usage for entry `{entry}`:\n{output}")]
    Unparsed { entry: String, output: String },
}

/// A `ptxas` that runs, and which release it is (resource usage depends on
/// it, so measurements are tagged with [`Ptxas::version`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptxas {
    pub path: PathBuf,
    /// The last line of `ptxas --version` (the build id, the most specific
    /// line), e.g. `Build cuda_12.9.r12.9/compiler.36037853_0`.
    pub version: String,
}

impl Ptxas {
    /// [`find`]'s ptxas with its version, `Ok(None)` when there is none, and
    /// an error when one was named (or found) but does not run: a build
    /// asked to check registers must not silently stop checking.
    pub fn detect() -> Result<Option<Ptxas>, PtxasError> {
        let Some(path) = find() else { return Ok(None) };
        Ptxas::at(path).map(Some)
    }

    /// The ptxas at `path`, asked for its version.
    pub fn at(path: PathBuf) -> Result<Ptxas, PtxasError> {
        let run_error = |source| PtxasError::Run {
            path: path.display().to_string(),
            source,
        };
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .map_err(run_error)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
        match version {
            Some(version) if out.status.success() => Ok(Ptxas {
                version: version.to_string(),
                path,
            }),
            _ => Err(run_error(std::io::Error::other(format!(
                "`--version` exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )))),
        }
    }

    /// Assembles `ptx` for `chip` with `-v`, discarding the cubin, and reads
    /// the resource usage of `entry`.
    pub fn measure(&self, ptx: &str, chip: &str, entry: &str) -> Result<ResourceUsage, PtxasError> {
        let input = TempPtx::write(ptx)?;
        let out = Command::new(&self.path)
            .arg("-v")
            .arg(format!("-arch={chip}"))
            .arg(&input.path)
            .arg("-o")
            .arg(discard_path(&input.path))
            .output()
            .map_err(|source| PtxasError::Run {
                path: self.path.display().to_string(),
                source,
            })?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            return Err(PtxasError::Rejected {
                chip: chip.to_string(),
                message: text.trim().to_string(),
            });
        }
        parse_verbose(&text, entry).ok_or_else(|| PtxasError::Unparsed {
            entry: entry.to_string(),
            output: text.trim().to_string(),
        })
    }
}

/// Where the cubin goes: nowhere, where the system has a null device.
#[cfg(unix)]
fn discard_path(_input: &Path) -> PathBuf {
    PathBuf::from("/dev/null")
}

#[cfg(not(unix))]
fn discard_path(input: &Path) -> PathBuf {
    input.with_extension("cubin")
}

/// A PTX file in the temp dir, removed (with any cubin next to it) on drop.
/// Named by process, thread-shared counter, so parallel builds never collide.
struct TempPtx {
    path: PathBuf,
}

impl TempPtx {
    fn write(ptx: &str) -> Result<TempPtx, PtxasError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "phobos-ptxas-{}-{}.ptx",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, ptx).map_err(|source| PtxasError::TempFile {
            path: path.display().to_string(),
            source,
        })?;
        Ok(TempPtx { path })
    }
}

impl Drop for TempPtx {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(self.path.with_extension("cubin"));
    }
}

#[cfg(test)]
mod tests;
