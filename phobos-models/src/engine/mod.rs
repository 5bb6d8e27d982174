//! A loaded model, its sessions and the batched forward pass.
//!
//! ```no_run
//! # fn main() -> Result<(), phobos_models::engine::EngineError> {
//! use phobos_models::engine::{LoadOptions, LogitsWanted, Model, SeqInput};
//! let model = Model::load("models/gemma-3-270m-q4_k_m.gguf", LoadOptions::default())?;
//! let mut session = model.new_session(2048)?;
//! let prompt = model.tokenizer().encode("The capital of France is", true, true)?;
//! let out = model.forward(&mut [SeqInput { session: &mut session, tokens: &prompt, logits: LogitsWanted::Last }])?;
//! assert_eq!(out[0].len(), model.n_vocab());
//! # Ok(()) }
//! ```

mod error;
mod footprint;
mod session;
pub mod weights;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use error::{EngineError, Result};
pub use footprint::Footprint;
pub use session::{MAX_CHECKPOINTS, Session};

use crate::arch::attend::SeqSlot;
use crate::arch::{self, Architecture, ModelShape};
use crate::chat::ChatTemplate;
use crate::gguf::Gguf;
use crate::tokenizer::Tokenizer;

/// Called while loading with (bytes done, bytes total).
pub type LoadProgress = Box<dyn Fn(u64, u64) + Send + Sync>;

#[derive(Default)]
pub struct LoadOptions {
    /// Threads for the forward pass (`-t`): sizes both pools the engine
    /// runs on, phobos-rt's host pool (the weight products; it is sized
    /// once per process, so a second model asking for another count is an
    /// error) and a rayon pool of its own (the other ops). `None`: the host
    /// pool's `PHOBOS_THREADS` (default: the physical cores) and rayon's
    /// global pool.
    pub n_threads: Option<usize>,
    /// Touch every weight page at load (so the first tokens do not wait
    /// on page faults), reporting progress.
    pub prefault: bool,
    pub progress: Option<LoadProgress>,
}

/// Which logits a sequence wants from a forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitsWanted {
    None,
    Last,
    All,
}

/// One sequence's part of a batched forward pass: `tokens` are appended to
/// `session` (positions `session.len()..`).
pub struct SeqInput<'a> {
    pub session: &'a mut Session,
    pub tokens: &'a [u32],
    pub logits: LogitsWanted,
}

static NEXT_MODEL_ID: AtomicU64 = AtomicU64::new(1);

/// A model loaded from a GGUF file: weights stay in the memory map.
pub struct Model {
    id: u64,
    gguf: Gguf,
    arch: Box<dyn Architecture>,
    tokenizer: Tokenizer,
    chat_template: Option<ChatTemplate>,
    pool: Option<rayon::ThreadPool>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("shape", self.arch.shape())
            .finish_non_exhaustive()
    }
}

impl Model {
    pub fn load(path: impl AsRef<Path>, options: LoadOptions) -> Result<Arc<Model>> {
        let gguf = Gguf::open(path.as_ref())?;
        Model::from_gguf(gguf, options)
    }

