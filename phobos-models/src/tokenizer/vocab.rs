//! The vocabulary: token texts, scores, types, and the reverse lookup.

use std::collections::HashMap;

/// `tokenizer.ggml.token_type` values, as GGUF writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    Undefined,
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl TokenType {
    pub fn from_gguf(code: i32) -> Self {
        match code {
            1 => Self::Normal,
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => Self::Undefined,
        }
    }
}

/// Per-token attributes (a token can be control and unused at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenAttrs {
    pub normal: bool,
    pub unknown: bool,
    pub control: bool,
    pub user_defined: bool,
    pub unused: bool,
    pub byte: bool,
    /// Whitespace after this special token is dropped when it is matched.
    pub rstrip: bool,
    /// Whitespace before this special token is dropped when it is matched.
    pub lstrip: bool,
}

impl TokenAttrs {
    pub fn from_type(ty: TokenType) -> Self {
        let mut attrs = Self::default();
        match ty {
            TokenType::Normal => attrs.normal = true,
            TokenType::Unknown => attrs.unknown = true,
            TokenType::Control => attrs.control = true,
            TokenType::UserDefined => attrs.user_defined = true,
            TokenType::Unused => attrs.unused = true,
            TokenType::Byte => attrs.byte = true,
            TokenType::Undefined => {}
        }
        attrs
    }

    /// Matched in raw text before pre-tokenization.
    pub fn is_special(self) -> bool {
        self.control || self.user_defined || self.unknown
    }
}

/// Token ids are i32 in llama.cpp (and u32 here): a vocabulary must be
/// numbered by them.
pub(crate) const MAX_TOKENS: usize = i32::MAX as usize;

/// Refuses a vocabulary too large to number with token ids.
pub(crate) fn check_vocab_len(n_tokens: usize) -> Result<(), super::TokenizerError> {
    if n_tokens > MAX_TOKENS {
        return Err(super::TokenizerError::VocabTooLarge {
            n_tokens,
            max: MAX_TOKENS,
        });
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub(crate) struct Vocab {
    pub texts: Vec<String>,
    pub scores: Vec<f32>,
    pub attrs: Vec<TokenAttrs>,
    pub ids: HashMap<String, u32>,
}

impl Vocab {
    /// `texts` has at most [`MAX_TOKENS`] entries (see [`check_vocab_len`]).
    pub fn new(texts: Vec<String>, scores: Vec<f32>, attrs: Vec<TokenAttrs>) -> Self {
        let mut texts = texts;
        for (i, text) in texts.iter_mut().enumerate() {
            if text.is_empty() {
                // An empty token could never be matched; give it a name that
                // cannot collide with real text, as llama.cpp does.
                *text = format!("[EMPTY_{i}]");
            }
        }
        let mut ids = HashMap::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            ids.insert(text.clone(), i as u32);
        }
        Self {
            texts,
            scores,
            attrs,
            ids,
        }
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    pub fn score(&self, id: u32) -> f32 {
        self.scores.get(id as usize).copied().unwrap_or(0.0)
    }

    pub fn attrs(&self, id: u32) -> TokenAttrs {
        self.attrs.get(id as usize).copied().unwrap_or_default()
    }

    /// The `<0xXX>` byte-fallback token for `byte`.
    pub fn byte_token(&self, byte: u8) -> Option<u32> {
        self.id(&format!("<0x{byte:02X}>"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_past_the_id_range_are_refused() {
        assert!(check_vocab_len(MAX_TOKENS).is_ok());
        let err = check_vocab_len(MAX_TOKENS + 1).unwrap_err();
        assert!(
            matches!(err, super::super::TokenizerError::VocabTooLarge { n_tokens, .. } if n_tokens == 1 << 31),
            "{err}"
        );
        assert!(check_vocab_len(usize::MAX).is_err());
    }
}
