//! The STREAM-style copy every bandwidth-bound kernel is compared with,
//! and saxpy (`examples/kernels/saxpy.ph`), the simplest of them.

use std::time::Instant;

use anyhow::Result;
use phobos::tune::Tuner;
use phobos_examples::kernels::saxpy;

use super::{Bench, Ctx, parse_dims, random};
use crate::measure::median_time;
use crate::report::Row;

pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![Box::new(Saxpy)]
}

/// Copy bandwidth in GB/s (bytes read + bytes written per second) of
/// `len_bytes` split in contiguous parts over `threads` threads, median
/// of several runs.
pub fn copy_bandwidth(threads: usize, len_bytes: usize) -> f64 {
    let len = len_bytes / 4;
    let src = vec![1.0f32; len];
    let mut dst = vec![0.0f32; len];
    let part = len.div_ceil(threads.max(1));
    let mut run = || {
        std::thread::scope(|scope| {
            for (to, from) in dst.chunks_mut(part).zip(src.chunks(part)) {
                scope.spawn(move || to.copy_from_slice(from));
            }
        });
    };
    run();
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (times.len() < 50 && start.elapsed().as_secs_f64() < 0.5) {
        let begin = Instant::now();
        run();
        times.push(begin.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    2.0 * (len * 4) as f64 / times[times.len() / 2] / 1e9
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
        let time = median_time(|| Ok(saxpy::launch_with(dev, &config, &x, &y, &mut out, 2.0)?))?;
        let mut row = Row::new(self.name(), size, "phobos").timed(time, (3 * n * 4) as f64, "GB/s");
        row.config = label;
        if !dev.is_host() {
            return Ok(vec![row]);
        }
        let mut copy = Row::new(self.name(), size, "copy (STREAM-style)");
        copy.value = ctx.copy_gbs();
        copy.unit = "GB/s";
        row.compare(&copy);
        Ok(vec![row, copy])
    }
}
