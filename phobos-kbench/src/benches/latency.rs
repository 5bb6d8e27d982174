//! Launch latency: an empty kernel through its typed `launch` (dims bound,
//! tuner consulted, grid run on the pool), 1 program and 1,000 programs,
//! back to back; and, on the host, 10 launches of as many empty programs
//! recorded once and replayed as one graph (per launch: replay / 10).

use anyhow::Result;

use super::{Bench, Ctx};
use crate::measure::mean_time;
use crate::report::Row;

phobos::kernel! {
    @grid(N)
    kernel empty(x: tensor<f32>[N]) {
    }
}

pub fn benches() -> Vec<Box<dyn Bench>> {
    vec![Box::new(LaunchLatency)]
}

struct LaunchLatency;

/// Targets from issue 9: the launch overhead, not the work.
const TARGETS_US: [(usize, f64); 2] = [(1, 2.0), (1000, 20.0)];

impl Bench for LaunchLatency {
    fn name(&self) -> &'static str {
        "launch_latency"
    }

    fn default_sizes(&self) -> &'static [&'static str] {
        &["1", "1000"]
    }

    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>> {
        let programs = super::parse_dims(size, 1, "a program count")?[0];
        let dev = &ctx.device;
        let x = dev.zeros::<f32>([programs])?;
        let time = mean_time(20_000, || Ok(empty::launch(dev, &x)?))?;
        let mut row = Row::new(self.name(), size, "phobos launch");
        row.time_us = time.as_secs_f64() * 1e6;
        row.value = row.time_us;
        row.unit = "us";
        if let Some((_, target)) = TARGETS_US.iter().find(|(p, _)| *p == programs) {
            row.note = format!(
                "target < {target} us: {}",
                if row.time_us < *target {
                    "met"
                } else {
                    "missed"
                }
            );
        }
        let mut rows = vec![row];
        if let phobos::Backend::Host(host) = dev.backend() {
            const LAUNCHES: usize = 10;
            let graph = host.record(|rec| {
                for _ in 0..LAUNCHES {
                    rec.launch([programs, 1, 1], |_| Ok(()))?;
                }
                Ok(())
            })?;
            let time = mean_time(2_000, || Ok(graph.replay()?))? / LAUNCHES as u32;
            let mut row = Row::new(self.name(), size, "recorded graph, per launch");
            row.time_us = time.as_secs_f64() * 1e6;
            row.value = row.time_us;
            row.unit = "us";
            row.note = format!("{LAUNCHES} launches per replay, one wake-up");
            rows.push(row);
        }
        Ok(rows)
    }
}
