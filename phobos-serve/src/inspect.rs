//! `phobos inspect MODEL.gguf [--tensors]`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::gguf::{Gguf, Value};

/// Values longer than this are cut in the table (templates, long strings).
const MAX_VALUE_CHARS: usize = 80;
/// Key and tensor-name columns are padded to the longest name up to this
/// width: one absurdly long key must not pad every other line with it.
const MAX_NAME_WIDTH: usize = 64;

/// A key or tensor name as printed: control characters escaped, so a file
/// cannot write terminal escape sequences into the listing.
fn printable(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn short(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > MAX_VALUE_CHARS {
        let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
        format!("{cut}… ({} chars)", text.chars().count())
    } else {
        text
    }
}

pub fn run(path: &Path, list_tensors: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let gguf = Gguf::open(path).with_context(|| format!("opening {}", path.display()))?;
    // Loading renders the template's probes under its limits, so a runaway
    // template fails here, before anything is printed.
    let chat_template = ChatTemplate::from_gguf(&gguf)
        .with_context(|| format!("loading the chat template of {}", path.display()))?;
    writeln!(
        out,
        "{}: GGUF v{}, {} bytes, alignment {}",
        path.display(),
        gguf.version(),
        gguf.len_bytes(),
        gguf.alignment()
    )?;
    writeln!(out, "\nmetadata ({} keys):", gguf.metadata().len())?;
    let key_width = gguf
        .metadata()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(0)
        .min(MAX_NAME_WIDTH);
    for (key, value) in gguf.metadata() {
        writeln!(
            out,
            "  {:<key_width$}  {:<8}  {}",
            printable(key),
            value.value_type().to_string(),
            short(value)
        )?;
    }
    if let Some(template) = &chat_template {
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        let supports = template.supports();
        writeln!(
            out,
            "\nchat template: {} chars (system role: {}, tools: {}, tool calls: {}, tool results: {})",
            template.source().len(),
            yes_no(supports.system_role),
            yes_no(supports.tools),
            yes_no(supports.tool_calls),
            yes_no(supports.tool_responses)
        )?;
    }
    let mut by_type: BTreeMap<String, (usize, u64, u64)> = BTreeMap::new();
    let mut n_params = 0u64;
    let mut n_bytes = 0u64;
    // Tensors fit in the file without overlapping, so these sums stay far
    // below u64::MAX; saturating keeps that a fact about the reader, not a
    // condition for this command not to panic.
    for info in gguf.tensors() {
        let entry = by_type.entry(info.ty.to_string()).or_default();
        entry.0 += 1;
        entry.1 = entry.1.saturating_add(info.n_elements);
        entry.2 = entry.2.saturating_add(info.n_bytes);
        n_params = n_params.saturating_add(info.n_elements);
        n_bytes = n_bytes.saturating_add(info.n_bytes);
    }
    writeln!(
        out,
        "\ntensors: {} ({} parameters, {} bytes)",
        gguf.tensors().len(),
        n_params,
        n_bytes
    )?;
    for (ty, (count, elements, bytes)) in &by_type {
        writeln!(
            out,
            "  {ty:<8} {count:>5} tensors  {elements:>14} params  {bytes:>14} bytes"
        )?;
    }
    if list_tensors {
        writeln!(out, "\ndirectory:")?;
        let name_width = gguf
            .tensors()
            .iter()
            .map(|t| t.name.len())
            .max()
            .unwrap_or(0)
            .min(MAX_NAME_WIDTH);
        for info in gguf.tensors() {
            let dims: Vec<String> = info.dims.iter().map(u64::to_string).collect();
            writeln!(
                out,
                "  {:<name_width$}  {:<8}  [{}]  offset {}",
                printable(&info.name),
                info.ty.to_string(),
                dims.join(", "),
                info.offset
            )?;
        }
    }
    Ok(())
}
