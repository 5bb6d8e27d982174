//! `phobos tokenize MODEL.gguf "text"`: ids as one JSON array, like
//! llama.cpp's `llama-tokenize --ids` (BOS as the model's metadata says).

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::Tokenizer;

pub struct Options {
    pub pieces: bool,
    pub add_bos: bool,
    pub parse_special: bool,
}

pub fn run(path: &Path, text: &str, options: Options, out: &mut impl Write) -> anyhow::Result<()> {
    let gguf = Gguf::open(path).with_context(|| format!("opening {}", path.display()))?;
    let tokenizer = Tokenizer::from_gguf(&gguf)
        .with_context(|| format!("building the tokenizer of {}", path.display()))?;
    // The chat template is loaded (and its probes run under its limits)
    // wherever a model is opened, so a hostile one is refused here too.
    ChatTemplate::from_gguf(&gguf)
        .with_context(|| format!("loading the chat template of {}", path.display()))?;
    // As llama-tokenize: special tokens (BOS, and EOS where the model adds
    // one) only when the model wants BOS and --no-bos is not given.
    let add_special = options.add_bos && tokenizer.adds_bos();
    let ids = tokenizer
        .encode(text, add_special, options.parse_special)
        .context("tokenizing")?;
    if options.pieces {
        let pieces: Vec<String> = ids
            .iter()
            .map(|&id| String::from_utf8_lossy(&tokenizer.token_to_piece(id, true)).into_owned())
            .collect();
        writeln!(out, "{}", serde_json::to_string(&pieces)?)?;
    } else {
        writeln!(out, "{}", serde_json::to_string(&ids)?)?;
    }
    Ok(())
}
