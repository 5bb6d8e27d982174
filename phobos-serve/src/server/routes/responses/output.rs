//! The `output` items of a response and the stream events that build them.
//!
//! Generated text goes through the chat route's markup parser, so reasoning,
//! tool calls and content split the same way in both APIs; each piece opens
//! or extends an item (a `reasoning` item, a `message` with one
//! `output_text` part, a `function_call`). One builder serves both answers:
//! streaming sends its events, non-streaming drops them and keeps the items.

use serde_json::{Value, json};

use crate::server::generate::{TokenLogprobs, new_id};
use crate::server::routes::chat::logprob_entry_json;
use crate::server::text::markup::{MarkupParser, Piece};

/// An item whose text is still arriving.
struct OpenItem {
    reasoning: bool,
    id: String,
    text: String,
    logprobs: Vec<Value>,
}

pub struct OutputBuilder {
    parser: MarkupParser,
    logprobs: bool,
    items: Vec<Value>,
    open: Option<OpenItem>,
    /// Log-probabilities of tokens whose text is still held back.
    pending_logprobs: Vec<Value>,
    pub reasoning_tokens: usize,
}

impl OutputBuilder {
    pub fn new(parser: MarkupParser, logprobs: bool) -> Self {
        Self {
            parser,
            logprobs,
            items: Vec::new(),
            open: None,
            pending_logprobs: Vec::new(),
            reasoning_tokens: 0,
        }
    }

    /// One token's text: the events it gives (none while text is held).
    pub fn push(&mut self, text: &str, entries: Vec<TokenLogprobs>) -> Vec<Value> {
        if self.logprobs {
            self.pending_logprobs
                .extend(entries.iter().map(logprob_entry_json));
        }
        let pieces = self.parser.push(text);
        if self.parser.in_reasoning() {
            self.reasoning_tokens += 1;
        }
        let mut events = Vec::new();
        for piece in pieces {
            self.piece(piece, &mut events);
        }
        events
    }

    /// The end of the generation: held text, then every item closed.
    /// `incomplete`: it stopped at the token limit, so the last item did
    /// not finish.
    pub fn finish(&mut self, incomplete: bool) -> Vec<Value> {
        let mut events = Vec::new();
        for piece in self.parser.finish() {
            self.piece(piece, &mut events);
        }
        if self.open.is_none() && self.items.is_empty() {
            // An empty answer is still a message, as the chat API's "".
            self.open_item(false, &mut events);
        }
        self.close(incomplete, &mut events);
        events
    }

    /// The finished items, in order.
    pub fn items(&self) -> &[Value] {
        &self.items
    }

    fn piece(&mut self, piece: Piece, events: &mut Vec<Value>) {
        match piece {
            Piece::Content(text) => {
                if self.open.as_ref().is_none_or(|open| open.reasoning) {
                    self.close(false, events);
                    self.open_item(false, events);
                }
                let logprobs = std::mem::take(&mut self.pending_logprobs);
                let output_index = self.items.len();
                if let Some(open) = self.open.as_mut() {
                    open.text.push_str(&text);
                    open.logprobs.extend(logprobs.iter().cloned());
                    events.push(json!({
                        "type": "response.output_text.delta",
                        "item_id": open.id,
                        "output_index": output_index,
                        "content_index": 0,
                        "delta": text,
                        "logprobs": logprobs,
                    }));
                }
            }
            Piece::Reasoning(text) => {
                // Reasoning tokens have no place for log-probabilities.
                self.pending_logprobs.clear();
                if self.open.as_ref().is_none_or(|open| !open.reasoning) {
                    self.close(false, events);
                    self.open_item(true, events);
                }
                let output_index = self.items.len();
                if let Some(open) = self.open.as_mut() {
                    open.text.push_str(&text);
                    events.push(json!({
                        "type": "response.reasoning_text.delta",
                        "item_id": open.id,
                        "output_index": output_index,
                        "content_index": 0,
                        "delta": text,
                    }));
                }
            }
            Piece::ToolCall { name, arguments } => {
                self.pending_logprobs.clear();
                self.close(false, events);
                let output_index = self.items.len();
                let id = new_id("fc_");
                let call_id = new_id("call_");
                let item = |arguments: &str, status: &str| {
                    json!({
                        "type": "function_call",
                        "id": id,
                        "call_id": call_id,
                        "name": name,
                        "arguments": arguments,
                        "status": status,
                    })
                };
                events.push(json!({
                    "type": "response.output_item.added",
                    "output_index": output_index,
                    "item": item("", "in_progress"),
                }));
                events.push(json!({
                    "type": "response.function_call_arguments.delta",
                    "item_id": id,
                    "output_index": output_index,
                    "delta": arguments,
                }));
                events.push(json!({
                    "type": "response.function_call_arguments.done",
                    "item_id": id,
                    "output_index": output_index,
                    "name": name,
                    "arguments": arguments,
                }));
                let done = item(&arguments, "completed");
                events.push(json!({
                    "type": "response.output_item.done",
                    "output_index": output_index,
                    "item": done,
                }));
                self.items.push(done);
            }
        }
    }

    fn open_item(&mut self, reasoning: bool, events: &mut Vec<Value>) {
        let id = new_id(if reasoning { "rs_" } else { "msg_" });
        let output_index = self.items.len();
        let open = OpenItem {
            reasoning,
            id,
            text: String::new(),
            logprobs: Vec::new(),
        };
        events.push(json!({
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": item_json(&open, "in_progress", false),
        }));
        events.push(json!({
            "type": "response.content_part.added",
            "item_id": open.id,
            "output_index": output_index,
            "content_index": 0,
            "part": part_json(&open),
        }));
        self.open = Some(open);
    }

