//! WordPiece (tokenizer.ggml.model = "bert"): lowercase, strip accents, cut
//! at whitespace and punctuation, then greedy longest match per word with a
//! U+2581 word-start marker, as llama.cpp converts BERT vocabularies.

use unicode_normalization::UnicodeNormalization;

use super::unicode::{CharCategory, classify};
use super::vocab::Vocab;

fn is_cjk_ideograph(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

fn words(text: &str) -> Vec<String> {
    let mut words = vec![String::new()];
    for c in text.chars() {
        // Only the first code point of each decomposition is kept; the rest
        // are combining marks, which are stripped anyway.
        let c = c.nfd().next().unwrap_or(c);
        let class = classify(c);
        if class.is_whitespace {
            if !words.last().is_some_and(String::is_empty) {
                words.push(String::new());
            }
            continue;
        }
        if c == '\0' || c == '\u{FFFD}' || class.category == CharCategory::Control {
            continue;
        }
        if class.category == CharCategory::Mark {
            continue;
        }
        let mut lower = c.to_lowercase();
        let c = match (lower.next(), lower.next()) {
            (Some(l), None) => l,
            _ => c,
        };
        let isolated = class.category == CharCategory::Punctuation
            || ((c as u32) < 0x7F && class.category == CharCategory::Symbol)
            || is_cjk_ideograph(c);
        if isolated {
            if !words.last().is_some_and(String::is_empty) {
                words.push(String::new());
            }
            if let Some(last) = words.last_mut() {
                last.push(c);
            }
            words.push(String::new());
        } else if let Some(last) = words.last_mut() {
            last.push(c);
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

pub(crate) fn encode(vocab: &Vocab, text: &str, unk_id: Option<u32>, out: &mut Vec<u32>) {
    let max_token_len = vocab.texts.iter().map(String::len).max().unwrap_or(0);
    for word in words(text) {
        let marked = format!("\u{2581}{word}");
        let boundaries: Vec<usize> = marked
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(marked.len()))
            .collect();
        let before = out.len();
        let mut start = 0;
        let mut matched_all = true;
        while start + 1 < boundaries.len() {
            let begin = boundaries[start];
            let found = (start + 1..boundaries.len())
                .rev()
                .filter(|&end| boundaries[end] - begin <= max_token_len)
                .find_map(|end| {
                    vocab
                        .id(&marked[begin..boundaries[end]])
                        .map(|id| (end, id))
                });
            match found {
                Some((end, id)) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    matched_all = false;
                    break;
                }
            }
        }
        if !matched_all {
            out.truncate(before);
        }
        if out.len() == before
            && let Some(unk) = unk_id
        {
            out.push(unk);
        }
    }
}
