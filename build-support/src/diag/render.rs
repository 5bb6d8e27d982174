//! Text rendering of diagnostics, in the shape rustc and most compilers use.

use std::fmt::Write;

use super::Diagnostic;
use crate::span::SourceMap;

pub(super) fn render_all(map: &SourceMap, errors: &[Diagnostic]) -> String {
    let mut out = String::new();
    for (i, d) in errors.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&render_one(map, d));
    }
    out
}

/// ```text
/// gemm.ph:7:13: error: unknown name `prgram_id`
///   |
/// 7 |   let pm = prgram_id(0)
///   |            ^^^^^^^^^
///   = help: did you mean `program_id`?
/// ```
pub(super) fn render_one(map: &SourceMap, d: &Diagnostic) -> String {
    let mut out = String::new();
    let pos = map.line_col(d.span);
    let name = match map {
        SourceMap::Text { name, .. } => name.as_str(),
        SourceMap::Tokens { .. } => "<kernel!>",
    };
    // Writing to a String cannot fail.
    let _ = writeln!(out, "{name}:{}:{}: error: {}", pos.line, pos.col, d.message);
    let gutter = pos.line.to_string().len();
    if let SourceMap::Text { text, .. } = map
        && let Some(line_text) = text.lines().nth(pos.line.saturating_sub(1))
    {
        let line_text = line_text.trim_end_matches('\r');
        let line_len = line_text.chars().count();
        // Underline to the end of the span or of the line, at least one caret.
        let span_chars = text
            .get(d.span.lo as usize..d.span.hi as usize)
            .map_or(1, |s| s.split('\n').next().unwrap_or("").chars().count());
        let start_col = pos.col.saturating_sub(1);
        let width = span_chars.clamp(1, line_len.saturating_sub(start_col).max(1));
        let _ = writeln!(out, "{:gutter$} |", "");
        let _ = writeln!(out, "{} | {line_text}", pos.line);
        // Tabs are kept under tabs so the carets line up however they render.
        let pad: String = line_text
            .chars()
            .take(start_col)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let _ = writeln!(out, "{:gutter$} | {pad}{}", "", "^".repeat(width));
    }
    for n in &d.notes {
        let _ = writeln!(out, "{:gutter$} = note: {n}", "");
    }
    if let Some(h) = &d.help {
        let _ = writeln!(out, "{:gutter$} = help: {h}", "");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    fn map(text: &str) -> SourceMap {
        SourceMap::Text {
            name: "t.ph".into(),
            text: text.into(),
        }
    }

    #[test]
    fn carets_follow_tabs_and_clamp_to_the_line() {
        let text = "a\n\tlet x = yy\nb\n";
        let lo = text.find("yy").unwrap() as u32;
        let d = Diagnostic::error(Span::new(lo, lo + 2), "unknown name `yy`");
        assert_eq!(
            render_one(&map(text), &d),
            "t.ph:2:10: error: unknown name `yy`\n  |\n2 | \tlet x = yy\n  | \t        ^^\n"
        );
        // A span running past the line end underlines to the end only.
        let d = Diagnostic::error(Span::new(lo, text.len() as u32), "m");
        assert!(render_one(&map(text), &d).ends_with("^^\n"));
    }

    #[test]
    fn end_of_input_still_renders() {
        let text = "kernel k(";
        let end = text.len() as u32;
        let d = Diagnostic::error(Span::new(end, end), "expected a parameter name");
        let out = render_one(&map(text), &d);
        assert!(
            out.starts_with("t.ph:1:10: error: expected a parameter name\n"),
            "{out}"
        );
        assert!(out.ends_with("|          ^\n"), "{out}");
    }
}
