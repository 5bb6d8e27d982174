//! Cutting raw text around special tokens before pre-tokenization, the way
//! llama.cpp does: each special token in turn (longest first) splits every
//! remaining raw fragment at each of its occurrences.

use super::vocab::Vocab;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fragment<'t> {
    Text(&'t str),
    Token(u32),
}

/// Special tokens ordered longest text first (ties by id, for determinism).
pub(crate) fn special_tokens_longest_first(vocab: &Vocab) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..vocab.len() as u32)
        .filter(|&id| vocab.attrs(id).is_special())
        .collect();
    ids.sort_by(|&a, &b| {
        vocab.texts[b as usize]
            .len()
            .cmp(&vocab.texts[a as usize].len())
            .then(a.cmp(&b))
    });
    ids
}

/// Splits `text` into raw fragments and special tokens. With
/// `parse_special` false only user-defined tokens are matched (control and
/// unknown tokens are left as text), like llama.cpp.
pub(crate) fn partition<'t>(
    vocab: &Vocab,
    specials: &[u32],
    text: &'t str,
    parse_special: bool,
) -> Vec<Fragment<'t>> {
    let mut fragments = vec![Fragment::Text(text)];
    if text.is_empty() {
        return Vec::new();
    }
    for &id in specials {
        let attrs = vocab.attrs(id);
        if !parse_special && (attrs.control || attrs.unknown) {
            continue;
        }
        let needle = vocab.texts[id as usize].as_str();
        if needle.is_empty() {
            continue;
        }
        let mut next = Vec::with_capacity(fragments.len());
        for fragment in fragments {
            let Fragment::Text(raw) = fragment else {
                next.push(fragment);
                continue;
            };
            let mut rest = raw;
            while let Some(found) = rest.find(needle) {
                let mut left = &rest[..found];
                if attrs.lstrip {
                    left = left.trim_end_matches(|c: char| matches!(c, ' ' | '\t'..='\r'));
                }
                if !left.is_empty() {
                    next.push(Fragment::Text(left));
                }
                next.push(Fragment::Token(id));
                rest = &rest[found + needle.len()..];
                if attrs.rstrip {
                    rest = rest.trim_start_matches(|c: char| matches!(c, ' ' | '\t'..='\r'));
                }
            }
            if !rest.is_empty() {
                next.push(Fragment::Text(rest));
            }
        }
        fragments = next;
    }
    fragments
}
