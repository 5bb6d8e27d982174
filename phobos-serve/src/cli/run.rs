//! `phobos run MODEL.gguf [PROMPT]`: one answer, or a REPL without a prompt.
//! stdout carries only the model's text; everything else goes to stderr.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use phobos_models::chat::{ChatMessage, ChatRequest};
use phobos_models::engine::{LogitsWanted, MAX_CHECKPOINTS, Model, SeqInput, Session};
use phobos_models::sample::{Sampler, SamplerConfig};
use phobos_models::tokenizer::StreamDecoder;

use super::load::load_model;

#[derive(Args, Debug)]
pub struct RunArgs {
    pub model: PathBuf,
    /// The prompt; without one, an interactive session.
    pub prompt: Option<String>,
    /// Tokens to generate at most (-1: until end of generation or context).
    #[arg(short = 'n', long = "n-predict", default_value_t = -1, allow_hyphen_values = true)]
    pub n_predict: i64,
    #[arg(long, default_value_t = 0.8)]
    pub temp: f32,
    #[arg(long, default_value_t = 40)]
    pub top_k: usize,
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    #[arg(long, default_value_t = 0.05)]
    pub min_p: f32,
    #[arg(long, default_value_t = 0.0)]
    pub presence_penalty: f32,
    #[arg(long, default_value_t = 0.0)]
    pub frequency_penalty: f32,
    #[arg(long, default_value_t = 1.0)]
    pub repeat_penalty: f32,
    /// Tokens the penalties look back over.
    #[arg(long, default_value_t = 64)]
    pub repeat_last_n: usize,
    /// Random seed (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Context size in tokens (0: the model's training context).
    #[arg(short = 'c', long = "ctx-size", default_value_t = 4096)]
    pub ctx_size: usize,
    /// Threads (default: all cores).
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,
    /// Feed the prompt as is, without the chat template.
    #[arg(long)]
    pub raw: bool,
    /// Tokens per prompt-processing batch.
    #[arg(short = 'b', long = "batch-size", default_value_t = 512)]
    pub batch_size: usize,
    /// After the answer, report the memory on stderr: weights mapped and
    /// resident, f32 copies, KV cache, activation scratch, peak RSS.
    #[arg(long)]
    pub footprint: bool,
    /// Serve the model over the OpenAI API on this address instead (the
    /// original tool's spelling of `phobos serve MODEL --listen ADDR`).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
}

