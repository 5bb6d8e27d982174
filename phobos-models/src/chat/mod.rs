//! Chat templates: a model's own `tokenizer.chat_template` (Jinja) rendered
//! with minijinja, with the functions and filters real templates use and the
//! Hugging Face environment's settings (trim_blocks, lstrip_blocks, Python
//! string methods, `tojson` as `json.dumps`).
//!
//! Templates that do not know some message kinds get the same fallbacks
//! llama.cpp applies: a system message is folded into the first user
//! message, tool calls and tool results are written as JSON text.
//!
//! Templates come from model files and are untrusted: every render runs
//! under [`ChatLimits`] (see limits.rs, bounded.rs and vm.rs), and a template
//! that runs away stops with [`ChatTemplateError::Limit`].

mod bounded;
mod json;
mod limits;
mod polyfill;
pub use polyfill::Capabilities;
mod pystr;
mod time;
mod vm;

use std::sync::Arc;

pub use limits::{ChatLimit, ChatLimits};
pub use time::format_unix_time;

use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior, Value};
use serde::Serialize;

use crate::gguf::Gguf;

#[derive(Debug, thiserror::Error)]
pub enum ChatTemplateError {
    #[error("chat template line {line}: {message}\n  {source_line}")]
    Template {
        line: usize,
        source_line: String,
        message: String,
    },
    #[error("chat template{}: {message} ({limit} limit)", at_line(.line))]
    Limit {
        limit: ChatLimit,
        line: Option<usize>,
        message: String,
    },
    #[error("chat template: {0}")]
    Other(String),
    #[error("reading the chat template: {0}")]
    Gguf(#[from] crate::gguf::GgufError),
}

fn at_line(line: &Option<usize>) -> String {
    line.map(|l| format!(" line {l}")).unwrap_or_default()
}

/// One tool call made by the assistant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON (an object for well-formed calls).
    pub arguments: serde_json::Value,
}

/// One conversation turn. `role` is "system", "user", "assistant" or "tool".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    /// For role "tool": which call this answers.
    pub tool_call_id: Option<String>,
    /// For role "tool": the tool's name.
    pub name: Option<String>,
    pub reasoning_content: Option<String>,
}

impl ChatMessage {
    pub fn new(role: &str, content: &str) -> Self {
        Self {
            role: role.to_owned(),
            content: content.to_owned(),
            ..Self::default()
        }
    }

    /// Reads one message in OpenAI chat format. `content` may be a string,
    /// null, or a list of text parts (joined; an image, audio or file part
    /// is an error, never silently dropped); tool-call arguments given as a
    /// JSON string are parsed.
    pub fn from_openai_json(value: &serde_json::Value) -> Result<Self, ChatTemplateError> {
        let field = |name: &str| value.get(name).and_then(serde_json::Value::as_str);
        let role = field("role")
            .ok_or_else(|| ChatTemplateError::Other("message without a string 'role'".into()))?;
        let content = match value.get("content") {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(serde_json::Value::Array(parts)) => parts
                .iter()
                .map(text_part)
                .collect::<Result<Vec<_>, _>>()?
                .join(""),
            Some(other) => {
                return Err(ChatTemplateError::Other(format!(
                    "message content must be a string or a list of parts, not {other}"
                )));
            }
        };
        let mut message = ChatMessage::new(role, &content);
        if let Some(calls) = value
            .get("tool_calls")
            .and_then(serde_json::Value::as_array)
        {
            for call in calls {
                let function = call.get("function").unwrap_or(call);
                let name = function
                    .get("name")
                    .and_then(serde_json::Value::as_str)
                    .ok_or_else(|| {
                        ChatTemplateError::Other("tool call without a function name".into())
                    })?;
                let arguments = match function.get("arguments") {
                    Some(serde_json::Value::String(text)) => serde_json::from_str(text)
                        .unwrap_or_else(|_| serde_json::Value::String(text.clone())),
                    Some(other) => other.clone(),
                    None => serde_json::json!({}),
                };
                message.tool_calls.push(ToolCall {
                    id: call
                        .get("id")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("")
                        .into(),
                    name: name.into(),
                    arguments,
                });
            }
        }
        message.tool_call_id = field("tool_call_id").map(str::to_owned);
        message.name = field("name").map(str::to_owned);
        message.reasoning_content = field("reasoning_content").map(str::to_owned);
        Ok(message)
    }

