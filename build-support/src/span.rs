//! Source positions.
//!
//! A [`Span`] is two `u32`s whose meaning depends on where the source came
//! from, recorded once per compilation in a [`SourceMap`]:
//!
//! - a `.ph` file (or any text): `lo..hi` is a byte range into the text;
//! - a `proc_macro2::TokenStream` (the `kernel!` macro): `lo..hi` is a range
//!   of *token indices* into the side table [`SourceMap::Tokens`], which
//!   holds the `proc_macro2::Span` of every lexed token, so an error can be
//!   reported by rustc at the exact token.
//!
//! Keeping spans two plain integers keeps AST and IR nodes `Copy`-cheap,
//! comparable and `Send`, while `proc_macro2::Span` is neither.

use std::fmt;

/// A half-open range of source positions (bytes or token indices; see the
/// module doc). `Span::DUMMY` marks nodes built without a source, e.g. by
/// the IR text parser.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    pub const DUMMY: Span = Span { lo: 0, hi: 0 };

    pub fn new(lo: u32, hi: u32) -> Span {
        Span { lo, hi }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        if self == Span::DUMMY {
            return other;
        }
        if other == Span::DUMMY {
            return self;
        }
        Span {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    pub fn is_dummy(self) -> bool {
        self == Span::DUMMY
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.lo, self.hi)
    }
}

/// What the numbers in a [`Span`] refer to.
#[derive(Clone, Debug)]
pub enum SourceMap {
    /// Text with a display name (a path for `.ph` files); spans are bytes.
    Text { name: String, text: String },
    /// Token spans from a macro invocation; span `lo..hi` covers tokens
    /// `spans[lo..hi]`.
    Tokens { spans: Vec<proc_macro2::Span> },
}

/// 1-based line and column of a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: usize,
    pub col: usize,
}

impl SourceMap {
    /// The line and column where `span` starts. For token sources this uses
    /// proc-macro2's `span-locations` (columns are 0-based there, so 1 is
    /// added), which outside a compiler-driven macro are real positions.
    pub fn line_col(&self, span: Span) -> LineCol {
        match self {
            SourceMap::Text { text, .. } => {
                let lo = (span.lo as usize).min(text.len());
                let before = &text[..floor_char_boundary(text, lo)];
                let line = before.matches('\n').count() + 1;
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                let col = before[line_start..].chars().count() + 1;
                LineCol { line, col }
            }
            SourceMap::Tokens { spans } => match spans.get(span.lo as usize) {
                Some(s) => {
                    let start = s.start();
                    LineCol {
                        line: start.line,
                        col: start.column + 1,
                    }
                }
                None => LineCol { line: 0, col: 0 },
            },
        }
    }

    /// The `proc_macro2::Span` to report `span` at: the joined token range
    /// where the compiler allows joining, else its first token. `None` for
    /// text sources.
    pub fn proc_macro_span(&self, span: Span) -> Option<proc_macro2::Span> {
        let SourceMap::Tokens { spans } = self else {
            return None;
        };
        let first = spans
            .get(span.lo as usize)
            .or_else(|| spans.last())
            .copied()?;
        let last_index = (span.hi as usize).saturating_sub(1).max(span.lo as usize);
        let joined = spans.get(last_index).and_then(|last| first.join(*last));
        Some(joined.unwrap_or(first))
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}
