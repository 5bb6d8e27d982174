//! `phobos bench MODEL.gguf`: llama-bench's tests, rows and units, so the
//! two tables sit side by side. `pp N` times N prompt tokens in batches on
//! a fresh context, `tg N` times N single-token steps; with `-d D` both run
//! after D tokens already in the cache. Each test runs once untimed to warm
//! up, then `-r` times; t/s is the mean and sample standard deviation.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use phobos_models::engine::{LogitsWanted, Model, SeqInput};
use phobos_models::gguf::Gguf;
use phobos_models::sample::SplitMix64;

use super::load::load_model;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OutputFormat {
    Md,
    Csv,
    Json,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    pub model: PathBuf,
    /// Prompt lengths to test (comma separated; 0 skips).
    #[arg(
        short = 'p',
        long = "n-prompt",
        value_delimiter = ',',
        default_value = "512"
    )]
    pub n_prompt: Vec<usize>,
    /// Generation lengths to test (comma separated; 0 skips).
    #[arg(
        short = 'n',
        long = "n-gen",
        value_delimiter = ',',
        default_value = "128"
    )]
    pub n_gen: Vec<usize>,
    /// Tokens already in the context before each test.
    #[arg(
        short = 'd',
        long = "n-depth",
        value_delimiter = ',',
        default_value = "0"
    )]
    pub n_depth: Vec<usize>,
    /// Repetitions of each test.
    #[arg(short = 'r', long = "repetitions", default_value_t = 5)]
    pub repetitions: usize,
    /// Threads for every pool the engine uses (default: the host pool's
    /// `PHOBOS_THREADS`, else the physical cores). One count per run: the
    /// host pool is sized once per process.
    #[arg(short = 't', long = "threads", value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// Sequences decoded together in the `tg` tests (comma separated), each
    /// with its own session, one token each per batched forward pass, as
    /// the server's slots are (llama-batched-bench's `-npl`). A row with
    /// more than one is named `tgN xS` and its t/s counts every sequence's
    /// tokens.
    #[arg(
        short = 's',
        long = "sequences",
        value_delimiter = ',',
        default_value = "1"
    )]
    pub sequences: Vec<usize>,
    /// Tokens per prompt batch.
    #[arg(short = 'b', long = "batch-size", default_value_t = 512)]
    pub batch_size: usize,
    #[arg(short = 'o', long = "output", value_enum, default_value = "md")]
    pub output: OutputFormat,
}

struct Row {
    test: String,
    n_prompt: usize,
    n_gen: usize,
    n_depth: usize,
    threads: usize,
    samples_ts: Vec<f64>,
}

impl Row {
    fn mean(&self) -> f64 {
        self.samples_ts.iter().sum::<f64>() / self.samples_ts.len().max(1) as f64
    }
    fn stddev(&self) -> f64 {
        let n = self.samples_ts.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.samples_ts.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let mut thread_counts = args.threads.clone();
    thread_counts.dedup();
    if thread_counts.len() > 1 {
        anyhow::bail!(
            "-t {:?}: phobos bench takes one thread count per run (the host thread pool is sized once per process); run it once per count",
            args.threads
        );
    }
    let requested = thread_counts.first().copied();
    let mut rows = Vec::new();
    let mut description = None;
    {
        let model = load_model(&args.model, requested)?;
        let threads = model.n_threads();
        description.get_or_insert_with(|| describe(model.gguf()));
        for &depth in &args.n_depth {
            for &n in args.n_prompt.iter().filter(|&&n| n > 0) {
                let samples = repeat(args.repetitions, || {
                    time_prompt(&model, depth, n, args.batch_size)
                })?;
                rows.push(Row {
                    test: test_name("pp", n, depth),
                    n_prompt: n,
                    n_gen: 0,
                    n_depth: depth,
                    threads,
                    samples_ts: samples,
                });
            }
            for &n in args.n_gen.iter().filter(|&&n| n > 0) {
                for &n_seq in args.sequences.iter().filter(|&&s| s > 0) {
                    let samples = repeat(args.repetitions, || {
                        time_gen(&model, depth, n, n_seq, args.batch_size)
                    })?;
                    let mut test = test_name("tg", n, depth);
                    if n_seq > 1 {
                        test = format!("{test} x{n_seq}");
                    }
                    rows.push(Row {
                        test,
                        n_prompt: 0,
                        n_gen: n,
                        n_depth: depth,
                        threads,
                        samples_ts: samples,
                    });
                }
            }
        }
    }
    let description = description.unwrap_or_default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match args.output {
        OutputFormat::Md => print_markdown(&mut out, &description, &rows)?,
        OutputFormat::Csv => print_csv(&mut out, &description, &rows)?,
        OutputFormat::Json => print_json(&mut out, &description, &rows)?,
    }
    Ok(())
}

fn test_name(kind: &str, n: usize, depth: usize) -> String {
    if depth > 0 {
        format!("{kind}{n} @ d{depth}")
    } else {
        format!("{kind}{n}")
    }
}

/// One warm-up run, then `reps` timed ones (tokens per second each).
fn repeat(reps: usize, mut f: impl FnMut() -> anyhow::Result<f64>) -> anyhow::Result<Vec<f64>> {
    f()?;
    (0..reps.max(1)).map(|_| f()).collect()
}

fn random_tokens(model: &Model, n: usize, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| (rng.next_u64() % model.n_vocab() as u64) as u32)
        .collect()
}

fn fill(
    model: &Model,
    session: &mut phobos_models::engine::Session,
    tokens: &[u32],
    batch: usize,
) -> anyhow::Result<()> {
    for chunk in tokens.chunks(batch.max(1)) {
        model.forward(&mut [SeqInput {
            session,
            tokens: chunk,
            logits: LogitsWanted::Last,
        }])?;
    }
    Ok(())
}

