//! Tensor files: raw little-endian row-major arrays of their dtype with no
//! header (`numpy.fromfile(path, dtype)` reads them), addressed by
//! `file://` URIs.
//!
//! Outputs are never half-written: a job writes its outputs into a staging
//! copy next to the file (`NAME.phobos-staging`), region by region, each
//! region write idempotent (the same bytes at the same offset), and renames
//! the staging copy over the output only when every region is stored.

mod element;

pub use element::{HostTensor, IntoHostTensor, RawElement, decode, encode};

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use phobos_rt::DType;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("`{uri}`: only file:// URIs are supported (file:///abs/path or file://relative/path)")]
    Scheme { uri: String },
    #[error("{what}: expected {expected_bytes} bytes, the file has {actual_bytes}")]
    Size {
        what: String,
        expected_bytes: u64,
        actual_bytes: u64,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "bad shape `{text}`: expected N, RxC (or up to 4 dims, AxBxCxD) with positive integers"
    )]
    Shape { text: String },
    #[error(transparent)]
    Runtime(#[from] phobos_rt::Error),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The path of a `file://` URI; a relative path is taken relative to `base`.
pub fn uri_path(uri: &str, base: Option<&Path>) -> Result<PathBuf, StoreError> {
    let rest = uri
        .strip_prefix("file://")
        .ok_or_else(|| StoreError::Scheme {
            uri: uri.to_string(),
        })?;
    if rest.is_empty() {
        return Err(StoreError::Scheme {
            uri: uri.to_string(),
        });
    }
    let path = PathBuf::from(rest);
    Ok(match base {
        Some(base) if path.is_relative() => base.join(path),
        _ => path,
    })
}

/// Parses `N` (rank 1), `RxC` (rank 2), up to rank 4 (`AxBxCxD`).
pub fn parse_shape(text: &str) -> Result<Vec<usize>, StoreError> {
    let bad = || StoreError::Shape {
        text: text.to_string(),
    };
    let dims = text
        .split('x')
        .map(|d| {
            d.trim()
                .parse::<usize>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(bad)
        })
        .collect::<Result<Vec<_>, _>>()?;
    if dims.is_empty() || dims.len() > 4 {
        return Err(bad());
    }
    Ok(dims)
}

/// Bytes a tensor of `dtype` and `shape` occupies.
pub fn len_bytes(dtype: DType, shape: &[usize]) -> u64 {
    shape.iter().product::<usize>() as u64 * dtype.size_bytes() as u64
}

/// Checks that the file at `path` exists and holds exactly `dtype` x `shape`.
pub fn check_size(path: &Path, dtype: DType, shape: &[usize]) -> Result<(), StoreError> {
    let actual = std::fs::metadata(path).map_err(io(path))?.len();
    let expected = len_bytes(dtype, shape);
    if actual != expected {
        return Err(StoreError::Size {
            what: format!("{} ({} {:?})", path.display(), dtype.name(), shape),
            expected_bytes: expected,
            actual_bytes: actual,
        });
    }
    Ok(())
}

/// Reads a whole tensor file.
pub fn read_tensor(path: &Path, dtype: DType, shape: &[usize]) -> Result<HostTensor, StoreError> {
    check_size(path, dtype, shape)?;
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(io(path))?;
    HostTensor::from_le_bytes(dtype, shape, &bytes)
}

/// Reads `len_bytes` bytes at `offset`.
pub fn read_range(path: &Path, offset: u64, len_bytes: usize) -> Result<Vec<u8>, StoreError> {
    let file = File::open(path).map_err(io(path))?;
    let mut bytes = vec![0u8; len_bytes];
    file.read_exact_at(&mut bytes, offset).map_err(io(path))?;
    Ok(bytes)
}

/// Writes a whole file atomically: a temporary beside it, then a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = sibling(path, "phobos-tmp");
    let mut file = File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(bytes).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// `path` with `.suffix` appended to its file name.
pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// The staging copy an output is written into before its final rename.
pub fn staging_path(path: &Path) -> PathBuf {
    sibling(path, "phobos-staging")
}

/// Creates the staging copy of an output: a copy of the current file for a
/// read-modify-write tensor (its old values are read from the original,
/// which stays untouched until the rename), zeros for a write-only one.
pub fn begin_staging(
    path: &Path,
    dtype: DType,
    shape: &[usize],
    copy_old: bool,
) -> Result<PathBuf, StoreError> {
    let staging = staging_path(path);
    if copy_old {
        check_size(path, dtype, shape)?;
        std::fs::copy(path, &staging).map_err(io(&staging))?;
    } else {
        let file = File::create(&staging).map_err(io(&staging))?;
        file.set_len(len_bytes(dtype, shape))
            .map_err(io(&staging))?;
    }
    Ok(staging)
}

/// Writes `bytes` at `offset` of an existing file (idempotent: the same
/// region always gets the same bytes).
pub fn write_region(path: &Path, offset: u64, bytes: &[u8]) -> Result<(), StoreError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io(path))?;
    file.write_all_at(bytes, offset).map_err(io(path))
}