struct Stats {
    prompt_tokens: usize,
    prompt_secs: f64,
    gen_tokens: usize,
    gen_secs: f64,
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    if let Some(listen) = args.listen {
        let mut serve = crate::server::ServeArgs::for_model(&args.model, listen)?;
        serve.temp = args.temp;
        serve.top_k = u32::try_from(args.top_k).unwrap_or(u32::MAX);
        serve.top_p = args.top_p;
        serve.min_p = args.min_p;
        serve.presence_penalty = args.presence_penalty;
        serve.frequency_penalty = args.frequency_penalty;
        serve.repeat_penalty = args.repeat_penalty;
        serve.seed = args.seed;
        serve.threads = args.threads;
        serve.n_predict = usize::try_from(args.n_predict).ok();
        if args.ctx_size > 0 {
            serve.ctx_size = Some(args.ctx_size * serve.parallel as usize);
        }
        return crate::server::run(serve);
    }
    let model = load_model(&args.model, args.threads)?;
    let n_ctx =
        if args.ctx_size == 0 || (model.n_ctx_train() > 0 && args.ctx_size > model.n_ctx_train()) {
            model.n_ctx_train()
        } else {
            args.ctx_size
        };
    let mut session = model.new_session(n_ctx)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let mut sampler = Sampler::new(SamplerConfig {
        temperature: args.temp,
        top_k: args.top_k,
        top_p: args.top_p,
        min_p: args.min_p,
        repeat_penalty: args.repeat_penalty,
        presence_penalty: args.presence_penalty,
        frequency_penalty: args.frequency_penalty,
        penalty_last_n: args.repeat_last_n,
        seed,
    });
    let mut stats = Stats {
        prompt_tokens: 0,
        prompt_secs: 0.0,
        gen_tokens: 0,
        gen_secs: 0.0,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match &args.prompt {
        Some(prompt) => {
            let messages = vec![ChatMessage::new("user", prompt)];
            let text = render(&model, &messages, args.raw)?;
            answer(
                &model,
                &mut session,
                &mut sampler,
                &text,
                &args,
                &mut out,
                &mut stats,
            )?;
            writeln!(out)?;
        }
        None => repl(
            &model,
            &mut session,
            &mut sampler,
            &args,
            &mut out,
            &mut stats,
        )?,
    }
    out.flush()?;
    print_stats(&stats);
    if args.footprint {
        print_footprint(&model, &session, args.batch_size);
    }
    Ok(())
}

fn print_footprint(model: &Model, session: &Session, batch_size: usize) {
    let f = model.footprint();
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let resident = f
        .weights_resident_bytes
        .map_or("unknown".to_owned(), |b| format!("{:.1} MiB", mib(b)));
    eprintln!(
        "footprint: weights {:.1} MiB mapped ({:.2} MiB F32 in the file), {resident} resident, {:.2} MiB copied to f32 (norms, biases)",
        mib(f.weights_mapped_bytes),
        mib(f.weights_f32_bytes),
        mib(f.weights_copied_bytes),
    );
    eprintln!(
        "footprint: KV cache {} bytes/token, {:.1} MiB for the {} cached tokens (of a {}-token context: {:.1} MiB full)",
        f.kv_bytes_per_token,
        mib(session.kv_bytes() as u64),
        session.len(),
        session.n_ctx(),
        mib(f.kv_bytes_per_token * session.n_ctx() as u64),
    );
    if f.recurrent_bytes_per_session > 0 {
        eprintln!(
            "footprint: recurrent state {:.2} MiB per session, {:.2} MiB held now ({} checkpoints); at most {:.1} MiB with a full context and {MAX_CHECKPOINTS} checkpoints",
            mib(f.recurrent_bytes_per_session),
            mib(session.recurrent_bytes() as u64),
            session.checkpoint_positions().len(),
            mib(f.session_bytes_max(session.n_ctx())),
        );
    }
    eprintln!(
        "footprint: activations at most {} bytes per batch row, {:.1} MiB for a {batch_size}-token batch, plus {:.1} MiB per row of logits",
        f.scratch_bytes_per_row,
        mib(f.scratch_bytes_per_row * batch_size as u64),
        mib(f.logits_bytes_per_row),
    );
    if let Some(kib) = peak_rss_kib() {
        eprintln!(
            "footprint: peak resident set {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
}

/// `VmHWM` of this process (Linux), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn repl(
    model: &Model,
    session: &mut Session,
    sampler: &mut Sampler,
    args: &RunArgs,
    out: &mut impl Write,
    stats: &mut Stats,
) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    let mut messages: Vec<ChatMessage> = Vec::new();
    loop {
        if interactive {
            eprint!("> ");
        }
        let mut line = String::new();
        if stdin
            .lock()
            .read_line(&mut line)
            .context("reading standard input")?
            == 0
        {
            return Ok(());
        }
        let line = line.trim_end_matches(['\n', '\r']);
        if line.is_empty() {
            continue;
        }
        messages.push(ChatMessage::new("user", line));
        // The whole conversation is rendered each turn; the session keeps
        // the prefix it shares with the new rendering.
        let text = render(model, &messages, args.raw)?;
        let reply = answer(model, session, sampler, &text, args, out, stats)?;
        writeln!(out)?;
        out.flush()?;
        messages.push(ChatMessage::new("assistant", &reply));
    }
}

fn render(model: &Model, messages: &[ChatMessage], raw: bool) -> anyhow::Result<String> {
    let template = match model.chat_template() {
        Some(t) if !raw => t,
        _ => {
            return Ok(messages
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n"));
        }
    };
    let tok = model.tokenizer();
    let piece = |id: Option<u32>| {
        id.and_then(|i| tok.token_text(i))
            .unwrap_or_default()
            .to_owned()
    };
    let request = ChatRequest {
        messages: messages.to_vec(),
        add_generation_prompt: true,
        bos_token: piece(tok.bos_id()),
        eos_token: piece(tok.eos_id()),
        ..ChatRequest::default()
    };
    template
        .render(&request)
        .context("rendering the chat template")
}

/// Feeds the new part of `text` and streams the answer to `out`.
#[allow(clippy::too_many_arguments)]
fn answer(
    model: &Model,
    session: &mut Session,
    sampler: &mut Sampler,
    text: &str,
    args: &RunArgs,
    out: &mut impl Write,
    stats: &mut Stats,
) -> anyhow::Result<String> {
    let tok = model.tokenizer();
    // A rendered template already starts with BOS text; do not add another.
    let add_special = args.raw || model.chat_template().is_none();
    let mut tokens = tok
        .encode(text, add_special, true)
        .context("tokenizing the prompt")?;
    if tokens.is_empty() {
        tokens.extend(tok.bos_id());
    }
    // Keep the cached prefix, but always feed at least one token for logits.
    let keep = session
        .common_prefix_len(&tokens)
        .min(tokens.len().saturating_sub(1));
    session.truncate(keep);
    let new = &tokens[keep..];
    if session.len() + new.len() > session.n_ctx() {
        anyhow::bail!(
            "the prompt is {} tokens, over the context of {} tokens (raise -c)",
            tokens.len(),
            session.n_ctx()
        );
    }
    sampler.accept(new);
    let t0 = Instant::now();
    let mut logits = Vec::new();
    let chunks: Vec<&[u32]> = new.chunks(args.batch_size.max(1)).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let wanted = if i + 1 == chunks.len() {
            LogitsWanted::Last
        } else {
            LogitsWanted::None
        };
        let mut outs = model.forward(&mut [SeqInput {
            session,
            tokens: chunk,
            logits: wanted,
        }])?;
        logits = outs.pop().unwrap_or_default();
    }
    stats.prompt_tokens += new.len();
    stats.prompt_secs += t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let mut decoder = StreamDecoder::new();
    let mut reply = String::new();
    let mut produced = 0i64;
    while args.n_predict < 0 || produced < args.n_predict {
        let token = sampler.sample_id(&logits);
        if tok.is_end_of_generation(token) {
            break;
        }
        let piece = decoder.push(tok, token);
        out.write_all(piece.as_bytes())?;
        out.flush()?;
        reply.push_str(&piece);
        produced += 1;
        stats.gen_tokens += 1;
        if session.len() >= session.n_ctx() {
            tracing::warn!("context of {} tokens is full; stopping", session.n_ctx());
            break;
        }
        let mut outs = model.forward(&mut [SeqInput {
            session,
            tokens: &[token],
            logits: LogitsWanted::Last,
        }])?;
        logits = outs.pop().unwrap_or_default();
    }
    let tail = decoder.finish();
    out.write_all(tail.as_bytes())?;
    reply.push_str(&tail);
    stats.gen_secs += t1.elapsed().as_secs_f64();
    Ok(reply)
}

fn print_stats(stats: &Stats) {
    let rate = |n: usize, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    eprintln!(
        "prompt: {} tokens, {:.2} t/s | generation: {} tokens, {:.2} t/s",
        stats.prompt_tokens,
        rate(stats.prompt_tokens, stats.prompt_secs),
        stats.gen_tokens,
        rate(stats.gen_tokens, stats.gen_secs),
    );
}