fn time_prompt(model: &Model, depth: usize, n: usize, batch: usize) -> anyhow::Result<f64> {
    let mut session = model.new_session(depth.saturating_add(n))?;
    fill(model, &mut session, &random_tokens(model, depth, 1), batch)?;
    let tokens = random_tokens(model, n, 2);
    let t0 = Instant::now();
    fill(model, &mut session, &tokens, batch)?;
    Ok(n as f64 / t0.elapsed().as_secs_f64())
}

/// `n` decode steps of `n_seq` sequences at once (one batched forward per
/// step, a token per sequence); tokens per second over all sequences.
fn time_gen(
    model: &Model,
    depth: usize,
    n: usize,
    n_seq: usize,
    batch: usize,
) -> anyhow::Result<f64> {
    let mut sessions = Vec::with_capacity(n_seq);
    for seq in 0..n_seq {
        let mut session = model.new_session(depth.saturating_add(n))?;
        fill(
            model,
            &mut session,
            &random_tokens(model, depth, 1 + seq as u64),
            batch,
        )?;
        sessions.push(session);
    }
    let tokens = random_tokens(model, n * n_seq, 3);
    let t0 = Instant::now();
    for step in tokens.chunks(n_seq.max(1)) {
        let mut inputs: Vec<SeqInput<'_>> = sessions
            .iter_mut()
            .zip(step)
            .map(|(session, t)| SeqInput {
                session,
                tokens: std::slice::from_ref(t),
                logits: LogitsWanted::Last,
            })
            .collect();
        model.forward(&mut inputs)?;
    }
    Ok((n * n_seq) as f64 / t0.elapsed().as_secs_f64())
}

#[derive(Default)]
struct Description {
    model_type: String,
    size_bytes: u64,
    n_params: u64,
}

/// llama-bench's model column: architecture, size label, file type.
fn describe(gguf: &Gguf) -> Description {
    let arch = gguf.arch().unwrap_or("?");
    let label = gguf.get_str("general.size_label").unwrap_or("?");
    let ftype = gguf
        .get_u32("general.file_type")
        .ok()
        .map_or("?", file_type_name);
    Description {
        model_type: format!("{arch} {label} {ftype}"),
        size_bytes: gguf.tensors().iter().map(|t| t.n_bytes).sum(),
        n_params: gguf.tensors().iter().map(|t| t.n_elements).sum(),
    }
}

/// llama.cpp's names of `general.file_type`.
fn file_type_name(ftype: u32) -> &'static str {
    match ftype {
        0 => "all F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K - Medium",
        11 => "Q3_K - Small",
        12 => "Q3_K - Medium",
        13 => "Q3_K - Large",
        14 => "Q4_K - Small",
        15 => "Q4_K - Medium",
        16 => "Q5_K - Small",
        17 => "Q5_K - Medium",
        18 => "Q6_K",
        32 => "BF16",
        _ => "?",
    }
}

fn size_text(bytes: u64) -> String {
    let mib = bytes as f64 / (1024.0 * 1024.0);
    if mib >= 1024.0 {
        format!("{:.2} GiB", mib / 1024.0)
    } else {
        format!("{mib:.2} MiB")
    }
}

fn params_text(n: u64) -> String {
    if n >= 1_000_000_000 {
        format!("{:.2} B", n as f64 / 1e9)
    } else {
        format!("{:.2} M", n as f64 / 1e6)
    }
}

fn print_markdown(out: &mut impl Write, d: &Description, rows: &[Row]) -> anyhow::Result<()> {
    writeln!(
        out,
        "| model                          |       size |     params | backend    | threads |            test |                  t/s |"
    )?;
    writeln!(
        out,
        "| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |"
    )?;
    for r in rows {
        writeln!(
            out,
            "| {:<30} | {:>10} | {:>10} | {:<10} | {:>7} | {:>15} | {:>20} |",
            d.model_type,
            size_text(d.size_bytes),
            params_text(d.n_params),
            "Phobos CPU",
            r.threads,
            r.test,
            format!("{:.2} ± {:.2}", r.mean(), r.stddev())
        )?;
    }
    Ok(())
}

fn print_csv(out: &mut impl Write, d: &Description, rows: &[Row]) -> anyhow::Result<()> {
    writeln!(
        out,
        "model_type,model_size,model_n_params,backends,n_threads,n_prompt,n_gen,n_depth,avg_ts,stddev_ts"
    )?;
    for r in rows {
        writeln!(
            out,
            "\"{}\",{},{},\"Phobos CPU\",{},{},{},{},{:.6},{:.6}",
            d.model_type,
            d.size_bytes,
            d.n_params,
            r.threads,
            r.n_prompt,
            r.n_gen,
            r.n_depth,
            r.mean(),
            r.stddev()
        )?;
    }
    Ok(())
}

fn print_json(out: &mut impl Write, d: &Description, rows: &[Row]) -> anyhow::Result<()> {
    let items: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "model_type": d.model_type,
                "model_size": d.size_bytes,
                "model_n_params": d.n_params,
                "backends": "Phobos CPU",
                "n_threads": r.threads,
                "n_prompt": r.n_prompt,
                "n_gen": r.n_gen,
                "n_depth": r.n_depth,
                "avg_ts": r.mean(),
                "stddev_ts": r.stddev(),
                "samples_ts": r.samples_ts,
            })
        })
        .collect();
    writeln!(out, "{}", serde_json::to_string_pretty(&items)?)?;
    Ok(())
}
