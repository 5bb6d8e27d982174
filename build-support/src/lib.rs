//! The Phobos kernel compiler: front end, checker, typed tile IR, back ends.
//!
//! The pipeline (see [`check_source`]):
//!
//! ```text
//! Source (.ph text | proc_macro2::TokenStream)
//!   -> front::lex      tokens with spans
//!   -> front::parse    AST (front::ast)
//!   -> check::check    typed tile IR (ir), verified by ir::verify
//! ```
//!
//! The IR ([`ir`]) is the contract for every back end; its module doc is
//! its specification. Errors are [`diag::Diagnostics`]: rendered as
//! `file:line:col` with the line underlined for files, or as
//! `(proc_macro2::Span, message)` pairs for the `kernel!` macro.

pub mod back;
pub mod ir;
pub mod span;
