//! Tokenizers built from a model's own vocabulary metadata: SentencePiece
//! style (`llama`), byte-level BPE (`gpt2`, with the pre-tokenizer named by
//! `tokenizer.ggml.pre`), SentencePiece-style BPE (`gemma4`) and WordPiece
//! (`bert`). Behaviour follows llama.cpp, whose vocab test vectors are the
//! reference (see tests/tokenizer_vocab_vectors.rs).

mod bpe;
mod from_gguf;
mod load_rules;
mod pretokenize;
mod special;
mod split_custom;
mod spm;
mod stream;
mod unicode;
mod vocab;
mod wpm;

pub use load_rules::SpecialIds;
pub use pretokenize::{PreTokenizerKind, PreTokenizerTraits};
pub use stream::StreamDecoder;
pub use vocab::{TokenAttrs, TokenType};

use bpe::{ByteFallback, Merges};
use pretokenize::PreTokenizer;
use special::{Fragment, Specials, partition};
use vocab::Vocab;

#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("unsupported tokenizer model '{0}' (supported: llama, gpt2, gemma4, bert)")]
    UnsupportedModel(String),
    #[error("unknown pre-tokenizer '{0}' in tokenizer.ggml.pre")]
    UnknownPreTokenizer(String),
    #[error("{key} has {found} entries but the vocabulary has {expected} tokens")]
    LengthMismatch {
        key: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("merge {index} ('{line}') is not of the form 'left right'")]
    BadMerge { index: usize, line: String },
    #[error("pre-tokenizer regex /{pattern}/ failed: {reason}")]
    BadRegex { pattern: String, reason: String },
    #[error("no byte-fallback token for byte 0x{byte:02X}")]
    NoByteToken { byte: u8 },
    #[error("the model asks for a {role} token but does not name one")]
    MissingSpecial { role: &'static str },
    #[error("the vocabulary has {n_tokens} tokens, more than token ids can number ({max})")]
    VocabTooLarge { n_tokens: usize, max: usize },
    #[error("reading tokenizer metadata: {0}")]
    Gguf(#[from] crate::gguf::GgufError),
}

/// Which algorithm turns text into ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerModel {
    /// SentencePiece-style score merges with byte fallback (`llama`).
    SentencePiece,
    /// Byte-level BPE with rank merges (`gpt2`), or SentencePiece-style BPE
    /// over raw UTF-8 (`gemma4`) depending on the pre-tokenizer.
    Bpe,
    /// WordPiece, greedy longest match (`bert`).
    WordPiece,
}

impl TokenizerModel {
    pub fn from_gguf_name(name: &str) -> Result<Self, TokenizerError> {
        match name {
            "llama" => Ok(Self::SentencePiece),
            "gpt2" | "gemma4" => Ok(Self::Bpe),
            "bert" => Ok(Self::WordPiece),
            other => Err(TokenizerError::UnsupportedModel(other.to_owned())),
        }
    }
}

/// Everything a tokenizer is built from, independent of where it came from.
#[derive(Debug, Clone)]
pub struct TokenizerConfig {
    /// `tokenizer.ggml.model`: "llama", "gpt2", "gemma4" or "bert".
    pub model: String,
    /// `tokenizer.ggml.pre`; `None` means "default".
    pub pre: Option<String>,
    pub tokens: Vec<String>,
    /// Empty when the file has none (BPE vocabularies usually do not).
    pub scores: Vec<f32>,
    /// Empty means every token is normal.
    pub token_types: Vec<TokenType>,
    /// `"left right"` lines in rank order (BPE only).
    pub merges: Vec<String>,
    pub bos_id: Option<u32>,
    pub eos_id: Option<u32>,
    pub unk_id: Option<u32>,
    pub sep_id: Option<u32>,
    pub pad_id: Option<u32>,
    /// `tokenizer.ggml.{eot,eom,mask}_token_id` and the fill-in-the-middle ids
    /// (`fim_{pre,suf,mid,pad,rep,sep}_token_id`). Missing ones are found by
    /// token text at load (see [`SpecialIds`]).
    pub eot_id: Option<u32>,
    pub eom_id: Option<u32>,
    pub mask_id: Option<u32>,
    pub fim_pre_id: Option<u32>,
    pub fim_suf_id: Option<u32>,
    pub fim_mid_id: Option<u32>,
    pub fim_pad_id: Option<u32>,
    pub fim_rep_id: Option<u32>,
    pub fim_sep_id: Option<u32>,
    /// `None` takes the model's default.
    pub add_bos: Option<bool>,
    pub add_eos: Option<bool>,
    pub add_space_prefix: Option<bool>,
    /// `general.name`, which llama.cpp consults for a few model quirks.
    pub model_name: Option<String>,
    /// `general.architecture`, which selects a few strip attributes.
    pub architecture: Option<String>,
}