    /// The message as templates see it (OpenAI chat format).
    pub fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        map.insert("role".into(), self.role.clone().into());
        map.insert("content".into(), self.content.clone().into());
        if !self.tool_calls.is_empty() {
            let calls = self
                .tool_calls
                .iter()
                .map(|call| {
                    serde_json::json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect::<Vec<_>>();
            map.insert("tool_calls".into(), calls.into());
        }
        if let Some(id) = &self.tool_call_id {
            map.insert("tool_call_id".into(), id.clone().into());
        }
        if let Some(name) = &self.name {
            map.insert("name".into(), name.clone().into());
        }
        if let Some(reasoning) = &self.reasoning_content {
            map.insert("reasoning_content".into(), reasoning.clone().into());
        }
        serde_json::Value::Object(map)
    }
}

/// What to render.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    /// OpenAI-style tool definitions (`{"type": "function", "function": {...}}`).
    pub tools: Vec<serde_json::Value>,
    pub add_generation_prompt: bool,
    pub bos_token: String,
    pub eos_token: String,
    /// Extra template variables (e.g. `enable_thinking`).
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Unix time for `strftime_now`; the clock when `None`.
    pub now_unix_seconds: Option<i64>,
}

/// A parsed chat template with the capabilities probed from it.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    source: String,
    capabilities: Capabilities,
    limits: ChatLimits,
}

impl ChatTemplate {
    /// Parses `source` and probes what it can express, under the default
    /// limits. A syntax error quotes the offending line; a template that
    /// runs away while probing fails here with [`ChatTemplateError::Limit`].
    pub fn new(source: impl Into<String>) -> Result<Self, ChatTemplateError> {
        Self::with_limits(source, ChatLimits::default())
    }

    /// [`ChatTemplate::new`] with the given limits for every render.
    pub fn with_limits(
        source: impl Into<String>,
        limits: ChatLimits,
    ) -> Result<Self, ChatTemplateError> {
        let source = without_generation_tags(&source.into());
        vm::compile(&source).map_err(|e| template_error(&source, &e, None))?;
        let mut template = Self {
            source,
            capabilities: Capabilities::all(),
            limits,
        };
        template.capabilities = polyfill::probe(&template)?;
        Ok(template)
    }

