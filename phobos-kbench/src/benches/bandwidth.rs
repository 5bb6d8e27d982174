//! The STREAM-style copy every bandwidth-bound kernel is compared with,
//! and saxpy (`examples/kernels/saxpy.ph`), the simplest of them.

use std::time::Duration;

use anyhow::Result;
use phobos::tune::Tuner;
use phobos_examples::kernels::saxpy;

use super::{Bench, Ctx, parse_dims, random};
use crate::measure::{median_time, median_turns};
use crate::report::Row;

pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![Box::new(Saxpy)]
}

/// The STREAM-style copy: `len_bytes` of `f32` copied from one buffer to
/// another, split in contiguous parts over `threads` threads, two ways:
/// glibc's `memcpy` (`copy_from_slice`), which on a CPU with a large L3
/// keeps ordinary stores (and their read of each line) for these sizes,
/// and streaming stores, which skip the read, as the kernels' large
/// outputs do. The faster of the two is the reference.
pub struct CopyReference {
    src: Vec<f32>,
    dst: Vec<f32>,
    threads: usize,
}

impl CopyReference {
    pub fn new(threads: usize, len_bytes: usize) -> CopyReference {
        let len = len_bytes / 4;
        CopyReference {
            src: vec![1.0f32; len],
            dst: vec![0.0f32; len],
            threads,
        }
    }

    /// Bytes one copy moves (read + written).
    pub fn bytes(&self) -> usize {
        2 * self.src.len() * 4
    }

    fn run(&mut self, copy: fn(&mut [f32], &[f32])) -> Result<()> {
        // Parts of whole cache lines, so every part's streaming stores
        // start on a line.
        let part = self
            .src
            .len()
            .div_ceil(self.threads.max(1))
            .next_multiple_of(16);
        std::thread::scope(|scope| {
            for (to, from) in self.dst.chunks_mut(part).zip(self.src.chunks(part)) {
                scope.spawn(move || copy(to, from));
            }
        });
        Ok(())
    }

    /// `kernel` (which moves `kernel_bytes`) and both copies timed in
    /// turns ([`median_turns`]): the kernel's row, in GB/s, compared with
    /// the faster copy, and that copy's row (the slower one in its note).
    pub fn rows(
        &mut self,
        (bench, size, implementation): (&str, &str, &str),
        kernel_bytes: usize,
        mut kernel: impl FnMut() -> Result<()>,
    ) -> Result<(Row, Row)> {
        let times = median_turns(3, |i| match i {
            0 => kernel(),
            1 => self.run(|to, from| to.copy_from_slice(from)),
            _ => self.run(stream_copy),
        })?;
        let mut row =
            Row::new(bench, size, implementation).timed(times[0], kernel_bytes as f64, "GB/s");
        let gbs = |time: Duration| self.bytes() as f64 / time.as_secs_f64() / 1e9;
        let (memcpy_time, streamed_time) = (times[1], times[2]);
        let (faster, slower, slower_name) = if streamed_time < memcpy_time {
            (streamed_time, memcpy_time, "memcpy")
        } else {
            (memcpy_time, streamed_time, "streaming stores")
        };
        let mut copy =
            Row::new(bench, size, "copy (STREAM-style)").timed(faster, self.bytes() as f64, "GB/s");
        copy.note = format!(
            "{} MiB, same threads, faster of memcpy and streaming stores, timed in turns with the kernel ({slower_name}: {:.2} GB/s)",
            (self.src.len() * 4) >> 20,
            gbs(slower)
        );
        row.compare(&copy);
        Ok((row, copy))
    }
}

/// `to = from` with streaming stores where the CPU has them (16 bytes a
/// store, aligned; the ends copied plainly); a plain copy elsewhere.
fn stream_copy(to: &mut [f32], from: &[f32]) {
    let len = to.len().min(from.len());
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_ps, _mm_sfence, _mm_stream_ps};
        let head = to.as_ptr().align_offset(16).min(len);
        let body_end = head + (len - head) / 4 * 4;
        to[..head].copy_from_slice(&from[..head]);
        for at in (head..body_end).step_by(4) {
            // SAFETY: `at + 4 <= body_end <= len` for both slices, and
            // `to[at]` is 16-byte aligned (`head` aligns it, steps of 16
            // bytes keep it); SSE is part of the x86_64 baseline.
            unsafe { _mm_stream_ps(to.as_mut_ptr().add(at), _mm_loadu_ps(from.as_ptr().add(at))) };
        }
        // SAFETY: as above; orders the streamed stores before the thread
        // ends (the scope's join then publishes them).
        unsafe { _mm_sfence() };
        to[body_end..len].copy_from_slice(&from[body_end..len]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    to[..len].copy_from_slice(&from[..len]);
}

struct Saxpy;

impl Bench for Saxpy {
    fn name(&self) -> &'static str {
        "saxpy"
    }

    fn default_sizes(&self) -> &'static [&'static str] {
        &["16777216"]
    }

    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let n = parse_dims(size, 1, "N")?[0];
        let dev = &ctx.device;
        let x = dev.tensor_from(&random(n, 12), [n])?;
        let y = dev.tensor_from(&random(n, 13), [n])?;
        let mut out = dev.zeros::<f32>([n])?;
        let (index, label) = ctx.choose(saxpy::CONFIG_TEXTS, || {
            let config = saxpy::select_config(Tuner::global(), dev, &x, &y, &out, 2.0)?;
            Ok(saxpy::CONFIGS
                .iter()
                .position(|c| *c == config)
                .unwrap_or(0))
        })?;
        let config = saxpy::CONFIGS[index];
        let mut run = || Ok(saxpy::launch_with(dev, &config, &x, &y, &mut out, 2.0)?);
        let bytes = 3 * n * 4;
        if !dev.is_host() {
            let time = median_time(run)?;
            let mut row = Row::new(self.name(), size, "phobos").timed(time, bytes as f64, "GB/s");
            row.config = label;
            return Ok(vec![row]);
        }
        let (mut row, copy) = ctx.with_copy_reference(|copy| {
            copy.rows((self.name(), size, "phobos"), bytes, &mut run)
        })?;
        row.config = label;
        Ok(vec![row, copy])
    }
}
