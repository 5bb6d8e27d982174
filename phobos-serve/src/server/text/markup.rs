//! Splits a chat answer as it streams into content, reasoning and tool
//! calls. Recognised markups:
//! - reasoning: `<think>...</think>` (Qwen3, DeepSeek-R1, and templates
//!   whose generation prompt already opens `<think>`);
//! - tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
//!   (Hermes, Qwen 2.5/3), `<tool_call><function=NAME><parameter=P>V</parameter>
//!   </function></tool_call>` (Qwen3-Coder), and `[TOOL_CALLS][{...}]`
//!   (Mistral), up to the end of the answer.
//!
//! A tool call whose body cannot be parsed is given back as content (the
//! model's text is not lost); well-formed markup never reaches content.

use super::partial_marker_len;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const TOOL_OPEN: &str = "<tool_call>";
const TOOL_CLOSE: &str = "</tool_call>";
const MISTRAL_TOOLS: &str = "[TOOL_CALLS]";

#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Content(String),
    Reasoning(String),
    ToolCall { name: String, arguments: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    Reasoning,
    /// Inside `<tool_call>`, up to `</tool_call>`.
    ToolCall,
    /// After `[TOOL_CALLS]`: a JSON array up to the end.
    MistralCalls,
}

#[derive(Debug)]
pub struct MarkupParser {
    mode: Mode,
    parse_tools: bool,
    held: String,
    /// At the start of a segment (after a marker): leading whitespace is
    /// dropped.
    segment_start: bool,
    tool_calls: usize,
}

impl MarkupParser {
    /// `parse_tools`: the request offered tools (else tool markup is text).
    /// `in_reasoning`: the prompt already opened a `<think>` block.
    pub fn new(parse_tools: bool, in_reasoning: bool) -> Self {
        Self {
            mode: if in_reasoning {
                Mode::Reasoning
            } else {
                Mode::Content
            },
            parse_tools,
            held: String::new(),
            segment_start: true,
            tool_calls: 0,
        }
    }

    /// Inside a reasoning block (the tokens of which count as reasoning).
    pub fn in_reasoning(&self) -> bool {
        self.mode == Mode::Reasoning
    }

    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        self.held.push_str(text);
        let mut out = Vec::new();
        loop {
            let progressed = match self.mode {
                Mode::Content | Mode::Reasoning => self.scan_text(&mut out),
                Mode::ToolCall => self.scan_tool_call(&mut out),
                Mode::MistralCalls => false,
            };
            if !progressed {
                break;
            }
        }
        out
    }

    /// The answer is complete: release everything held back.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        let held = std::mem::take(&mut self.held);
        match self.mode {
            Mode::Content | Mode::Reasoning => {
                let text = if self.segment_start {
                    held.trim_start()
                } else {
                    &held
                };
                let text = if self.mode == Mode::Reasoning || self.tool_calls > 0 {
                    text.trim_end()
                } else {
                    text
                };
                self.emit_text(text, &mut out);
            }
            Mode::ToolCall => match parse_tool_body(&held) {
                Some(call) => self.emit_call(call, &mut out),
                None => out.push(Piece::Content(format!("{TOOL_OPEN}{held}"))),
            },
            Mode::MistralCalls => match parse_mistral_calls(&held) {
                Some(calls) => calls.into_iter().for_each(|c| self.emit_call(c, &mut out)),
                None => out.push(Piece::Content(format!("{MISTRAL_TOOLS}{held}"))),
            },
        }
        out
    }

    fn markers(&self) -> Vec<&'static str> {
        match self.mode {
            Mode::Reasoning => vec![THINK_CLOSE],
            _ if self.parse_tools => vec![THINK_OPEN, TOOL_OPEN, MISTRAL_TOOLS],
            _ => vec![THINK_OPEN],
        }
    }

    /// Emits text up to the next marker (switching mode) or up to what must
    /// be held back; returns whether a marker was consumed.
    fn scan_text(&mut self, out: &mut Vec<Piece>) -> bool {
        let markers = self.markers();
        let found = markers
            .iter()
            .filter_map(|m| self.held.find(m).map(|at| (at, *m)))
            .min_by_key(|(at, _)| *at);
        if let Some((at, marker)) = found {
            let before: String = self.held[..at].to_owned();
            self.held.drain(..at + marker.len());
            let before = if self.segment_start {
                before.trim_start()
            } else {
                &before
            };
            // Whitespace that only separates the segment from the marker is
            // layout, not text.
            self.emit_text(before.trim_end(), out);
            self.segment_start = true;
            self.mode = match marker {
                THINK_OPEN => Mode::Reasoning,
                THINK_CLOSE => Mode::Content,
                TOOL_OPEN => Mode::ToolCall,
                _ => Mode::MistralCalls,
            };
            return true;
        }
        let keep = partial_marker_len(&self.held, &markers);
        let ready = self.held.len() - keep;
        // Trailing whitespace waits: it may come right before a marker.
        let ready = self.held[..ready].trim_end().len();
        let text: String = self.held.drain(..ready).collect();
        let text = if self.segment_start {
            text.trim_start().to_owned()
        } else {
            text
        };
        if !text.is_empty() {
            self.segment_start = false;
            self.emit_text(&text, out);
        }
        false
    }

    fn scan_tool_call(&mut self, out: &mut Vec<Piece>) -> bool {
        let Some(at) = self.held.find(TOOL_CLOSE) else {
            return false;
        };
        let body: String = self.held[..at].to_owned();
        self.held.drain(..at + TOOL_CLOSE.len());
        match parse_tool_body(&body) {
            Some(call) => self.emit_call(call, out),
            None => out.push(Piece::Content(format!("{TOOL_OPEN}{body}{TOOL_CLOSE}"))),
        }
        self.mode = Mode::Content;
        self.segment_start = true;
        true
    }

    fn emit_text(&self, text: &str, out: &mut Vec<Piece>) {
        if text.is_empty() {
            return;
        }
        out.push(match self.mode {
            Mode::Reasoning => Piece::Reasoning(text.to_owned()),
            _ => Piece::Content(text.to_owned()),
        });
    }

    fn emit_call(&mut self, (name, arguments): (String, String), out: &mut Vec<Piece>) {
        self.tool_calls += 1;
        out.push(Piece::ToolCall { name, arguments });
    }
}

