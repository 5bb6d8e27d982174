//! Output that is JSON between fixed texts: one value of a shape for
//! `response_format`, or one of several tool calls, each its own text
//! around its own arguments' shape, for `tool_choice`.

use std::sync::Arc;

use super::{JsonMatcher, JsonShape};

/// One form the output may take: `prefix`, a value of `shape`, `suffix`.
#[derive(Debug, PartialEq)]
pub struct Alternative {
    pub prefix: Box<[u8]>,
    pub shape: Arc<JsonShape>,
    pub suffix: Box<[u8]>,
}

/// What a request's output must be: one of its alternatives.
///
/// The alternatives are told apart by their prefixes alone, so no prefix
/// may be a proper prefix of another's (tool calls put the tool's
/// JSON-encoded name, closing quote included, in theirs). A value ends
/// unambiguously before a non-empty suffix only if it is a container.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonFormat {
    alternatives: Arc<[Alternative]>,
}

/// The most alternatives a format may have (the matcher keeps the live
/// ones in a 64-bit mask).
pub const MAX_ALTERNATIVES: usize = 64;

impl JsonFormat {
    /// The whole output is one value of `shape`.
    pub fn plain(shape: JsonShape) -> Self {
        Self {
            alternatives: Arc::new([Alternative {
                prefix: Box::default(),
                shape: Arc::new(shape),
                suffix: Box::default(),
            }]),
        }
    }

    /// One of `alternatives`; `None` when there are none or more than
    /// [`MAX_ALTERNATIVES`].
    pub fn one_of(alternatives: Vec<Alternative>) -> Option<Self> {
        (!alternatives.is_empty() && alternatives.len() <= MAX_ALTERNATIVES).then(|| Self {
            alternatives: alternatives.into(),
        })
    }

    /// Whether `text` is a whole output of this format.
    #[cfg(test)]
    pub fn accepts_whole(&self, text: &str) -> bool {
        let mut matcher = FramedMatcher::new(self.clone());
        text.bytes().all(|b| matcher.feed(b)) && matcher.can_end()
    }
}

/// A [`JsonFormat`]'s matcher: the prefixes byte by byte until one
/// alternative is left and its prefix is complete, then its value, then
/// its suffix byte by byte.
#[derive(Debug)]
pub(super) struct FramedMatcher {
    format: JsonFormat,
    /// Bit `i`: alternative `i` still matches the prefix read so far.
    live: u64,
    prefix_len: usize,
    /// The chosen alternative and its value's matcher, once chosen.
    value: Option<(usize, JsonMatcher)>,
    suffix_len: usize,
}

impl Clone for FramedMatcher {
    fn clone(&self) -> Self {
        Self {
            format: self.format.clone(),
            live: self.live,
            prefix_len: self.prefix_len,
            value: self.value.clone(),
            suffix_len: self.suffix_len,
        }
    }

    /// Reuses the value matcher's stack: the token mask clones once per
    /// token of the vocabulary.
    fn clone_from(&mut self, source: &Self) {
        self.live = source.live;
        self.prefix_len = source.prefix_len;
        match (&mut self.value, &source.value) {
            (Some((chosen, json)), Some((source_chosen, source_json))) => {
                *chosen = *source_chosen;
                json.clone_from(source_json);
            }
            (value, source_value) => value.clone_from(source_value),
        }
        self.suffix_len = source.suffix_len;
    }
}

impl FramedMatcher {
    pub(super) fn new(format: JsonFormat) -> Self {
        let n = format.alternatives.len();
        let mut matcher = Self {
            format,
            live: if n >= 64 { u64::MAX } else { (1 << n) - 1 },
            prefix_len: 0,
            value: None,
            suffix_len: 0,
        };
        matcher.choose_if_decided();
        matcher
    }

    /// Starts the value of the first live alternative whose prefix has been
    /// read whole.
    fn choose_if_decided(&mut self) {
        let chosen = self
            .format
            .alternatives
            .iter()
            .enumerate()
            .find(|(i, alt)| self.live >> i & 1 == 1 && alt.prefix.len() == self.prefix_len);
        if let Some((i, alt)) = chosen {
            self.value = Some((i, JsonMatcher::new(Arc::clone(&alt.shape))));
        }
    }

    pub(super) fn feed(&mut self, b: u8) -> bool {
        let Some((chosen, json)) = &mut self.value else {
            let at = self.prefix_len;
            for (i, alt) in self.format.alternatives.iter().enumerate() {
                if alt.prefix.get(at) != Some(&b) {
                    self.live &= !(1u64 << i);
                }
            }
            if self.live == 0 {
                return false;
            }
            self.prefix_len += 1;
            self.choose_if_decided();
            return true;
        };
        if !json.is_finished() {
            return json.feed(b);
        }
        let suffix = &self.format.alternatives[*chosen].suffix;
        match suffix.get(self.suffix_len) {
            Some(&want) => {
                self.suffix_len += 1;
                want == b
            }
            None => false,
        }
    }

    pub(super) fn feed_all(&mut self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && bytes.iter().all(|&b| self.feed(b))
    }

    pub(super) fn is_finished(&self) -> bool {
        self.value.as_ref().is_some_and(|(chosen, json)| {
            json.is_finished() && self.suffix_len == self.format.alternatives[*chosen].suffix.len()
        })
    }

    pub(super) fn can_end(&self) -> bool {
        match &self.value {
            Some((chosen, json)) if self.format.alternatives[*chosen].suffix.is_empty() => {
                json.can_end()
            }
            _ => self.is_finished(),
        }
    }
}