    pub fn from_gguf(gguf: Gguf, options: LoadOptions) -> Result<Arc<Model>> {
        let arch = arch::load(&gguf)?;
        let tokenizer = Tokenizer::from_gguf(&gguf)?;
        let chat_template = ChatTemplate::from_gguf(&gguf)?;
        if options.prefault || options.progress.is_some() {
            prefault(&gguf, options.progress.as_ref());
        }
        let pool = match options.n_threads {
            Some(n) => {
                phobos_rt::pool::init_global(n).map_err(|e| EngineError::Threads(e.to_string()))?;
                Some(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(n.max(1))
                        .build()
                        .map_err(|e| EngineError::Threads(e.to_string()))?,
                )
            }
            None => None,
        };
        Ok(Arc::new(Model {
            id: NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed),
            gguf,
            arch,
            tokenizer,
            chat_template,
            pool,
        }))
    }

    /// Threads the weight products run on (the host pool's participants).
    pub fn n_threads(&self) -> usize {
        phobos_rt::pool::global().threads()
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_ref()
    }

    pub fn gguf(&self) -> &Gguf {
        &self.gguf
    }

    pub fn shape(&self) -> &ModelShape {
        self.arch.shape()
    }

    pub fn arch_name(&self) -> &str {
        &self.arch.shape().arch
    }

    pub fn n_vocab(&self) -> usize {
        self.arch.shape().n_vocab
    }

    /// The context the model was trained with (0 when the file omits it).
    pub fn n_ctx_train(&self) -> usize {
        self.arch.shape().n_ctx_train
    }

    /// Bytes of KV cache per cached token.
    pub fn kv_bytes_per_token(&self) -> usize {
        self.arch
            .shape()
            .kv_widths
            .iter()
            .map(|(k, v)| (k + v) * 2)
            .sum()
    }

    /// A new empty session holding at most `n_ctx` tokens (0: the
    /// training context).
    pub fn new_session(&self, n_ctx: usize) -> Result<Session> {
        let train = self.n_ctx_train();
        let n_ctx = if n_ctx == 0 { train } else { n_ctx };
        if train > 0 && n_ctx > train {
            return Err(EngineError::ContextTooLarge {
                requested: n_ctx,
                n_ctx_train: train,
            });
        }
        let shape = self.arch.shape();
        Ok(Session::new(
            self.id,
            n_ctx,
            shape.n_layer,
            &shape.recurrent_state_lens,
        ))
    }

    /// Runs every sequence's new tokens through the model as one batch
    /// (weights are read once for all of them). Returns, per sequence, the
    /// logits it asked for: `[n_vocab]` for `Last`, `[tokens][n_vocab]` for
    /// `All`, empty for `None`. On error no session is changed.
    pub fn forward(&self, batch: &mut [SeqInput<'_>]) -> Result<Vec<Vec<f32>>> {
        match &self.pool {
            Some(pool) => pool.install(|| self.forward_inner(batch)),
            None => self.forward_inner(batch),
        }
    }

    fn forward_inner(&self, batch: &mut [SeqInput<'_>]) -> Result<Vec<Vec<f32>>> {
        let shape = self.arch.shape();
        for input in batch.iter() {
            if input.session.model_id != self.id {
                return Err(EngineError::ForeignSession);
            }
            let (held, n_ctx) = (input.session.len(), input.session.n_ctx);
            if held + input.tokens.len() > n_ctx {
                return Err(EngineError::ContextFull {
                    n_ctx,
                    held,
                    requested: input.tokens.len(),
                });
            }
            if let Some(&id) = input.tokens.iter().find(|&&t| t as usize >= shape.n_vocab) {
                return Err(EngineError::TokenOutOfRange {
                    id,
                    n_vocab: shape.n_vocab,
                });
            }
        }
        // A session whose recurrent state was rewound to a checkpoint first
        // replays the tokens after it (no logits): see `Session::truncate`.
        let replays: Vec<usize> = batch
            .iter()
            .map(|s| s.session.pending_replay().len())
            .collect();
        let all_tokens: Vec<u32> = batch
            .iter()
            .flat_map(|s| {
                s.session
                    .pending_replay()
                    .iter()
                    .chain(s.tokens)
                    .copied()
                    .collect::<Vec<_>>()
            })
            .collect();
        let d = shape.n_embd;
        let mut x = vec![0f32; all_tokens.len() * d];
        self.arch.embed(&self.gguf, &all_tokens, &mut x)?;

        // Which rows need logits, and the KV state to restore on error.
        let mut logit_rows = Vec::new();
        let mut row0 = 0;
        let mut slots: Vec<SeqSlot<'_>> = Vec::with_capacity(batch.len());
        let mut held = Vec::with_capacity(batch.len());
        for (input, &replay) in batch.iter_mut().zip(&replays) {
            let n = input.tokens.len();
            let first = row0 + replay;
            match input.logits {
                LogitsWanted::None => {}
                LogitsWanted::Last if n > 0 => logit_rows.push(first + n - 1),
                LogitsWanted::Last => {}
                LogitsWanted::All => logit_rows.extend(first..first + n),
            }
            held.push(input.session.len());
            slots.push(SeqSlot {
                row0,
                n_tokens: replay + n,
                pos0: input.session.len() - replay,
                session: input.session,
            });
            row0 += replay + n;
        }
        if all_tokens.is_empty() {
            return Ok(vec![Vec::new(); batch.len()]);
        }
        let result = (0..shape.n_layer)
            .try_for_each(|il| self.arch.layer(&self.gguf, il, &mut x, &mut slots));
        if let Err(e) = result {
            // Keys and values past the held tokens are dropped; recurrent
            // layers may have advanced, so their state is rewound to a
            // checkpoint and the held tokens replay next time.
            for (slot, &n_held) in slots.iter_mut().zip(&held) {
                for layer in &mut slot.session.kv {
                    layer.truncate(n_held);
                }
                if slot.session.has_recurrent() {
                    slot.session.rewind_recurrent(slot.pos0);
                }
            }
            return Err(e);
        }
        for slot in slots.iter_mut() {
            let start = slot.row0;
            slot.session.tokens.truncate(slot.pos0);
            slot.session
                .tokens
                .extend_from_slice(&all_tokens[start..start + slot.n_tokens]);
            slot.session.commit_recurrent(slot.n_tokens);
        }
        let mut hidden: Vec<f32> = logit_rows
            .iter()
            .flat_map(|&r| x[r * d..(r + 1) * d].iter().copied())
            .collect();
        let logits = if logit_rows.is_empty() {
            Vec::new()
        } else {
            self.arch
                .logits(&self.gguf, &mut hidden, logit_rows.len())?
        };
        // Hand each sequence its rows.
        let n_vocab = shape.n_vocab;
        let mut out = Vec::with_capacity(batch.len());
        let mut next = 0;
        for input in batch.iter() {
            let n_rows = match input.logits {
                LogitsWanted::None => 0,
                LogitsWanted::Last => usize::from(!input.tokens.is_empty()),
                LogitsWanted::All => input.tokens.len(),
            };
            out.push(logits[next * n_vocab..(next + n_rows) * n_vocab].to_vec());
            next += n_rows;
        }
        Ok(out)
    }
}

/// Reads one byte per page of every tensor so the mapping is resident.
fn prefault(gguf: &Gguf, progress: Option<&LoadProgress>) {
    let total: u64 = gguf.tensors().iter().map(|t| t.n_bytes).sum();
    let mut done = 0u64;
    let mut sink = 0u8;
    for info in gguf.tensors() {
        let data = gguf.tensor_data(info);
        for page in data.chunks(4096) {
            sink ^= page[0];
        }
        done += info.n_bytes;
        if let Some(p) = progress {
            p(done, total);
        }
    }
    std::hint::black_box(sink);
}