impl TokenizerConfig {
    /// A config with just a model and tokens; the rest at defaults.
    pub fn new(model: &str, tokens: Vec<String>) -> Self {
        Self {
            model: model.to_owned(),
            pre: None,
            tokens,
            scores: Vec::new(),
            token_types: Vec::new(),
            merges: Vec::new(),
            bos_id: None,
            eos_id: None,
            unk_id: None,
            sep_id: None,
            pad_id: None,
            eot_id: None,
            eom_id: None,
            mask_id: None,
            fim_pre_id: None,
            fim_suf_id: None,
            fim_mid_id: None,
            fim_pad_id: None,
            fim_rep_id: None,
            fim_sep_id: None,
            add_bos: None,
            add_eos: None,
            add_space_prefix: None,
            model_name: None,
            architecture: None,
        }
    }
}

/// A ready tokenizer. Cheap to share: encoding takes `&self`.
pub struct Tokenizer {
    model: TokenizerModel,
    vocab: Vocab,
    merges: Merges,
    pre: Option<PreTokenizer>,
    pre_traits: Option<PreTokenizerTraits>,
    specials: Specials,
    special_ids: SpecialIds,
    end_of_generation: Vec<u32>,
    add_bos: bool,
    add_eos: bool,
    add_space_prefix: bool,
    byte_decode: [Option<u8>; 512],
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("model", &self.model)
            .field("n_tokens", &self.vocab.len())
            .field("n_merges", &self.merges.len())
            .field("pre", &self.pre_traits.map(|t| t.kind))
            .field("special_ids", &self.special_ids)
            .field("end_of_generation", &self.end_of_generation)
            .field("add_bos", &self.add_bos)
            .finish()
    }
}

impl Tokenizer {
    pub fn new(mut config: TokenizerConfig) -> Result<Self, TokenizerError> {
        let model = TokenizerModel::from_gguf_name(&config.model)?;
        let n = config.tokens.len();
        vocab::check_vocab_len(n)?;
        for (key, len) in [
            ("tokenizer.ggml.scores", config.scores.len()),
            ("tokenizer.ggml.token_type", config.token_types.len()),
        ] {
            if len != 0 && len < n {
                return Err(TokenizerError::LengthMismatch {
                    key,
                    expected: n,
                    found: len,
                });
            }
        }
        let scores = if config.scores.is_empty() {
            vec![0.0; n]
        } else {
            config.scores[..n].to_vec()
        };
        let attrs: Vec<TokenAttrs> = if config.token_types.is_empty() {
            vec![TokenAttrs::from_type(TokenType::Normal); n]
        } else {
            config.token_types[..n]
                .iter()
                .map(|&t| TokenAttrs::from_type(t))
                .collect()
        };
        let pre_traits = match model {
            TokenizerModel::Bpe => {
                let name = if config.model == "gemma4" {
                    "gemma4"
                } else {
                    config.pre.as_deref().unwrap_or("default")
                };
                Some(
                    PreTokenizerKind::from_name(name)
                        .ok_or_else(|| TokenizerError::UnknownPreTokenizer(name.to_owned()))?,
                )
            }
            _ => None,
        };
        let mut vocab = Vocab::new(std::mem::take(&mut config.tokens), scores, attrs);
        let settled =
            load_rules::settle(model, &config, &vocab.texts, &vocab.ids, &mut vocab.attrs);
        let merges = match model {
            TokenizerModel::Bpe => Merges::from_lines(&config.merges)?,
            _ => Merges::default(),
        };
        let pre = match pre_traits {
            Some(traits) => Some(PreTokenizer::new(traits.kind)?),
            None => None,
        };
        let (default_bos, default_space_prefix) = match model {
            TokenizerModel::SentencePiece => (true, true),
            TokenizerModel::WordPiece => (true, false),
            TokenizerModel::Bpe => (pre_traits.is_some_and(|t| t.add_bos_default), false),
        };
        let mut add_bos = config.add_bos.unwrap_or(default_bos);
        if pre_traits.is_some_and(|t| t.kind == PreTokenizerKind::Gemma4) {
            // Gemma 4 files say add_bos=false but the model needs it (llama.cpp
            // overrides it the same way).
            add_bos = true;
        }
        let add_space_prefix = match model {
            TokenizerModel::Bpe => false,
            _ => config.add_space_prefix.unwrap_or(default_space_prefix),
        };
        let specials = Specials::new(&vocab);
        let mut byte_decode = [None; 512];
        for (byte, c) in unicode::byte_to_char_table().iter().enumerate() {
            byte_decode[*c as usize] = Some(byte as u8);
        }
        tracing::debug!(
            model = ?model,
            n_tokens = n,
            n_merges = merges.len(),
            n_special = specials.len(),
            "tokenizer built"
        );
        Ok(Self {
            model,
            vocab,
            merges,
            pre,
            pre_traits,
            specials,
            special_ids: settled.special,
            end_of_generation: settled.end_of_generation,
            add_bos,
            add_eos: config.add_eos.unwrap_or(false),
            add_space_prefix,
            byte_decode,
        })
    }

