//! `tojson` as Hugging Face's chat-template environment defines it: Python's
//! `json.dumps` with `ensure_ascii=False` (keys in insertion order, `", "`
//! and `": "` separators unless told otherwise, no HTML escaping). As in
//! Python, undefined values cannot be serialized. The indent, the nesting
//! and the output's size are bounded by the render's budget.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

use super::limits::{Budget, ChatLimit};

pub(crate) struct JsonStyle<'a> {
    pub budget: &'a Budget,
    pub indent: Option<String>,
    pub item_separator: String,
    pub key_separator: String,
    pub ensure_ascii: bool,
    pub sort_keys: bool,
}

pub(crate) fn tojson_filter(budget: &Budget, value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => Some(match v.as_str() {
            Some(s) => s.to_owned(),
            None => {
                // Python repeats a space `indent` times (none when negative).
                let width = i128::try_from(v.clone())?.max(0);
                if width > budget.json_indent as i128 {
                    return Err(budget.fail(
                        ChatLimit::JsonIndent,
                        format!(
                            "tojson indent {width} is larger than the limit {}",
                            budget.json_indent
                        ),
                    ));
                }
                " ".repeat(width as usize)
            }
        }),
    };
    if indent
        .as_ref()
        .is_some_and(|i| i.len() > budget.json_indent)
    {
        return Err(budget.fail(
            ChatLimit::JsonIndent,
            format!(
                "tojson indent is longer than the limit {}",
                budget.json_indent
            ),
        ));
    }
    let separators: Option<Value> = kwargs.get("separators")?;
    let (item_separator, key_separator) = match separators {
        Some(pair) if !pair.is_none() => {
            let item = pair.get_item_by_index(0)?;
            let key = pair.get_item_by_index(1)?;
            (
                item.as_str().unwrap_or(",").to_owned(),
                key.as_str().unwrap_or(":").to_owned(),
            )
        }
        _ if indent.is_some() => (",".to_owned(), ": ".to_owned()),
        _ => (", ".to_owned(), ": ".to_owned()),
    };
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let style = JsonStyle {
        budget,
        indent,
        item_separator,
        key_separator,
        ensure_ascii: ensure_ascii.unwrap_or(false),
        sort_keys: sort_keys.unwrap_or(false),
    };
    let mut out = String::new();
    write_json(&value, &style, 0, &mut out)?;
    // A plain string, as json.dumps returns (not markup: `'x'|safe + json`
    // escapes it, as in jinja2).
    Ok(Value::from(out))
}

fn write_string(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn newline(style: &JsonStyle, depth: usize, out: &mut String) -> Result<(), Error> {
    if let Some(indent) = &style.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
    if out.len() as u64 > style.budget.value_bytes {
        return Err(style.budget.fail(
            ChatLimit::ValueSize,
            format!(
                "tojson output grew past {} bytes (the limit for this request)",
                style.budget.value_bytes
            ),
        ));
    }
    Ok(())
}

pub(crate) fn write_json(
    value: &Value,
    style: &JsonStyle,
    depth: usize,
    out: &mut String,
) -> Result<(), Error> {
    if depth > style.budget.depth {
        return Err(style.budget.fail(
            ChatLimit::Depth,
            format!(
                "tojson: a value nests deeper than {} levels",
                style.budget.depth
            ),
        ));
    }
    match value.kind() {
        ValueKind::Undefined => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "tojson: an undefined value is not JSON serializable",
            ));
        }
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if let Ok(i) = i64::try_from(value.clone())
                && (value.as_i64().is_some() || !value.to_string().contains('.'))
            {
                out.push_str(&i.to_string());
                return Ok(());
            }
            let f = f64::try_from(value.clone())?;
            if f.is_finite() {
                out.push_str(&format!("{f:?}"));
            } else if f.is_nan() {
                out.push_str("NaN");
            } else {
                out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
            }
        }
        ValueKind::String => {
            write_string(value.as_str().unwrap_or_default(), style.ensure_ascii, out)
        }
        ValueKind::Iterable => {
            // Python's json.dumps refuses generators (jinja2's map, select,
            // ...) and ranges; minijinja's lazy values stand for those.
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "tojson: a generator or range is not JSON serializable (apply `list` first)",
            ));
        }
        ValueKind::Seq => {
            let items: Vec<Value> = value.try_iter()?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_separator);
                }
                newline(style, depth + 1, out)?;
                write_json(item, style, depth + 1, out)?;
            }
            newline(style, depth, out)?;
            out.push(']');
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = value.try_iter()?.collect();
            if style.sort_keys {
                keys.sort_by_key(|k| k.to_string());
            }
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_separator);
                }
                newline(style, depth + 1, out)?;
                write_string(&key.to_string(), style.ensure_ascii, out);
                out.push_str(&style.key_separator);
                write_json(&value.get_item(key)?, style, depth + 1, out)?;
            }
            newline(style, depth, out)?;
            out.push('}');
        }
        other => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("tojson cannot serialize a {other}"),
            ));
        }
    }
    Ok(())
}
