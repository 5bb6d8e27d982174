//! SentencePiece-style merging (tokenizer.ggml.model = "llama"): repeatedly
//! merge the adjacent pair whose concatenation is the highest-scoring token;
//! characters that end up in no token fall back to `<0xXX>` byte tokens.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::TokenizerError;
use super::vocab::Vocab;

/// A symbol in the linked list of the text being merged (byte ranges).
#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

struct Candidate {
    score: f32,
    left: usize,
    right: usize,
    len: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// Max-heap order: higher score first, then the leftmost pair.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

pub(crate) fn encode(vocab: &Vocab, text: &str, out: &mut Vec<u32>) -> Result<(), TokenizerError> {
    let mut symbols: Vec<Symbol> = Vec::with_capacity(text.len());
    for (start, c) in text.char_indices() {
        let index = symbols.len();
        symbols.push(Symbol {
            start,
            len: c.len_utf8(),
            prev: index.checked_sub(1),
            next: None,
        });
        if index > 0 {
            symbols[index - 1].next = Some(index);
        }
    }
    let mut queue = BinaryHeap::new();
    let push_pair = |symbols: &[Symbol],
                     queue: &mut BinaryHeap<Candidate>,
                     left: Option<usize>,
                     right: Option<usize>| {
        let (Some(left), Some(right)) = (left, right) else {
            return;
        };
        let (l, r) = (symbols[left], symbols[right]);
        let merged = &text[l.start..r.start + r.len];
        if let Some(id) = vocab.id(merged) {
            queue.push(Candidate {
                score: vocab.score(id),
                left,
                right,
                len: merged.len(),
            });
        }
    };
    for i in 1..symbols.len() {
        push_pair(&symbols, &mut queue, Some(i - 1), Some(i));
    }
    while let Some(best) = queue.pop() {
        let (left, right) = (symbols[best.left], symbols[best.right]);
        // Stale when either side has merged since this pair was queued.
        if left.len == 0 || right.len == 0 || left.len + right.len != best.len {
            continue;
        }
        symbols[best.left].len += right.len;
        symbols[best.right].len = 0;
        symbols[best.left].next = right.next;
        if let Some(next) = right.next {
            symbols[next].prev = Some(best.left);
        }
        let merged = symbols[best.left];
        push_pair(&symbols, &mut queue, merged.prev, Some(best.left));
        push_pair(&symbols, &mut queue, Some(best.left), merged.next);
    }
    let mut cursor = if symbols.is_empty() { None } else { Some(0) };
    while let Some(i) = cursor {
        let symbol = symbols[i];
        let piece = &text[symbol.start..symbol.start + symbol.len];
        if let Some(id) = vocab.id(piece) {
            out.push(id);
        } else {
            for &byte in piece.as_bytes() {
                out.push(byte_fallback(vocab, byte)?);
            }
        }
        cursor = symbol.next;
    }
    Ok(())
}

fn byte_fallback(vocab: &Vocab, byte: u8) -> Result<u32, TokenizerError> {
    if let Some(id) = vocab.byte_token(byte) {
        return Ok(id);
    }
    // Some vocabularies spell single ASCII bytes as themselves.
    if byte.is_ascii()
        && let Some(id) = vocab.id(&char::from(byte).to_string())
    {
        return Ok(id);
    }
    Err(TokenizerError::NoByteToken { byte })
}
