//! Flash attention f32 (head dim 64, S = T) against a plain numpy
//! implementation (scores, softmax, weighted sum; OpenBLAS matmuls).

use anyhow::Result;
use phobos::tune::Tuner;
use phobos_examples::kernels::flash_attn_f32;

use super::{Bench, Ctx, parse_dims, random};
use crate::measure::median_time;
use crate::numpy;
use crate::report::Row;

pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![Box::new(FlashAttnF32)]
}

const HEAD_DIM: usize = 64;

struct FlashAttnF32;

impl Bench for FlashAttnF32 {
    fn name(&self) -> &'static str {
        "flash_attn_f32"
    }

    fn default_sizes(&self) -> &'static [&'static str] {
        &["8x1024"]
    }

    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let d = parse_dims(size, 2, "HxS (heads x sequence, head dim 64)")?;
        let (h, s) = (d[0], d[1]);
        let len = h * s * HEAD_DIM;
        let dev = &ctx.device;
        let q = dev.tensor_from(&random(len, 9), [h, s, HEAD_DIM])?;
        let k = dev.tensor_from(&random(len, 10), [h, s, HEAD_DIM])?;
        let v = dev.tensor_from(&random(len, 11), [h, s, HEAD_DIM])?;
        let mut o = dev.zeros::<f32>([h, s, HEAD_DIM])?;
        let scale = 1.0 / (HEAD_DIM as f32).sqrt();
        // Q K^T and P V: 2 flop per multiply-add each.
        let flop = 4.0 * (h * s * s * HEAD_DIM) as f64;
        let (index, label) = ctx.choose(flash_attn_f32::CONFIG_TEXTS, || {
            let config =
                flash_attn_f32::select_config(Tuner::global(), dev, &q, &k, &v, &o, scale)?;
            Ok(flash_attn_f32::CONFIGS
                .iter()
                .position(|c| *c == config)
                .unwrap_or(0))
        })?;
        let config = flash_attn_f32::CONFIGS[index];
        let time = median_time(|| {
            Ok(flash_attn_f32::launch_with(
                dev, &config, &q, &k, &v, &mut o, scale,
            )?)
        })?;
        let mut phobos = Row::new(self.name(), size, "phobos").timed(time, flop, "GFLOP/s");
        phobos.config = label;
        let mut rows = Vec::new();
        if ctx.numpy {
            let timing = numpy::time("attention", &[h, s, s, HEAD_DIM], ctx.threads)?;
            let mut row = Row::new(self.name(), size, "numpy (plain attention)").timed(
                timing.median,
                flop,
                "GFLOP/s",
            );
            row.note = timing.blas;
            phobos.compare(&row);
            rows.push(row);
        }
        rows.insert(0, phobos);
        Ok(rows)
    }
}