    pub fn model(&self) -> TokenizerModel {
        self.model
    }
    pub fn pre_tokenizer(&self) -> Option<PreTokenizerKind> {
        self.pre_traits.map(|t| t.kind)
    }
    pub fn n_tokens(&self) -> usize {
        self.vocab.len()
    }
    pub fn bos_id(&self) -> Option<u32> {
        self.special_ids.bos
    }
    pub fn eos_id(&self) -> Option<u32> {
        self.special_ids.eos
    }
    /// Every special role's id (BOS, EOS, EOT, EOM, FIM, ...) as llama.cpp's
    /// loader settles them: metadata first, then defaults and token texts.
    pub fn special_ids(&self) -> SpecialIds {
        self.special_ids
    }
    /// Whether `encode(.., add_special = true)` prepends BOS.
    pub fn adds_bos(&self) -> bool {
        self.add_bos
    }
    pub fn adds_eos(&self) -> bool {
        self.add_eos
    }
    /// The end-of-generation set, sorted: a sampled token in it stops
    /// generation. llama.cpp's rules: EOS, EOT, EOM, the FIM pad/repo/file
    /// separator tokens, and every token with an end-of-turn text
    /// (`<|im_end|>`, `<|eot_id|>`, `<end_of_turn>`, `</s>`, ...).
    pub fn end_of_generation_ids(&self) -> &[u32] {
        &self.end_of_generation
    }
    /// Whether `id` ends generation (see [`Self::end_of_generation_ids`]).
    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.end_of_generation.binary_search(&id).is_ok()
    }

    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.vocab.texts.get(id as usize).map(String::as_str)
    }
    pub fn token_attrs(&self, id: u32) -> TokenAttrs {
        self.vocab.attrs(id)
    }
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.vocab.id(text)
    }

    /// Text to ids. `add_special` adds BOS/EOS as the model's metadata asks;
    /// `parse_special` matches control tokens written in the text (such as
    /// `<|im_start|>`) as single tokens, like `llama-tokenize` does.
    pub fn encode(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<u32>, TokenizerError> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        if add_special && self.add_bos {
            out.push(
                self.special_ids
                    .bos
                    .ok_or(TokenizerError::MissingSpecial { role: "bos" })?,
            );
        }
        let fragments = partition(&self.vocab, &self.specials, text, parse_special);
        // SentencePiece adds its space prefix to text at the start and after
        // each special token.
        let mut after_special = true;
        for fragment in fragments {
            match fragment {
                Fragment::Token(id) => {
                    out.push(id);
                    after_special = true;
                }
                Fragment::Text(raw) => {
                    self.encode_text(raw, after_special, &mut out)?;
                    after_special = false;
                }
            }
        }
        if add_special && self.add_eos {
            out.push(
                self.special_ids
                    .eos
                    .ok_or(TokenizerError::MissingSpecial { role: "eos" })?,
            );
        }
        if add_special
            && self.model == TokenizerModel::WordPiece
            && let Some(sep) = self.special_ids.sep
        {
            out.push(sep);
        }
        Ok(out)
    }

    fn encode_text(
        &self,
        raw: &str,
        after_special: bool,
        out: &mut Vec<u32>,
    ) -> Result<(), TokenizerError> {
        match self.model {
            TokenizerModel::SentencePiece => {
                let mut text = String::with_capacity(raw.len() + 3);
                if self.add_space_prefix && after_special {
                    text.push(' ');
                }
                text.push_str(raw);
                spm::encode(&self.vocab, &text.replace(' ', "\u{2581}"), out)
            }
            TokenizerModel::Bpe => self.encode_bpe(raw, out),
            TokenizerModel::WordPiece => {
                wpm::encode(&self.vocab, raw, self.special_ids.unk, out);
                Ok(())
            }
        }
    }

    fn encode_bpe(&self, raw: &str, out: &mut Vec<u32>) -> Result<(), TokenizerError> {
        let (Some(pre), Some(traits)) = (&self.pre, self.pre_traits) else {
            return Ok(());
        };
        let escaped;
        let text = if traits.escape_whitespace {
            escaped = raw.replace(' ', "\u{2581}");
            escaped.as_str()
        } else {
            raw
        };
        let table = unicode::byte_to_char_table();
        let byte_encode = traits.kind.byte_encodes();
        let mut encoded = String::new();
        for word in pre.split(text)? {
            if traits.kind == PreTokenizerKind::Gemma4
                && !word.is_empty()
                && word.bytes().all(|b| b == b'\n')
                && let Some(id) = self.vocab.id(word)
            {
                // A run of newlines that is itself a token stays whole.
                out.push(id);
                continue;
            }
            let word = if byte_encode {
                encoded.clear();
                encoded.extend(word.bytes().map(|b| table[b as usize]));
                encoded.as_str()
            } else {
                word
            };
            let fallback = if byte_encode {
                ByteFallback::EncodedBytes
            } else {
                ByteFallback::HexTokens
            };
            bpe::encode_word(
                &self.vocab,
                &self.merges,
                word,
                traits.ignore_merges,
                fallback,
                out,
            )?;
        }
        Ok(())
    }

    /// The bytes one token stands for. Control and unknown tokens give
    /// nothing unless `special` is set.
    pub fn token_to_piece(&self, id: u32, special: bool) -> Vec<u8> {
        let Some(text) = self.vocab.texts.get(id as usize) else {
            return Vec::new();
        };
        let attrs = self.vocab.attrs(id);
        if attrs.control || attrs.unknown {
            return if special {
                text.as_bytes().to_vec()
            } else {
                Vec::new()
            };
        }
        if attrs.user_defined {
            return text.as_bytes().to_vec();
        }
        if attrs.byte
            && let Some(byte) = parse_byte_token(text)
        {
            return vec![byte];
        }
        let spm_style = match self.model {
            TokenizerModel::SentencePiece | TokenizerModel::WordPiece => true,
            TokenizerModel::Bpe => self.pre_traits.is_some_and(|t| t.escape_whitespace),
        };
        if attrs.normal || attrs.byte {
            if spm_style {
                return text.replace('\u{2581}', " ").into_bytes();
            }
            return text
                .chars()
                .flat_map(|c| {
                    let byte = self.byte_decode.get(c as usize).copied().flatten();
                    match byte {
                        Some(b) => vec![b],
                        None => c.to_string().into_bytes(),
                    }
                })
                .collect();
        }
        Vec::new()
    }

    /// Ids to text; invalid UTF-8 becomes U+FFFD. The SentencePiece space
    /// prefix is removed from the first piece, as llama.cpp's detokenizer does.
    pub fn decode(&self, ids: &[u32], special: bool) -> String {
        let mut bytes = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            let piece = self.token_to_piece(id, special);
            let piece = if i == 0 && self.add_space_prefix && piece.first() == Some(&b' ') {
                &piece[1..]
            } else {
                &piece[..]
            };
            bytes.extend_from_slice(piece);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}