    /// The template stored in a GGUF file, if it has one.
    pub fn from_gguf(gguf: &Gguf) -> Result<Option<Self>, ChatTemplateError> {
        if !gguf.contains_key("tokenizer.chat_template") {
            return Ok(None);
        }
        Self::new(gguf.get_str("tokenizer.chat_template")?).map(Some)
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// What the template renders itself (system messages, tool
    /// definitions, assistant tool calls, tool results); for the rest
    /// [`ChatTemplate::render`] rewrites the request.
    pub fn supports(&self) -> Capabilities {
        self.capabilities
    }

    /// Renders the conversation, adapting messages the template cannot
    /// express.
    pub fn render(&self, request: &ChatRequest) -> Result<String, ChatTemplateError> {
        let messages =
            polyfill::adapt_messages(&request.messages, &request.tools, &self.capabilities);
        // Tools the template does not render are in the messages now; the
        // template sees none (some refuse tools they cannot format).
        let tools: &[serde_json::Value] = if self.capabilities.tools {
            &request.tools
        } else {
            &[]
        };
        self.render_raw(request, &messages, tools)
    }

    /// Renders the conversation exactly as given, as Hugging Face's
    /// `apply_chat_template` does: a template that refuses a message (e.g.
    /// `raise_exception` for a system role) fails.
    pub fn render_verbatim(&self, request: &ChatRequest) -> Result<String, ChatTemplateError> {
        let messages: Vec<serde_json::Value> =
            request.messages.iter().map(ChatMessage::to_json).collect();
        self.render_raw(request, &messages, &request.tools)
    }

    /// Renders exactly the given message JSON and tools (`request.tools`
    /// is not read), with no adaptation.
    pub(crate) fn render_raw(
        &self,
        request: &ChatRequest,
        messages: &[serde_json::Value],
        tools: &[serde_json::Value],
    ) -> Result<String, ChatTemplateError> {
        let mut context = request.extra.clone();
        context.insert("messages".into(), messages.to_vec().into());
        // As apply_chat_template: `tools` and `documents` are none, not
        // undefined, when absent.
        let tools_value = if tools.is_empty() {
            serde_json::Value::Null
        } else {
            tools.to_vec().into()
        };
        context.insert("tools".into(), tools_value);
        context
            .entry("documents")
            .or_insert(serde_json::Value::Null);
        context.insert(
            "add_generation_prompt".into(),
            request.add_generation_prompt.into(),
        );
        context.insert("bos_token".into(), request.bos_token.clone().into());
        // Variables llama.cpp provides for templates that expect them
        // (firefunction-v2 reads `functions` and `datetime`).
        if !context.contains_key("functions") {
            let functions = if tools.is_empty() {
                String::new()
            } else {
                serde_json::to_string_pretty(tools).unwrap_or_default()
            };
            context.insert("functions".into(), functions.into());
        }
        if !context.contains_key("datetime") {
            let now = request.now_unix_seconds.unwrap_or_else(unix_now);
            context.insert(
                "datetime".into(),
                format_unix_time(now, "%b %d %Y %H:%M:%S GMT").into(),
            );
        }
        context.insert("eos_token".into(), request.eos_token.clone().into());
        let context = serde_json::Value::Object(context);
        let request_bytes = serde_json::to_string(&context).map_or(0, |s| s.len() as u64);
        let budget = Arc::new(limits::Budget::new(&self.limits, request_bytes));
        let env = environment(&self.limits, &budget, request.now_unix_seconds);
        let program =
            vm::compile(&self.source).map_err(|e| template_error(&self.source, &e, None))?;
        vm::run(&env, &program, Value::from_serialize(&context))
            .map_err(|e| template_error(&self.source, &e, Some(&budget)))
    }
}

fn environment(
    limits: &ChatLimits,
    budget: &Arc<limits::Budget>,
    now_unix_seconds: Option<i64>,
) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_fuel(Some(limits.fuel));
    env.set_recursion_limit(limits.recursion);
    env.add_function(
        "raise_exception",
        |message: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, message))
        },
    );
    env.add_function("strftime_now", move |pattern: String| -> String {
        let now = now_unix_seconds.unwrap_or_else(unix_now);
        format_unix_time(now, &pattern)
    });
    let b = budget.clone();
    env.add_filter(
        "tojson",
        move |value: Value, kwargs: minijinja::value::Kwargs| {
            json::tojson_filter(&b, value, kwargs)
        },
    );
    bounded::install(&mut env, budget);
    env
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Hugging Face's `{% generation %}...{% endgeneration %}` (which marks
/// assistant text for training masks and renders its body unchanged) becomes
/// an always-true `if`, keeping each tag's whitespace control.
fn without_generation_tags(source: &str) -> String {
    let mut out = source.to_owned();
    for (tag, replacement) in [("endgeneration", "endif"), ("generation", "if true")] {
        for (open, close) in [("{%-", "-%}"), ("{%-", "%}"), ("{%", "-%}"), ("{%", "%}")] {
            for inner in [
                format!(" {tag} "),
                format!("{tag} "),
                format!(" {tag}"),
                tag.to_owned(),
            ] {
                out = out.replace(
                    &format!("{open}{inner}{close}"),
                    &format!("{open} {replacement} {close}"),
                );
            }
        }
    }
    out
}

/// An error with the template line it points at; a typed limit error where
/// the render hit one of its limits.
fn template_error(
    source: &str,
    error: &Error,
    budget: Option<&limits::Budget>,
) -> ChatTemplateError {
    let mut message = error.kind().to_string();
    if let Some(detail) = error.detail() {
        message = format!("{message}: {detail}");
    }
    if let Some(limit) = budget.and_then(|b| limits::classify(b, error)) {
        return ChatTemplateError::Limit {
            limit,
            line: error.line(),
            message,
        };
    }
    match error.line() {
        Some(line) => ChatTemplateError::Template {
            line,
            source_line: source
                .lines()
                .nth(line.saturating_sub(1))
                .unwrap_or_default()
                .trim()
                .to_owned(),
            message,
        },
        None => ChatTemplateError::Other(message),
    }
}

/// The text of one content part: `{"type": "text", "text": ...}` (the type
/// may be left out). Other parts (images, audio, files) need a model that
/// reads them, which these text-only models are not.
fn text_part(part: &serde_json::Value) -> Result<&str, ChatTemplateError> {
    let kind = part.get("type").and_then(serde_json::Value::as_str);
    let text = part.get("text").and_then(serde_json::Value::as_str);
    match (kind, text) {
        (None | Some("text" | "input_text"), Some(text)) => Ok(text),
        (Some(other), _) if other != "text" && other != "input_text" => {
            Err(ChatTemplateError::Other(format!(
                "content parts of type '{other}' are not supported: this model reads text only; \
                 send {{\"type\": \"text\", \"text\": ...}} parts"
            )))
        }
        _ => Err(ChatTemplateError::Other(format!(
            "a content part must be {{\"type\": \"text\", \"text\": STRING}}, not {part}"
        ))),
    }
}
