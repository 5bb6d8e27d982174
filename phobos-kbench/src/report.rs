//! Result rows: printed as they come, and optionally written as CSV.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

/// One implementation at one size.
#[derive(Debug, Clone)]
pub struct Row {
    pub bench: String,
    pub size: String,
    /// `phobos` or the reference's name.
    pub implementation: String,
    /// The config run (`NAME=value,...`), and whether it was tuned or pinned.
    pub config: String,
    pub time_us: f64,
    /// Throughput in `unit`.
    pub value: f64,
    /// `GFLOP/s`, `GB/s` or `us` (latency rows).
    pub unit: &'static str,
    /// Phobos rows: the ratio of this row's throughput to each reference's.
    pub ratios: Vec<(String, f64)>,
    pub note: String,
}

impl Row {
    pub fn new(bench: &str, size: &str, implementation: &str) -> Row {
        Row {
            bench: bench.to_string(),
            size: size.to_string(),
            implementation: implementation.to_string(),
            config: String::new(),
            time_us: 0.0,
            value: 0.0,
            unit: "",
            ratios: Vec::new(),
            note: String::new(),
        }
    }

    /// Sets the time and the throughput `work / time` in `unit` (`work` in
    /// FLOP for GFLOP/s, bytes for GB/s).
    pub fn timed(mut self, time: std::time::Duration, work: f64, unit: &'static str) -> Row {
        self.time_us = time.as_secs_f64() * 1e6;
        self.value = work / time.as_secs_f64() / 1e9;
        self.unit = unit;
        self
    }

    /// Adds `self.value / reference.value` under the reference's name.
    pub fn compare(&mut self, reference: &Row) {
        if reference.value > 0.0 {
            self.ratios.push((
                reference.implementation.clone(),
                self.value / reference.value,
            ));
        }
    }

    fn ratios_text(&self) -> String {
        self.ratios
            .iter()
            .map(|(name, ratio)| format!("{ratio:.2}x {name}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One aligned line.
    pub fn display(&self) -> String {
        let mut line = format!(
            "{:<15} {:<15} {:<24} {:>12.2} us {:>9.2} {:<7}",
            self.bench, self.size, self.implementation, self.time_us, self.value, self.unit
        );
        let ratios = self.ratios_text();
        if !ratios.is_empty() {
            let _ = write!(line, "  [{ratios}]");
        }
        if !self.config.is_empty() {
            let _ = write!(line, "  {}", self.config);
        }
        if !self.note.is_empty() {
            let _ = write!(line, "  ({})", self.note);
        }
        line
    }
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Writes `rows` as CSV with a header.
pub fn write_csv(path: &Path, rows: &[Row]) -> Result<()> {
    let mut text =
        String::from("bench,size,implementation,config,time_us,value,unit,ratios,note\n");
    for row in rows {
        let fields = [
            csv_field(&row.bench),
            csv_field(&row.size),
            csv_field(&row.implementation),
            csv_field(&row.config),
            format!("{:.3}", row.time_us),
            format!("{:.4}", row.value),
            row.unit.to_string(),
            csv_field(&row.ratios_text()),
            csv_field(&row.note),
        ];
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    std::fs::write(path, text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    #[test]
    fn throughput_and_ratios() {
        let mut row = Row::new("gemm_f32", "2", "phobos").timed(
            std::time::Duration::from_millis(1),
            2e6,
            "GFLOP/s",
        );
        assert!((row.value - 2.0).abs() < 1e-9);
        let reference = Row::new("gemm_f32", "2", "numpy").timed(
            std::time::Duration::from_millis(2),
            2e6,
            "GFLOP/s",
        );
        row.compare(&reference);
        assert_eq!(row.ratios, vec![("numpy".to_string(), 2.0)]);
        assert!(row.display().contains("2.00x numpy"));
    }
}
