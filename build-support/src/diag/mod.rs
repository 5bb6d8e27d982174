//! Diagnostics: one error type for every phase, and its two renderings.
//!
//! A [`Diagnostic`] carries a [`Span`], a message, notes and an optional
//! help line. [`Diagnostics`] bundles them with the [`SourceMap`] they refer
//! to, so they can be rendered on their own:
//!
//! - [`Diagnostics::render`] for text sources: `file:line:col: error: msg`,
//!   the source line, and a caret underline of the span;
//! - [`Diagnostics::macro_errors`] for token sources: one
//!   `(proc_macro2::Span, String)` per error, for `compile_error!`.

mod render;
pub mod suggest;

use std::fmt;

use crate::span::{SourceMap, Span};

/// One error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// The message with notes and help appended, one per line, as the macro
    /// reports it (rustc shows a `compile_error!` message verbatim).
    pub fn full_message(&self) -> String {
        let mut out = self.message.clone();
        for n in &self.notes {
            out.push_str("\nnote: ");
            out.push_str(n);
        }
        if let Some(h) = &self.help {
            out.push_str("\nhelp: ");
            out.push_str(h);
        }
        out
    }
}

/// The errors of one compilation, with the source map their spans refer to.
#[derive(Clone, Debug)]
pub struct Diagnostics {
    pub source_map: SourceMap,
    pub errors: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn new(source_map: SourceMap, errors: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics { source_map, errors }
    }

    /// Human-readable text of every error (see the module doc).
    pub fn render(&self) -> String {
        render::render_all(&self.source_map, &self.errors)
    }

    /// `(span, message)` per error for `compile_error!` at the offending
    /// token. For a text source (e.g. `kernel_file!`) the spans are
    /// `Span::call_site()` and the message starts with `file:line:col`.
    pub fn macro_errors(&self) -> Vec<(proc_macro2::Span, String)> {
        self.errors
            .iter()
            .map(|d| match self.source_map.proc_macro_span(d.span) {
                Some(span) => (span, d.full_message()),
                None => (
                    proc_macro2::Span::call_site(),
                    render::render_one(&self.source_map, d),
                ),
            })
            .collect()
    }
}

impl std::error::Error for Diagnostics {}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}