/// Flushes a staging copy and renames it over the output.
pub fn commit_staging(path: &Path) -> Result<(), StoreError> {
    let staging = staging_path(path);
    File::open(&staging)
        .and_then(|f| f.sync_all())
        .map_err(io(&staging))?;
    std::fs::rename(&staging, path).map_err(io(path))
}

/// How `tensor init` fills a new file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    Zero,
    /// Uniform in [-1, 1) from a seeded generator (SplitMix64).
    Random {
        seed: u64,
    },
    Const(f64),
    /// 0, 1, 2, ... in row-major order.
    Iota,
}

/// The value `fill` puts at element `index` (as f64, cast to the dtype).
pub fn fill_value(fill: Fill, index: u64) -> f64 {
    match fill {
        Fill::Zero => 0.0,
        Fill::Const(v) => v,
        Fill::Iota => index as f64,
        Fill::Random { seed } => {
            // SplitMix64 of (seed, index): any element is computable on its
            // own, so tests can regenerate an input without the file.
            let mut z = seed
                .wrapping_add(index.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }
}

/// Creates (or replaces, atomically) a tensor file of `dtype` x `shape`.
pub fn init_tensor(
    path: &Path,
    dtype: DType,
    shape: &[usize],
    fill: Fill,
) -> Result<(), StoreError> {
    let len: usize = shape.iter().product();
    let bytes = crate::with_dtype!(dtype, T => {
        let values: Vec<T> = (0..len as u64)
            .map(|i| phobos_rt::cast::<f64, T>(fill_value(fill, i)))
            .collect();
        encode(&values)
    });
    write_atomic(path, &bytes)
}

/// A few elements spread across the tensor: `(row-major index, value)`.
pub fn peek_tensor(
    path: &Path,
    dtype: DType,
    shape: &[usize],
    count: usize,
) -> Result<Vec<(usize, f64)>, StoreError> {
    check_size(path, dtype, shape)?;
    let len: usize = shape.iter().product();
    let size = dtype.size_bytes();
    let mut file = File::open(path).map_err(io(path))?;
    let mut picks: Vec<usize> = (0..count.min(len))
        .map(|i| {
            if count <= 1 {
                0
            } else {
                i * (len - 1) / (count.min(len) - 1).max(1)
            }
        })
        .collect();
    picks.dedup();
    let mut out = Vec::new();
    for index in picks {
        let mut bytes = vec![0u8; size];
        file.seek(SeekFrom::Start((index * size) as u64))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(io(path))?;
        let value = HostTensor::from_le_bytes(dtype, &[1], &bytes)?.to_f64_vec()?;
        out.push((index, value.first().copied().unwrap_or(f64::NAN)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_shapes() {
        assert_eq!(
            uri_path("file:///a/b.bin", None).unwrap(),
            PathBuf::from("/a/b.bin")
        );
        assert_eq!(
            uri_path("file://b.bin", Some(Path::new("/jobs"))).unwrap(),
            PathBuf::from("/jobs/b.bin")
        );
        assert!(uri_path("s3://x", None).is_err());
        assert!(uri_path("file://", None).is_err());
        assert_eq!(parse_shape("3x4").unwrap(), vec![3, 4]);
        assert_eq!(parse_shape("7").unwrap(), vec![7]);
        assert_eq!(parse_shape("2x3x4").unwrap(), vec![2, 3, 4]);
        for bad in ["", "0x3", "3x", "axb", "1x2x3x4x5", "-4"] {
            assert!(parse_shape(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn init_peek_and_staging() {
        let dir = std::env::temp_dir().join(format!("phobos-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        init_tensor(&path, DType::F32, &[3, 4], Fill::Iota).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 48);
        let peek = peek_tensor(&path, DType::F32, &[3, 4], 3).unwrap();
        assert_eq!(peek, vec![(0, 0.0), (5, 5.0), (11, 11.0)]);
        assert!(matches!(
            read_tensor(&path, DType::F32, &[4, 4]),
            Err(StoreError::Size { .. })
        ));
        let staging = begin_staging(&path, DType::F32, &[3, 4], true).unwrap();
        write_region(&staging, 4, &encode(&[-1.0f32])).unwrap();
        // The original is untouched until the commit.
        assert_eq!(
            read_tensor(&path, DType::F32, &[3, 4])
                .unwrap()
                .to_f64_vec()
                .unwrap()[1],
            1.0
        );
        commit_staging(&path).unwrap();
        assert_eq!(
            read_tensor(&path, DType::F32, &[3, 4])
                .unwrap()
                .to_f64_vec()
                .unwrap()[1],
            -1.0
        );
        assert!(!staging.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn random_fill_is_seeded_and_in_range() {
        let a: Vec<f64> = (0..1000)
            .map(|i| fill_value(Fill::Random { seed: 7 }, i))
            .collect();
        let b: Vec<f64> = (0..1000)
            .map(|i| fill_value(Fill::Random { seed: 7 }, i))
            .collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        assert_ne!(a[0], fill_value(Fill::Random { seed: 8 }, 0));
    }
}
