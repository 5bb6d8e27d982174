//! Pre-tokenizers: how byte-level BPE vocabularies cut text into words before
//! merging, chosen by `tokenizer.ggml.pre`. The regexes are the ones llama.cpp
//! uses for each name; they apply in sequence, each one cutting every piece
//! the previous left (matched and unmatched spans both become pieces).

use fancy_regex::Regex;

use super::TokenizerError;
use super::split_custom::{split_gpt2, split_llama3_family, split_newline_runs};
use super::unicode::{CharCategory, classify};

/// Pre-tokenizer families, named as `tokenizer.ggml.pre` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizerKind {
    Default,
    Llama3,
    DeepseekLlm,
    DeepseekCoder,
    Deepseek3,
    Falcon,
    Starcoder,
    Gpt2,
    Qwen2,
    Qwen35,
    Bloom,
    Viking,
    ChatGlm4,
    Gemma4,
    Tekken,
    Gpt4o,
    SeedCoder,
    Whitespace,
    MiniCpm5,
    BailingMoe,
    Ufakzeka,
    ExaoneMoe,
    Spark25,
    Youtu,
    Laguna,
}

/// Behaviour that comes with a pre-tokenizer name besides its regexes.
#[derive(Debug, Clone, Copy)]
pub struct PreTokenizerTraits {
    pub kind: PreTokenizerKind,
    /// A word that is already a whole token skips merging.
    pub ignore_merges: bool,
    /// BOS is added unless the metadata says otherwise.
    pub add_bos_default: bool,
    /// Spaces become U+2581 before merging (SentencePiece-style BPE).
    pub escape_whitespace: bool,
}

impl PreTokenizerKind {
    /// Maps a `tokenizer.ggml.pre` value; `None` for names we do not know.
    pub fn from_name(name: &str) -> Option<PreTokenizerTraits> {
        use PreTokenizerKind as K;
        let (kind, ignore_merges, add_bos_default) = match name {
            "default" => (K::Default, false, false),
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral"
            | "midm-2.0" | "lfm2" => (K::Llama3, true, true),
            "dbrx" | "smaug-bpe" => (K::Llama3, false, false),
            "deepseek-llm" => (K::DeepseekLlm, false, false),
            "deepseek-coder" => (K::DeepseekCoder, false, false),
            "deepseek-v3" | "hunyuan-dense" | "joyai-llm" | "hy_v4" => (K::Deepseek3, false, false),
            "falcon" => (K::Falcon, false, false),
            "starcoder" | "refact" | "command-r" | "smollm" | "codeshell" | "exaone"
            | "minerva-7b" | "mellum2" => (K::Starcoder, false, false),
            "gpt-2" | "phi-2" | "jina-es" | "jina-de" | "gigachat" | "jina-v2-es"
            | "jina-v2-de" | "a.x-4.0" | "mellum" | "modern-bert" | "jina-v1-en"
            | "jina-v2-code" | "roberta-bpe" | "exaone4" | "mpt" | "olmo" | "jais" | "trillion"
            | "granite-docling" => (K::Gpt2, false, false),
            "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "stablelm2" | "hunyuan"
            | "megrez" | "solar-open" | "grok-2" => (K::Qwen2, false, false),
            "qwen35" => (K::Qwen35, false, false),
            "poro-chat" | "bloom" | "gpt3-finnish" => (K::Bloom, false, false),
            "viking" => (K::Viking, false, false),
            "chatglm-bpe" => (K::ChatGlm4, false, false),
            "glm4" | "glm5" => (K::ChatGlm4, true, false),
            "gemma4" | "granite-embed-multi-311m" => (K::Gemma4, false, false),
            "tekken" => (K::Tekken, true, true),
            "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => (K::Gpt4o, false, false),
            "seed-coder" => (K::SeedCoder, false, false),
            "whitespace" => (K::Whitespace, false, false),
            "minicpm5" => (K::MiniCpm5, true, false),
            "bailingmoe" | "bailingmoe2" | "llada-moe" => (K::BailingMoe, false, false),
            "ufakzeka" => (K::Ufakzeka, false, false),
            "exaone-moe" => (K::ExaoneMoe, false, false),
            "spark2_5" => (K::Spark25, false, false),
            "youtu" => (K::Youtu, true, false),
            "laguna" => (K::Laguna, false, false),
            _ => return None,
        };
        Some(PreTokenizerTraits {
            kind,
            ignore_merges,
            add_bos_default,
            escape_whitespace: kind == K::Gemma4,
        })
    }

