//! Row-wise, bandwidth-bound kernels (softmax, rmsnorm, layernorm) in GB/s
//! of the bytes they must move (each input read once, the output written
//! once), against the STREAM-style copy bandwidth of the same run.

use anyhow::Result;
use phobos::tune::Tuner;
use phobos_examples::kernels::{layernorm, rmsnorm, softmax};

use super::{Bench, Ctx, parse_dims, random};
use crate::measure::median_time;
use crate::report::Row;

pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![Box::new(Softmax), Box::new(RmsNorm), Box::new(LayerNorm)]
}

const SIZES: &[&str] = &["4096x4096"];
const FORM: &str = "RxC";

/// The kernel's row and, on the host, the copy's, timed in turns with it.
fn timed_rows(
    ctx: &Ctx,
    (bench, size): (&str, &str),
    (bytes, label): (usize, String),
    mut run: impl FnMut() -> Result<()>,
) -> Result<Vec<Row>> {
    if !ctx.device.is_host() {
        let time = median_time(run)?;
        let mut row = Row::new(bench, size, "phobos").timed(time, bytes as f64, "GB/s");
        row.config = label;
        return Ok(vec![row]);
    }
    let (mut row, copy) =
        ctx.with_copy_reference(|copy| copy.rows((bench, size, "phobos"), bytes, &mut run))?;
    row.config = label;
    Ok(vec![row, copy])
}

struct Softmax;

impl Bench for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn default_sizes(&self) -> &'static [&'static str] {
        SIZES
    }
    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let d = parse_dims(size, 2, FORM)?;
        let (r, c) = (d[0], d[1]);
        let dev = &ctx.device;
        let x = dev.tensor_from(&random(r * c, 3), [r, c])?;
        let mut y = dev.zeros::<f32>([r, c])?;
        let (index, label) = ctx.choose(softmax::CONFIG_TEXTS, || {
            let config = softmax::select_config(Tuner::global(), dev, &x, &y)?;
            Ok(softmax::CONFIGS
                .iter()
                .position(|c| *c == config)
                .unwrap_or(0))
        })?;
        let config = softmax::CONFIGS[index];
        timed_rows(ctx, (self.name(), size), (2 * r * c * 4, label), || {
            Ok(softmax::launch_with(dev, &config, &x, &mut y)?)
        })
    }
}

struct RmsNorm;

impl Bench for RmsNorm {
    fn name(&self) -> &'static str {
        "rmsnorm"
    }
    fn default_sizes(&self) -> &'static [&'static str] {
        SIZES
    }
    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let d = parse_dims(size, 2, FORM)?;
        let (r, c) = (d[0], d[1]);
        let dev = &ctx.device;
        let x = dev.tensor_from(&random(r * c, 4), [r, c])?;
        let w = dev.tensor_from(&random(c, 5), [c])?;
        let mut y = dev.zeros::<f32>([r, c])?;
        let eps = 1e-6;
        let (index, label) = ctx.choose(rmsnorm::CONFIG_TEXTS, || {
            let config = rmsnorm::select_config(Tuner::global(), dev, &x, &w, &y, eps)?;
            Ok(rmsnorm::CONFIGS
                .iter()
                .position(|c| *c == config)
                .unwrap_or(0))
        })?;
        let config = rmsnorm::CONFIGS[index];
        let bytes = (2 * r * c + c) * 4;
        timed_rows(ctx, (self.name(), size), (bytes, label), || {
            Ok(rmsnorm::launch_with(dev, &config, &x, &w, &mut y, eps)?)
        })
    }
}

struct LayerNorm;

impl Bench for LayerNorm {
    fn name(&self) -> &'static str {
        "layernorm"
    }
    fn default_sizes(&self) -> &'static [&'static str] {
        SIZES
    }
    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let d = parse_dims(size, 2, FORM)?;
        let (r, c) = (d[0], d[1]);
        let dev = &ctx.device;
        let x = dev.tensor_from(&random(r * c, 6), [r, c])?;
        let w = dev.tensor_from(&random(c, 7), [c])?;
        let b = dev.tensor_from(&random(c, 8), [c])?;
        let mut y = dev.zeros::<f32>([r, c])?;
        let eps = 1e-5;
        let (index, label) = ctx.choose(layernorm::CONFIG_TEXTS, || {
            let config = layernorm::select_config(Tuner::global(), dev, &x, &w, &b, &y, eps)?;
            Ok(layernorm::CONFIGS
                .iter()
                .position(|c| *c == config)
                .unwrap_or(0))
        })?;
        let config = layernorm::CONFIGS[index];
        let bytes = (2 * r * c + 2 * c) * 4;
        timed_rows(ctx, (self.name(), size), (bytes, label), || {
            Ok(layernorm::launch_with(
                dev, &config, &x, &w, &b, &mut y, eps,
            )?)
        })
    }
}