/// A Hermes JSON body or a Qwen3-Coder XML body: (name, arguments as JSON
/// text).
fn parse_tool_body(body: &str) -> Option<(String, String)> {
    let body = body.trim();
    if body.starts_with("<function=") {
        return parse_xml_function(body);
    }
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    call_from_json(&value)
}

fn call_from_json(value: &serde_json::Value) -> Option<(String, String)> {
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = match value.get("arguments").or_else(|| value.get("parameters")) {
        None | Some(serde_json::Value::Null) => "{}".to_owned(),
        // Some models write the arguments as a JSON string already.
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    Some((name, arguments))
}

fn parse_xml_function(body: &str) -> Option<(String, String)> {
    let rest = body.strip_prefix("<function=")?;
    let (name, mut rest) = rest.split_once('>')?;
    let mut arguments = serde_json::Map::new();
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("<parameter=") {
            let (param, after) = after.split_once('>')?;
            let (value, after) = after.split_once("</parameter>")?;
            let value = value.strip_prefix('\n').unwrap_or(value);
            let value = value.strip_suffix('\n').unwrap_or(value);
            let value = serde_json::from_str(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.to_owned()));
            arguments.insert(param.trim().to_owned(), value);
            rest = after;
        } else if rest.starts_with("</function>") {
            break;
        } else {
            return None;
        }
    }
    Some((
        name.trim().to_owned(),
        serde_json::Value::Object(arguments).to_string(),
    ))
}

fn parse_mistral_calls(text: &str) -> Option<Vec<(String, String)>> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    match value {
        serde_json::Value::Array(calls) => calls.iter().map(call_from_json).collect(),
        object => call_from_json(&object).map(|c| vec![c]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` one char at a time (the worst split) and merges
    /// neighbouring pieces of one kind.
    fn parse(text: &str, tools: bool, in_reasoning: bool) -> Vec<Piece> {
        let mut parser = MarkupParser::new(tools, in_reasoning);
        let mut pieces = Vec::new();
        let mut buf = [0u8; 4];
        for c in text.chars() {
            pieces.extend(parser.push(c.encode_utf8(&mut buf)));
        }
        pieces.extend(parser.finish());
        let mut merged: Vec<Piece> = Vec::new();
        for piece in pieces {
            match (merged.last_mut(), piece) {
                (Some(Piece::Content(a)), Piece::Content(b)) => a.push_str(&b),
                (Some(Piece::Reasoning(a)), Piece::Reasoning(b)) => a.push_str(&b),
                (_, piece) => merged.push(piece),
            }
        }
        merged
    }

    fn content(s: &str) -> Piece {
        Piece::Content(s.into())
    }

    fn call(name: &str, args: &str) -> Piece {
        Piece::ToolCall {
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn hermes_tool_calls_never_leak() {
        let text = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"t\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(
            parse(text, true, false),
            vec![
                content("Let me check."),
                call("get_weather", r#"{"city":"Paris"}"#),
                call("t", "{}")
            ]
        );
        // Without tools in the request the markup is plain text.
        assert_eq!(
            parse("a <tool_call>x</tool_call>", false, false),
            vec![content("a <tool_call>x</tool_call>")]
        );
    }

    #[test]
    fn qwen3_coder_xml_calls() {
        let text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
        assert_eq!(
            parse(text, true, false),
            vec![call("get_weather", r#"{"city":"Paris","days":3}"#)]
        );
    }

    #[test]
    fn mistral_calls_run_to_the_end() {
        let text = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}}]";
        assert_eq!(parse(text, true, false), vec![call("a", r#"{"x":1}"#)]);
    }

    #[test]
    fn reasoning_is_separated() {
        assert_eq!(
            parse("<think>\nhmm, 2+2\n</think>\n\nIt is 4.", false, false),
            vec![Piece::Reasoning("hmm, 2+2".into()), content("It is 4.")]
        );
        // The generation prompt opened the block already.
        assert_eq!(
            parse("plan</think>done", false, true),
            vec![Piece::Reasoning("plan".into()), content("done")]
        );
    }

    #[test]
    fn broken_calls_and_partial_markers_come_back_as_text() {
        assert_eq!(
            parse("<tool_call>not json</tool_call>", true, false),
            vec![content("<tool_call>not json</tool_call>")]
        );
        assert_eq!(parse("a <tool", true, false), vec![content("a <tool")]);
        assert_eq!(
            parse("x < y  and  z", true, false),
            vec![content("x < y  and  z")]
        );
    }
}