    /// Whether words are GPT-2 byte-encoded before merging.
    pub fn byte_encodes(self) -> bool {
        !matches!(self, Self::Gemma4 | Self::Whitespace)
    }
}

const CJK_HANGUL: &str = "[\u{4E00}-\u{9FA5}\u{800}-\u{4E00}\u{AC00}-\u{D7FF}]+";
const BLOOM_WORDS: &str = " ?[^(\\s|.,!?\u{2026}\u{3002}\u{FF0C}\u{3001}\u{964}\u{6D4}\u{60C})]+";
const GPT2_WORDS: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const LLAMA3_WORDS: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// One step of a pre-tokenizer.
enum SplitRule {
    Gpt2,
    /// llama3/qwen2/qwen35: digit run cap, and whether letter runs take marks.
    Llama3Family {
        max_digits: usize,
        letters_take_marks: bool,
    },
    NewlineRuns,
    /// A general regex. With `collapsed`, it runs over text where every
    /// non-ASCII code point stands for its category (as llama.cpp does, so
    /// `\p{..}` means llama.cpp's categories, not the regex engine's).
    Regex {
        regex: Regex,
        collapsed: bool,
    },
}

pub(crate) struct PreTokenizer {
    rules: Vec<SplitRule>,
}

// Stand-ins for non-ASCII code points in collapsed text, one per category,
// from the private use area so that no other class matches them.
const COLLAPSED_NUMBER: char = '\u{E0D1}';
const COLLAPSED_LETTER: char = '\u{E0D2}';
const COLLAPSED_PUNCT: char = '\u{E0D3}';
const COLLAPSED_MARK: char = '\u{E0D4}';
const COLLAPSED_SYMBOL: char = '\u{E0D5}';
const COLLAPSED_OTHER: char = '\u{E0D0}';

/// The body of a character class for `\p{X}` in collapsed text: the stand-in
/// plus the ASCII members llama.cpp assigns to X.
fn collapsed_class_body(property: &str) -> Option<&'static str> {
    Some(match property {
        "N" => r"\x{E0D1}0-9",
        "L" | "Lu" | "Ll" | "Lt" | "Lm" | "Lo" => r"\x{E0D2}A-Za-z",
        "P" => r"\x{E0D3}!-#%-*,-/:-;?-@\[-\]_\{\}",
        "M" => r"\x{E0D4}",
        "S" => r"\x{E0D5}\$\+<->\^`\|~",
        _ => return None,
    })
}

