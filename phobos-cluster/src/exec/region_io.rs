//! Reading and writing a box of a row-major tensor file, one contiguous
//! run (the innermost dim) at a time.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use phobos_rt::DType;

use crate::plan::Region;
use crate::store::{HostTensor, StoreError};

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Calls `run(file_offset_elems, buffer_offset_elems, len_elems)` for each
/// innermost run of `region` in a tensor of `shape`.
fn for_each_run(
    shape: &[usize],
    region: &Region,
    mut run: impl FnMut(usize, usize, usize) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let rank = shape.len();
    if rank == 0 || region.elements() == 0 {
        return Ok(());
    }
    let inner = region.len[rank - 1];
    let outer: usize = region.len[..rank - 1].iter().product();
    let mut index = vec![0usize; rank - 1];
    for buffer_row in 0..outer {
        let mut offset = 0usize;
        for d in 0..rank - 1 {
            offset = offset * shape[d] + region.start[d] + index[d];
        }
        offset = offset * shape[rank - 1] + region.start[rank - 1];
        run(offset, buffer_row * inner, inner)?;
        for d in (0..rank - 1).rev() {
            index[d] += 1;
            if index[d] < region.len[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(())
}

/// Reads `region` of the tensor file at `path` into a tensor of the
/// region's shape.
pub fn read_region(
    path: &Path,
    dtype: DType,
    shape: &[usize],
    region: &Region,
) -> Result<HostTensor, StoreError> {
    let size = dtype.size_bytes();
    let file = File::open(path).map_err(io(path))?;
    let mut bytes = vec![0u8; region.elements() * size];
    for_each_run(shape, region, |file_off, buf_off, len| {
        file.read_exact_at(
            &mut bytes[buf_off * size..(buf_off + len) * size],
            (file_off * size) as u64,
        )
        .map_err(io(path))
    })?;
    HostTensor::from_le_bytes(dtype, &region.len, &bytes)
}

/// Writes the sub-box `region` of a buffer that holds `buffer_region` of
/// the tensor into the file at `path` (idempotent).
pub fn write_region(
    path: &Path,
    shape: &[usize],
    buffer: &HostTensor,
    buffer_region: &Region,
    region: &Region,
) -> Result<(), StoreError> {
    let size = buffer.dtype().size_bytes();
    let bytes = buffer.to_le_bytes()?;
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io(path))?;
    // Offsets of `region` inside the buffer.
    let local = Region {
        start: region
            .start
            .iter()
            .zip(&buffer_region.start)
            .map(|(a, b)| a - b)
            .collect(),
        len: region.len.clone(),
    };
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for_each_run(&buffer_region.len, &local, |buf_off, _, len| {
        runs.push((buf_off, len));
        Ok(())
    })?;
    let mut file_runs: Vec<usize> = Vec::new();
    for_each_run(shape, region, |file_off, _, _| {
        file_runs.push(file_off);
        Ok(())
    })?;
    for ((buf_off, len), file_off) in runs.into_iter().zip(file_runs) {
        file.write_all_at(
            &bytes[buf_off * size..(buf_off + len) * size],
            (file_off * size) as u64,
        )
        .map_err(io(path))?;
    }
    Ok(())
}