    fn close(&mut self, incomplete: bool, events: &mut Vec<Value>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let output_index = self.items.len();
        if open.reasoning {
            events.push(json!({
                "type": "response.reasoning_text.done",
                "item_id": open.id,
                "output_index": output_index,
                "content_index": 0,
                "text": open.text,
            }));
        } else {
            events.push(json!({
                "type": "response.output_text.done",
                "item_id": open.id,
                "output_index": output_index,
                "content_index": 0,
                "text": open.text,
                "logprobs": open.logprobs,
            }));
        }
        events.push(json!({
            "type": "response.content_part.done",
            "item_id": open.id,
            "output_index": output_index,
            "content_index": 0,
            "part": part_json(&open),
        }));
        let item = item_json(
            &open,
            if incomplete {
                "incomplete"
            } else {
                "completed"
            },
            true,
        );
        events.push(json!({
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": item,
        }));
        self.items.push(item);
    }
}

/// A message or reasoning item; `with_content` false gives the empty
/// content list an `output_item.added` event carries.
fn item_json(open: &OpenItem, status: &str, with_content: bool) -> Value {
    let content = if with_content {
        vec![part_json(open)]
    } else {
        Vec::new()
    };
    if open.reasoning {
        json!({
            "type": "reasoning",
            "id": open.id,
            "summary": [],
            "content": content,
            "status": status,
        })
    } else {
        json!({
            "type": "message",
            "id": open.id,
            "status": status,
            "role": "assistant",
            "content": content,
        })
    }
}

fn part_json(open: &OpenItem) -> Value {
    if open.reasoning {
        json!({"type": "reasoning_text", "text": open.text})
    } else {
        json!({
            "type": "output_text",
            "text": open.text,
            "annotations": [],
            "logprobs": open.logprobs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().filter_map(|e| e["type"].as_str()).collect()
    }

    #[test]
    fn reasoning_then_text_are_two_items_built_by_their_events() {
        let mut builder = OutputBuilder::new(MarkupParser::new(false, false), false);
        let mut events = Vec::new();
        for token in ["<think>", "\nhmm", "\n</think>\n\n", "The ", "answer."] {
            events.extend(builder.push(token, Vec::new()));
        }
        events.extend(builder.finish(false));
        let items = builder.items();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["type"], "reasoning");
        assert_eq!(items[0]["content"][0]["text"], "hmm");
        assert_eq!(items[1]["type"], "message");
        assert_eq!(items[1]["status"], "completed");
        assert_eq!(items[1]["content"][0]["text"], "The answer.");
        assert_eq!(
            types(&events)
                .into_iter()
                .filter(|t| !t.ends_with(".delta"))
                .collect::<Vec<_>>(),
            [
                "response.output_item.added",
                "response.content_part.added",
                "response.reasoning_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
            ]
        );
        // The deltas of each item rebuild its text, at its output index.
        let rebuilt = |kind: &str, index: u64| -> String {
            events
                .iter()
                .filter(|e| e["type"] == kind && e["output_index"] == index)
                .filter_map(|e| e["delta"].as_str())
                .collect()
        };
        assert_eq!(rebuilt("response.reasoning_text.delta", 0), "hmm");
        assert_eq!(rebuilt("response.output_text.delta", 1), "The answer.");
        assert!(builder.reasoning_tokens >= 2);
    }

    #[test]
    fn a_tool_call_is_a_function_call_item_with_whole_arguments() {
        let mut builder = OutputBuilder::new(MarkupParser::new(true, false), false);
        let mut events = builder.push(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            Vec::new(),
        );
        events.extend(builder.finish(false));
        let items = builder.items();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0]["type"], "function_call");
        assert_eq!(items[0]["name"], "get_weather");
        let arguments: Value =
            serde_json::from_str(items[0]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments, json!({"city": "Paris"}));
        assert!(items[0]["call_id"].as_str().unwrap().starts_with("call_"));
        let added = &events[0];
        assert_eq!(added["type"], "response.output_item.added");
        assert_eq!(added["item"]["id"], items[0]["id"]);
        assert_eq!(added["item"]["arguments"], "");
    }

    #[test]
    fn logprobs_ride_on_text_and_an_empty_answer_is_an_empty_message() {
        let entry = TokenLogprobs {
            token: "Hi".into(),
            bytes: b"Hi".to_vec(),
            logprob: -0.5,
            top: vec![("Hi".into(), b"Hi".to_vec(), -0.5)],
        };
        let mut builder = OutputBuilder::new(MarkupParser::new(false, false), true);
        let events = builder.push("Hi", vec![entry]);
        let delta = events
            .iter()
            .find(|e| e["type"] == "response.output_text.delta")
            .unwrap();
        assert_eq!(delta["logprobs"][0]["logprob"], -0.5);
        builder.finish(true);
        assert_eq!(builder.items()[0]["status"], "incomplete");
        assert_eq!(
            builder.items()[0]["content"][0]["logprobs"][0]["token"],
            "Hi"
        );
        let mut empty = OutputBuilder::new(MarkupParser::new(false, false), false);
        empty.finish(false);
        assert_eq!(empty.items().len(), 1);
        assert_eq!(empty.items()[0]["content"][0]["text"], "");
    }
}