/// Rewrites `\p{X}` in a regex into classes over collapsed text.
fn collapse_regex(pattern: &str) -> Result<String, TokenizerError> {
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut inside_class = false;
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '\\' {
            if let Some(after) = rest.strip_prefix("\\p{") {
                let close = after.find('}').ok_or_else(|| TokenizerError::BadRegex {
                    pattern: pattern.to_owned(),
                    reason: "unclosed \\p{".to_owned(),
                })?;
                let property = &after[..close];
                let body =
                    collapsed_class_body(property).ok_or_else(|| TokenizerError::BadRegex {
                        pattern: pattern.to_owned(),
                        reason: format!("unsupported property \\p{{{property}}}"),
                    })?;
                if inside_class {
                    out.push_str(body);
                } else {
                    out.push('[');
                    out.push_str(body);
                    out.push(']');
                }
                rest = &after[close + 1..];
                continue;
            }
            // Keep an escape and the character it escapes together.
            let mut it = rest.char_indices();
            it.next();
            let next_end = it.next().map(|(i, ch)| i + ch.len_utf8()).unwrap_or(1);
            out.push_str(&rest[..next_end]);
            rest = &rest[next_end..];
            continue;
        }
        if c == '[' {
            inside_class = true;
        } else if c == ']' {
            inside_class = false;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

fn collapse_char(c: char) -> char {
    if c.is_ascii() {
        return c;
    }
    let class = classify(c);
    if class.is_whitespace {
        return '\x0B';
    }
    match class.category {
        CharCategory::Number => COLLAPSED_NUMBER,
        CharCategory::Letter => COLLAPSED_LETTER,
        CharCategory::Punctuation => COLLAPSED_PUNCT,
        CharCategory::Mark => COLLAPSED_MARK,
        CharCategory::Symbol => COLLAPSED_SYMBOL,
        _ => COLLAPSED_OTHER,
    }
}

impl PreTokenizer {
    pub fn new(kind: PreTokenizerKind) -> Result<Self, TokenizerError> {
        use PreTokenizerKind as K;
        let regex = |pattern: &str| -> Result<SplitRule, TokenizerError> {
            let collapsed = pattern.contains(r"\p{");
            let source = if collapsed {
                collapse_regex(pattern)?
            } else {
                pattern.to_owned()
            };
            let regex = Regex::new(&source).map_err(|e| TokenizerError::BadRegex {
                pattern: pattern.to_owned(),
                reason: e.to_string(),
            })?;
            Ok(SplitRule::Regex { regex, collapsed })
        };
        let llama3 = SplitRule::Llama3Family {
            max_digits: 3,
            letters_take_marks: false,
        };
        let rules = match kind {
            K::Default => vec![
                regex(r"[\p{P}\$\+<=>\^~\|]+")?,
                SplitRule::Gpt2,
                regex(r"\p{N}+")?,
                regex(r"[0-9][0-9][0-9]")?,
            ],
            K::Llama3 | K::ChatGlm4 => vec![llama3],
            K::DeepseekLlm => vec![
                regex("[\r\n]")?,
                // Non-ASCII written as escapes: the exact code points matter
                // and editors may normalize literal text.
                regex(concat!(
                    "\\s?[A-Za-z\u{B5}\u{C0}-\u{D6}\u{D8}-\u{F6}\u{F8}-\u{1BA}\u{1BC}-\u{1BF}\u{1C4}-\u{293}\u{295}-\u{2AF}\u{370}-\u{373}\u{376}\u{377}\u{37B}-\u{37D}\u{37F}\u{386}\u{388}-\u{38A}\u{38C}\u{38E}-\u{3A1}\u{3A3}-\u{3F5}\u{3F7}-\u{481}\u{48A}-\u{52F}\u{531}-\u{556}\u{10A0}-\u{10C5}\u{13A0}-\u{13F5}\u{13F8}-\u{13FD}\u{1C90}-\u{1CBA}\u{1CBD}-\u{1CBF}\u{1D00}-\u{1D2B}\u{1D6B}-\u{1D77}\u{1D79}-\u{1D9A}\u{1E00}-\u{1F15}\u{1F18}-\u{1F1D}\u{1F20}-\u{1F45}\u{1F48}-\u{1F4D}\u{1F50}-\u{1F57}\u{1F59}\u{1F5B}\u{1F5D}\u{1F5F}-\u{1F7D}\u{1F80}-\u{1FB4}\u{1FB6}-\u{1FBC}\u{1FBE}\u{1FC2}-\u{1FC4}\u{1FC6}-\u{1FCC}\u{1FD0}-\u{1FD3}\u{1FD6}-\u{1FDB}\u{1FE0}-\u{1FEC}\u{1FF2}-\u{1FF4}\u{1FF6}-\u{1FFC}",
                    "\u{2102}\u{2107}\u{210A}-\u{2113}\u{2115}\u{2119}-\u{211D}\u{2124}\u{2126}\u{2128}\u{212A}-\u{212D}\u{212F}-\u{2134}\u{2139}\u{213C}-\u{213F}\u{2145}-\u{2149}\u{214E}\u{2183}\u{2184}\u{2C00}-\u{2C7B}\u{2C7E}-\u{2CE4}\u{2CEB}-\u{2CEE}\u{2CF2}\u{2CF3}\u{A640}-\u{A66D}\u{A680}-\u{A69B}\u{A722}-\u{A76F}\u{A771}-\u{A787}\u{A78B}-\u{A78E}\u{AB70}-\u{ABBF}\u{FB00}-\u{FB06}\u{FB13}-\u{FB17}\u{FF21}-\u{FF3A}\u{FF41}-\u{FF5A}\u{10400}-\u{1044F}\u{104B0}-\u{104D3}\u{104D8}-\u{104FB}\u{10C80}-\u{10CB2}\u{10CC0}-\u{10CF2}\u{118A0}-\u{118DF}\u{1E900}-\u{1E943}]+"
                ))?,
                regex(
                    "\\s?[!-/:-~\u{FF01}-\u{FF0F}\u{FF1A}-\u{FF5E}\u{2018}-\u{201F}\u{3000}-\u{3002}]+",
                )?,
                regex(r"\s+$")?,
                regex(CJK_HANGUL)?,
                regex(r"\p{N}+")?,
            ],
            K::DeepseekCoder => vec![
                regex("[\r\n]")?,
                regex(r"\s?\p{L}+")?,
                regex(r"\s?\p{P}+")?,
                regex(CJK_HANGUL)?,
                regex(r"\p{N}")?,
            ],
            K::Deepseek3 => vec![
                regex(r"\p{N}{1,3}")?,
                regex("[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+")?,
                regex(
                    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
                )?,
            ],
            K::Falcon => vec![
                regex(r"[\p{P}\$\+<=>\^~\|`]+")?,
                SplitRule::Gpt2,
                regex(r"[0-9][0-9][0-9]")?,
            ],
            K::Starcoder => vec![regex(r"\p{N}")?, SplitRule::Gpt2],
            K::Gpt2 => vec![SplitRule::Gpt2],
            K::Qwen2 => vec![SplitRule::Llama3Family {
                max_digits: 1,
                letters_take_marks: false,
            }],
            K::Qwen35 => vec![SplitRule::Llama3Family {
                max_digits: 1,
                letters_take_marks: true,
            }],
            K::Bloom => vec![regex(BLOOM_WORDS)?],
            K::Viking => vec![regex(BLOOM_WORDS)?, regex(r"\p{N}")?],
            K::Gemma4 => vec![SplitRule::NewlineRuns],
            K::Tekken => vec![regex(
                r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
            )?],
            K::Gpt4o => vec![regex(
                r##"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
            )?],
            K::SeedCoder => vec![regex(
                r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+",
            )?],
            K::Whitespace => vec![regex(r"\S+")?],
            K::MiniCpm5 => vec![
                regex(r##"\p{N}{1,3}"##)?,
                regex(
                    r##"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
                )?,
            ],
            K::BailingMoe => vec![regex(
                r##"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"##,
            )?],
            K::Ufakzeka => vec![regex(
                r##"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
            )?],
            K::ExaoneMoe => vec![regex(
                r##"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+"##,
            )?],
            K::Spark25 => vec![
                regex(r##"\p{N}{1,3}"##)?,
                regex("[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+")?,
                regex(
                    r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+"##,
                )?,
                regex(r##"\p{N}"##)?,
            ],
            K::Youtu => vec![
                regex(
                    "[\u{AC00}-\u{D7A3}\u{3131}-\u{318E}]+|[\u{FF01}\u{2026}\u{201C}\u{201D}\u{2018}\u{2019}\u{2014}\u{FF1A}\u{FF1B}\u{FF0C}\u{3001}-\u{303F}\u{FE30}-\u{FE4F}]+|[\u{3105}-\u{312F}]+|[\u{4E00}-\u{9FA5}\u{3040}-\u{309F}\u{30A0}-\u{30FF}]+",
                )?,
                regex(
                    r##"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
                )?,
            ],
            K::Laguna => vec![
                SplitRule::NewlineRuns,
                SplitRule::Llama3Family {
                    max_digits: 1,
                    letters_take_marks: false,
                },
            ],
        };
        // The constants document which regexes the hand-written rules stand for.
        debug_assert!(!GPT2_WORDS.is_empty() && !LLAMA3_WORDS.is_empty());
        Ok(Self { rules })
    }

    /// Cuts `text` into words (as strings, not yet byte-encoded).
    pub fn split<'t>(&self, text: &'t str) -> Result<Vec<&'t str>, TokenizerError> {
        let chars: Vec<char> = text.chars().collect();
        let mut lengths = vec![chars.len()];
        let mut collapsed: Option<Vec<char>> = None;
        let mut plain: Option<Vec<char>> = None;
        for rule in &self.rules {
            let mut next = Vec::with_capacity(lengths.len() * 2);
            let mut start = 0;
            for &len in &lengths {
                let piece = &chars[start..start + len];
                match rule {
                    SplitRule::Gpt2 => split_gpt2(piece, &mut next),
                    SplitRule::Llama3Family {
                        max_digits,
                        letters_take_marks,
                    } => split_llama3_family(piece, *max_digits, *letters_take_marks, &mut next),
                    SplitRule::NewlineRuns => split_newline_runs(piece, &mut next),
                    SplitRule::Regex {
                        regex,
                        collapsed: true,
                    } => {
                        let view = collapsed.get_or_insert_with(|| {
                            chars.iter().map(|&c| collapse_char(c)).collect()
                        });
                        split_regex(regex, &view[start..start + len], &mut next)?;
                    }
                    SplitRule::Regex {
                        regex,
                        collapsed: false,
                    } => {
                        let view = plain.get_or_insert_with(|| {
                            chars
                                .iter()
                                .map(|&c| {
                                    if !c.is_ascii() && classify(c).is_whitespace {
                                        '\x0B'
                                    } else {
                                        c
                                    }
                                })
                                .collect()
                        });
                        split_regex(regex, &view[start..start + len], &mut next)?;
                    }
                }
                start += len;
            }
            lengths = next;
        }
        // Code point lengths back to byte slices of the original text.
        let byte_offsets: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
            .collect();
        let mut words = Vec::with_capacity(lengths.len());
        let mut char_start = 0;
        for len in lengths {
            words.push(&text[byte_offsets[char_start]..byte_offsets[char_start + len]]);
            char_start += len;
        }
        Ok(words)
    }
}

/// Cuts one piece with a regex: matches and the gaps between them both
/// become pieces (lengths in code points).
fn split_regex(
    regex: &Regex,
    piece: &[char],
    lengths: &mut Vec<usize>,
) -> Result<(), TokenizerError> {
    let text: String = piece.iter().collect();
    // Byte offset -> code point index within this piece.
    let mut char_index_of_byte = vec![0usize; text.len() + 1];
    for (index, (byte, _)) in text.char_indices().enumerate() {
        char_index_of_byte[byte] = index;
    }
    char_index_of_byte[text.len()] = piece.len();
    let mut last_end = 0usize;
    for found in regex.find_iter(&text) {
        let found = found.map_err(|e| TokenizerError::BadRegex {
            pattern: regex.as_str().to_owned(),
            reason: e.to_string(),
        })?;
        let start = char_index_of_byte[found.start()];
        let end = char_index_of_byte[found.end()];
        if start > last_end {
            lengths.push(start - last_end);
        }
        if end > start {
            lengths.push(end - start);
        }
        last_end = end;
    }
    if last_end < piece.len() {
        lengths.push(piece.len() - last_end);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_rewrites_properties_inside_and_outside_classes() {
        assert_eq!(collapse_regex(r"\p{N}+").unwrap(), r"[\x{E0D1}0-9]+");
        assert_eq!(
            collapse_regex(r"[^\s\p{L}]").unwrap(),
            r"[^\s\x{E0D2}A-Za-z]"
        );
        assert_eq!(collapse_regex(r"\[\p{M}\]").unwrap(), r"\[[\x{E0D4}]\]");
    }

    #[test]
    fn falcon_splits_punctuation_then_words_then_digit_triples() {
        let pre = PreTokenizer::new(PreTokenizerKind::Falcon).unwrap();
        assert_eq!(
            pre.split("Hi, 12345 ñandú!").unwrap(),
            ["Hi", ",", " ", "123", "45", " ñandú", "!"]
        );
    }

    #[test]
    fn every_kind_compiles() {
        use PreTokenizerKind as K;
        for kind in [
            K::Default,
            K::Llama3,
            K::DeepseekLlm,
            K::DeepseekCoder,
            K::Deepseek3,
            K::Falcon,
            K::Starcoder,
            K::Gpt2,
            K::Qwen2,
            K::Qwen35,
            K::Bloom,
            K::Viking,
            K::ChatGlm4,
            K::Gemma4,
            K::Tekken,
            K::Gpt4o,
            K::SeedCoder,
            K::Whitespace,
            K::MiniCpm5,
            K::BailingMoe,
            K::Ufakzeka,
            K::ExaoneMoe,
            K::Spark25,
            K::Youtu,
            K::Laguna,
        ] {
            let pre = PreTokenizer::new(kind).unwrap();
            let words = pre.split("Hello, world! 123 ünï 漢字\n\n  x").unwrap();
            assert_eq!(words.concat(), "Hello, world! 123 ünï 漢字\n\n  x");
        }
    }
}
