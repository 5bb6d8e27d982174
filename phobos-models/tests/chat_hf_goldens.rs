//! Every real chat template in tests/golden/chat/templates/ against Python's
//! jinja2 under Hugging Face's chat-template environment (what
//! `apply_chat_template` renders): tests/golden/chat/hf_renderings.json, made
//! by `python3 scripts/gen_hf_chat_goldens.py`, holds each template's
//! rendering of five conversations (a lone user turn, a multi-turn chat with
//! a system prompt, tool definitions, an assistant tool call with its
//! result, a full tool round trip). Phobos must render each exactly, and
//! fail wherever jinja2 fails (e.g. `raise_exception` for a role the
//! template does not support).

use std::path::{Path, PathBuf};

use phobos_models::chat::{ChatMessage, ChatRequest, ChatTemplate};
use serde_json::Value;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/chat")
}

/// Renderings Phobos cannot match, each with the reason. Every entry must
/// still differ (a fixed one fails the test until it is removed here).
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[];

struct Conversation {
    name: String,
    messages: Vec<ChatMessage>,
    tools: Vec<Value>,
}

fn conversations(golden: &Value) -> Vec<Conversation> {
    golden["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let messages: Vec<ChatMessage> = c["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let message = ChatMessage::from_openai_json(m).unwrap();
                    // The template must see exactly the message jinja2 saw.
                    assert_eq!(&message.to_json(), m, "message shape");
                    message
                })
                .collect();
            Conversation {
                name: c["name"].as_str().unwrap().to_owned(),
                messages,
                tools: c["tools"].as_array().unwrap().clone(),
            }
        })
        .collect()
}

fn first_difference(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

/// The text around byte `at` (on char boundaries).
fn around(text: &str, at: usize) -> String {
    let from = at.saturating_sub(60);
    text.char_indices()
        .skip_while(|(i, _)| *i < from)
        .take_while(|(i, _)| *i < at + 60)
        .map(|(_, c)| c)
        .collect()
}

#[test]
fn real_templates_match_hugging_face_renderings() {
    let raw = std::fs::read_to_string(golden_dir().join("hf_renderings.json")).unwrap();
    let golden: Value = serde_json::from_str(&raw).unwrap();
    let conversations = conversations(&golden);
    assert_eq!(conversations.len(), 5);
    let now = golden["now_unix_seconds"].as_i64().unwrap();
    let templates = golden["templates"].as_array().unwrap();
    assert_eq!(templates.len(), 70, "every real template has goldens");
    let (mut matched, mut failed_alike) = (0, 0);
    let mut failures = Vec::new();
    let mut known_seen = Vec::new();
    for template in templates {
        let file = template["file"].as_str().unwrap();
        let source = std::fs::read_to_string(golden_dir().join("templates").join(file)).unwrap();
        let parsed = ChatTemplate::new(source);
        for conversation in &conversations {
            let expected = &template["renderings"][&conversation.name];
            let request = ChatRequest {
                messages: conversation.messages.clone(),
                tools: conversation.tools.clone(),
                add_generation_prompt: true,
                bos_token: template["bos_token"].as_str().unwrap().to_owned(),
                eos_token: template["eos_token"].as_str().unwrap().to_owned(),
                now_unix_seconds: Some(now),
                ..ChatRequest::default()
            };
            let got = parsed
                .as_ref()
                .map_err(|e| e.to_string())
                .and_then(|t| t.render_verbatim(&request).map_err(|e| e.to_string()));
            let outcome = match (expected["text"].as_str(), &got) {
                (Some(want), Ok(text)) if want == text => Ok(()),
                (Some(want), Ok(text)) => {
                    let at = first_difference(want, text);
                    Err(format!(
                        "rendering differs at byte {at}\n  jinja2 …{:?}\n  phobos …{:?}",
                        around(want, at),
                        around(text, at)
                    ))
                }
                (Some(_), Err(e)) => Err(format!("jinja2 renders, phobos fails: {e}")),
                (None, Err(_)) => Ok(()),
                (None, Ok(text)) => Err(format!(
                    "jinja2 fails ({}), phobos renders {text:?}",
                    expected["error"]
                )),
            };
            let known = KNOWN_DIFFERENCES
                .iter()
                .find(|(f, c, _)| *f == file && *c == conversation.name);
            match (outcome, known) {
                (Ok(()), None) => {
                    if expected["text"].is_string() {
                        matched += 1;
                    } else {
                        failed_alike += 1;
                    }
                }
                (Ok(()), Some(_)) => failures.push(format!(
                    "{file} / {}: listed as a known difference but now matches",
                    conversation.name
                )),
                (Err(_), Some((_, _, why))) => {
                    known_seen.push(format!("{file} / {}: {why}", conversation.name))
                }
                (Err(e), None) => failures.push(format!("{file} / {}: {e}", conversation.name)),
            }
        }
    }
    eprintln!(
        "{matched} renderings match exactly, {failed_alike} fail in both, {} known differences:",
        known_seen.len()
    );
    for known in &known_seen {
        eprintln!("  KNOWN {known}");
    }
    for failure in &failures {
        eprintln!("MISMATCH {failure}");
    }
    assert!(failures.is_empty(), "{} renderings differ", failures.len());
}
