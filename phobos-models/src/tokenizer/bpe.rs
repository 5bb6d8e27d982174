//! Rank-based BPE (tokenizer.ggml.model = "gpt2", and "gemma4"): within each
//! pre-tokenized word, repeatedly merge the adjacent pair with the lowest
//! merge rank. A heap of candidate pairs makes this O(n log n) per word.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::TokenizerError;
use super::vocab::Vocab;

/// The merge table, with every string that appears in it interned so that
/// pair lookups need no allocation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Merges {
    interned: HashMap<String, u32>,
    ranks: HashMap<(u32, u32), u32>,
}

impl Merges {
    /// Parses `"left right"` lines; rank is the line index.
    pub fn from_lines(lines: &[String]) -> Result<Self, TokenizerError> {
        let mut merges = Self::default();
        for (rank, line) in lines.iter().enumerate() {
            // The separator is the first space after the first character, so a
            // left side that starts with a space stays intact.
            let first_len = line.chars().next().map_or(0, char::len_utf8);
            let split = line[first_len..]
                .find(' ')
                .map(|i| i + first_len)
                .ok_or_else(|| TokenizerError::BadMerge {
                    index: rank,
                    line: line.clone(),
                })?;
            let left = merges.intern(&line[..split]);
            let right = merges.intern(&line[split + 1..]);
            merges.intern(&format!("{}{}", &line[..split], &line[split + 1..]));
            merges.ranks.entry((left, right)).or_insert(rank as u32);
        }
        Ok(merges)
    }

    fn intern(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.interned.get(text) {
            return id;
        }
        let id = self.interned.len() as u32;
        self.interned.insert(text.to_owned(), id);
        id
    }

    fn string_id(&self, text: &str) -> Option<u32> {
        self.interned.get(text).copied()
    }

    fn rank(&self, left: Option<u32>, right: Option<u32>) -> Option<u32> {
        self.ranks.get(&(left?, right?)).copied()
    }

    pub fn len(&self) -> usize {
        self.ranks.len()
    }
}

/// (rank, left symbol, right symbol, left string id, right string id).
type PairCandidate = (u32, usize, usize, u32, u32);

#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    /// Interned id of this symbol's text, if it occurs in any merge.
    string_id: Option<u32>,
    prev: Option<usize>,
    next: Option<usize>,
}

/// How unmatched pieces fall back to bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByteFallback {
    /// Each byte of the (already byte-encoded) text is looked up as itself;
    /// bytes with no token are dropped, as llama.cpp does.
    EncodedBytes,
    /// `<0xXX>` tokens for each byte of the raw UTF-8 text.
    HexTokens,
}

pub(crate) fn encode_word(
    vocab: &Vocab,
    merges: &Merges,
    word: &str,
    ignore_merges: bool,
    fallback: ByteFallback,
    out: &mut Vec<u32>,
) -> Result<(), TokenizerError> {
    if word.is_empty() {
        return Ok(());
    }
    if ignore_merges && let Some(id) = vocab.id(word) {
        out.push(id);
        return Ok(());
    }
    let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
    for (start, c) in word.char_indices() {
        let index = symbols.len();
        let text = &word[start..start + c.len_utf8()];
        symbols.push(Symbol {
            start,
            len: c.len_utf8(),
            string_id: merges.string_id(text),
            prev: index.checked_sub(1),
            next: None,
        });
        if index > 0 {
            symbols[index - 1].next = Some(index);
        }
    }
    // Min-heap on (rank, left index); entries carry the ids they were made
    // from so stale ones are recognized when popped.
    let mut queue: BinaryHeap<Reverse<PairCandidate>> = BinaryHeap::new();
    let push_pair = |symbols: &[Symbol],
                     queue: &mut BinaryHeap<_>,
                     left: Option<usize>,
                     right: Option<usize>| {
        let (Some(left), Some(right)) = (left, right) else {
            return;
        };
        let (l, r): (Symbol, Symbol) = (symbols[left], symbols[right]);
        if let (Some(rank), Some(lid), Some(rid)) = (
            merges.rank(l.string_id, r.string_id),
            l.string_id,
            r.string_id,
        ) {
            queue.push(Reverse((rank, left, right, lid, rid)));
        }
    };
    for i in 1..symbols.len() {
        push_pair(&symbols, &mut queue, Some(i - 1), Some(i));
    }
    while let Some(Reverse((_, left, right, lid, rid))) = queue.pop() {
        let (l, r) = (symbols[left], symbols[right]);
        if l.len == 0
            || r.len == 0
            || l.string_id != Some(lid)
            || r.string_id != Some(rid)
            || l.next != Some(right)
        {
            continue;
        }
        let merged_len = l.len + r.len;
        symbols[left].len = merged_len;
        symbols[left].string_id = merges.string_id(&word[l.start..l.start + merged_len]);
        symbols[left].next = r.next;
        symbols[right].len = 0;
        if let Some(next) = r.next {
            symbols[next].prev = Some(left);
        }
        push_pair(&symbols, &mut queue, symbols[left].prev, Some(left));
        push_pair(&symbols, &mut queue, Some(left), symbols[left].next);
    }
    let mut cursor = Some(0);
    while let Some(i) = cursor {
        let symbol = symbols[i];
        let piece = &word[symbol.start..symbol.start + symbol.len];
        if let Some(id) = vocab.id(piece) {
            out.push(id);
        } else {
            match fallback {
                ByteFallback::EncodedBytes => {
                    for &byte in piece.as_bytes() {
                        if byte.is_ascii()
                            && let Some(id) = vocab.id(&char::from(byte).to_string())
                        {
                            out.push(id);
                        }
                    }
                }
                ByteFallback::HexTokens => {
                    for &byte in piece.as_bytes() {
                        if let Some(id) = vocab.byte_token(byte) {
                            out.push(id);
                        }
                    }
                }
            }
        }
        cursor = symbol.next;
    }
    Ok(())
}
