//! `phobos tokenize MODEL.gguf "text"`: ids as one JSON array, like
//! llama.cpp's `llama-tokenize --ids` (BOS as the model's metadata says).
//! The text can also come from a file or standard input, verbatim.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::Tokenizer;

pub struct Options {
    pub pieces: bool,
    pub add_bos: bool,
    pub parse_special: bool,
}

/// Where the text comes from.
pub enum Input {
    Arg(String),
    File(PathBuf),
    Stdin,
    /// No text given and stdin is a terminal: nothing to tokenize.
    Missing,
}

impl Input {
    /// `TEXT` of `-` means stdin, like most tools; with neither TEXT nor
    /// `--file`, piped stdin is read and a terminal is an error (waiting for
    /// typed input would look like a hang).
    pub fn from_args(text: Option<String>, file: Option<PathBuf>) -> Self {
        match (text, file) {
            (_, Some(path)) => Self::File(path),
            (Some(text), None) if text == "-" => Self::Stdin,
            (Some(text), None) => Self::Arg(text),
            (None, None) if std::io::stdin().is_terminal() => Self::Missing,
            (None, None) => Self::Stdin,
        }
    }

    fn read(self) -> anyhow::Result<String> {
        let (bytes, what) = match self {
            Self::Arg(text) => return Ok(text),
            Self::Missing => anyhow::bail!(
                "no text to tokenize: give TEXT, --file PATH, or pipe the text on stdin (TEXT `-`)"
            ),
            Self::File(path) => (
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
                path.display().to_string(),
            ),
            Self::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .read_to_end(&mut bytes)
                    .context("reading standard input")?;
                (bytes, "standard input".to_owned())
            }
        };
        String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{what} is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )
        })
    }
}

pub fn run(
    path: &Path,
    input: Input,
    options: Options,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    // Read the text first: a missing or unreadable text is reported without
    // first loading a possibly large model.
    let text = input.read()?;
    let text = text.as_str();
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
