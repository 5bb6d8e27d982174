//! Values turned into text the way jinja2 does it, which is Python's `str()`:
//! `None`, `True`, `{'a': [1, 2.5]}`, where minijinja would write `none`,
//! `true`, `{"a": [1, 2.5]}`. Templates that print or concatenate tool
//! definitions (Apriel's `{{ tool }}`) depend on it. Nesting is bounded by
//! the render's depth limit.

use std::fmt::{self, Write};

use minijinja::Value;
use minijinja::value::ValueKind;

/// Writes Python's `str(value)`.
pub(crate) fn write_str(out: &mut impl Write, value: &Value, depth: usize) -> fmt::Result {
    match value.kind() {
        ValueKind::String => out.write_str(value.as_str().unwrap_or_default()),
        ValueKind::Undefined => Ok(()),
        _ => write_repr(out, value, depth),
    }
}

/// Python's `str(value)` as a string.
pub(crate) fn to_str(value: &Value, depth: usize) -> Result<String, fmt::Error> {
    let mut out = String::new();
    write_str(&mut out, value, depth)?;
    Ok(out)
}

fn write_repr(out: &mut impl Write, value: &Value, depth: usize) -> fmt::Result {
    let Some(depth) = depth.checked_sub(1) else {
        return Err(fmt::Error);
    };
    match value.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::None => out.write_str("None"),
        ValueKind::Bool => out.write_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => match value.as_i64() {
            Some(i) if !value.to_string().contains(['.', 'e', 'n', 'N']) => write!(out, "{i}"),
            _ => match f64::try_from(value.clone()) {
                Ok(f) => out.write_str(&float_repr(f)),
                Err(_) => write!(out, "{value}"),
            },
        },
        ValueKind::String => string_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            out.write_char('[')?;
            if let Ok(items) = value.try_iter() {
                for (i, item) in items.enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    write_repr(out, &item, depth)?;
                }
            }
            out.write_char(']')
        }
        ValueKind::Map => {
            out.write_char('{')?;
            if let Ok(keys) = value.try_iter() {
                for (i, key) in keys.enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    write_repr(out, &key, depth)?;
                    out.write_str(": ")?;
                    write_repr(out, &value.get_item(&key).unwrap_or_default(), depth)?;
                }
            }
            out.write_char('}')
        }
        _ => write!(out, "{value}"),
    }
}

/// Python's `repr(str)`: single quotes unless the text has a single quote
/// and no double quote.
fn string_repr(out: &mut impl Write, s: &str) -> fmt::Result {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.write_char(quote)?;
    for c in s.chars() {
        match c {
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if c == quote => {
                out.write_char('\\')?;
                out.write_char(c)?;
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => write!(out, "\\x{:02x}", c as u32)?,
            c if (0x80..0xa0).contains(&(c as u32)) => write!(out, "\\x{:02x}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_char(quote)
}

/// Python's `repr(float)`: the shortest round-trip digits, fixed notation
/// for exponents from -4 to 15, else `1e+16` style.
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{text}")
    } else {
        let mut m = digits[..1].to_owned();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{exp_sign}{:02}", exp.abs())
    }
}

/// jinja2's `indent` filter: lines after the first (and the first with
/// `first`) get `indent` in front; blank lines only with `blank`. Unlike
/// minijinja's, a trailing newline is kept.
pub(crate) fn indent(s: &str, indent: &str, first: bool, blank: bool) -> String {
    let text = format!("{s}\n");
    let lines = splitlines(&text);
    let mut out = String::with_capacity(text.len() + lines.len() * indent.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if if i == 0 {
            first
        } else {
            blank || !line.is_empty()
        } {
            out.push_str(indent);
        }
        out.push_str(line);
    }
    out
}

/// Python's `str.splitlines()`.
fn splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let breaks = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !breaks {
            continue;
        }
        lines.push(&s[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r'
            && let Some(&(j, '\n')) = chars.peek()
        {
            chars.next();
            end = j + 1;
        }
        start = end;
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_str_of_values() {
        let v = Value::from_serialize(serde_json::json!({
            "a": [1, 2.5, true, null, "it's", "q\"'"], "b": 1e16, "c": 1e-5, "d": 0.0001
        }));
        assert_eq!(
            to_str(&v, 16).unwrap(),
            "{'a': [1, 2.5, True, None, \"it's\", 'q\"\\''], 'b': 1e+16, 'c': 1e-05, 'd': 0.0001}"
        );
        assert!(to_str(&v, 1).is_err(), "nesting past the depth limit");
    }

    #[test]
    fn indent_keeps_the_trailing_newline_as_jinja2() {
        assert_eq!(indent("{\n", "    ", true, false), "    {\n");
        assert_eq!(indent("a\n\nb", "  ", false, false), "a\n\n  b");
        assert_eq!(indent("a\n\nb", "  ", false, true), "a\n  \n  b");
    }
}
