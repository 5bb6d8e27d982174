//! f32 gemm (`examples/kernels/gemm_f32.ph`) against OpenBLAS through numpy
//! and the `matrixmultiply` crate, same shapes, same run. The kernel's
//! output is checked against matrixmultiply's.

use anyhow::{Result, ensure};
use phobos::tune::Tuner;
use phobos_examples::kernels::gemm_f32;

use super::{Bench, Ctx, parse_dims, random};
use crate::measure::median_time;
use crate::numpy;
use crate::report::Row;

pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![Box::new(GemmF32)]
}

struct GemmF32;

impl Bench for GemmF32 {
    fn name(&self) -> &'static str {
        "gemm_f32"
    }

    fn default_sizes(&self) -> &'static [&'static str] {
        &["1024", "2048"]
    }

    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let [m, n, k] = match parse_dims(size, 1, "N or MxNxK") {
            Ok(d) => [d[0]; 3],
            Err(_) => {
                let d = parse_dims(size, 3, "N or MxNxK")?;
                [d[0], d[1], d[2]]
            }
        };
        let flop = 2.0 * (m * n * k) as f64;
        let (a, b) = (random(m * k, 1), random(k * n, 2));
        let dev = &ctx.device;
        let ta = dev.tensor_from(&a, [m, k])?;
        let tb = dev.tensor_from(&b, [k, n])?;
        let mut tc = dev.zeros::<f32>([m, n])?;
        let (index, config_label) = ctx.choose(gemm_f32::CONFIG_TEXTS, || {
            let config = gemm_f32::select_config(Tuner::global(), dev, &ta, &tb, &tc, 1.0, 0.0)?;
            Ok(gemm_f32::CONFIGS
                .iter()
                .position(|c| *c == config)
                .unwrap_or(0))
        })?;
        let config = gemm_f32::CONFIGS[index];
        let time = median_time(|| {
            Ok(gemm_f32::launch_with(
                dev, &config, &ta, &tb, &mut tc, 1.0, 0.0,
            )?)
        })?;
        let mut phobos = Row::new(self.name(), size, "phobos").timed(time, flop, "GFLOP/s");
        phobos.config = config_label;
        let mut rows = Vec::new();
        if ctx.device.is_host() {
            if ctx.numpy {
                let timing = numpy::time("gemm", &[m, n, k], ctx.threads)?;
                let mut row =
                    Row::new(self.name(), size, "numpy").timed(timing.median, flop, "GFLOP/s");
                row.note = timing.blas;
                phobos.compare(&row);
                rows.push(row);
            }
            let mut reference = vec![0.0f32; m * n];
            let time = median_time(|| {
                // SAFETY: a is m x k, b is k x n, reference is m x n, all
                // row-major with unit column stride, as sgemm requires.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k as isize,
                        1,
                        b.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        reference.as_mut_ptr(),
                        n as isize,
                        1,
                    );
                }
                Ok(())
            })?;
            let row = Row::new(self.name(), size, "matrixmultiply").timed(time, flop, "GFLOP/s");
            phobos.compare(&row);
            rows.push(row);
            // Same bound as the example tests: K + 3 roundings of |a||b| <= K.
            let bound = (k as f64 + 3.0) * k as f64 / f64::from(1u32 << 24);
            let got = tc.to_vec()?;
            let worst = got
                .iter()
                .zip(&reference)
                .map(|(g, r)| f64::from((g - r).abs()))
                .fold(0.0, f64::max);
            ensure!(
                worst <= bound,
                "gemm_f32 differs from sgemm by {worst:e} > {bound:e}"
            );
        }
        rows.insert(0, phobos);
        Ok(rows)
    }
}
