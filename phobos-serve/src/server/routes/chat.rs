//! POST /v1/chat/completions.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use phobos_models::chat::{ChatMessage, ChatRequest};
use serde_json::{Value, json};

use super::body::JsonBody;
use super::respond::{Choice, ChoiceFormat, Envelope, Fields as RespondFields, fields, respond};
use super::tool_choice::ToolChoice;
use crate::server::backend::ModelInfo;
use crate::server::error::ApiError;
use crate::server::generate::{Generation, TokenLogprobs, new_id};
use crate::server::json_format::JsonFormat;
use crate::server::params::{CommonParams, Fields, SamplingDefaults, common_params};
use crate::server::state::AppState;
use crate::server::text::markup::{MarkupParser, Piece};

/// The rendered prompt and how to read the answer.
pub struct ChatPrompt {
    pub text: String,
    pub tools: bool,
    /// The generation prompt already opened a reasoning block.
    pub in_reasoning: bool,
    /// The tool call `tool_choice` demands, as an output constraint.
    pub forced_call: Option<JsonFormat>,
}

/// Renders `messages` (and `tools`) through the model's own chat template.
pub fn render_chat(model: &dyn ModelInfo, fields: &Fields<'_>) -> Result<ChatPrompt, ApiError> {
    let raw_messages = fields.array("messages")?.ok_or_else(|| {
        ApiError::invalid(
            "messages",
            "'messages' is required: a list of {role, content} objects",
        )
    })?;
    if raw_messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "'messages' must not be empty",
        ));
    }
    let mut messages = Vec::with_capacity(raw_messages.len());
    for (index, raw) in raw_messages.iter().enumerate() {
        let invalid = |what: String| ApiError::invalid(&format!("messages[{index}]"), what);
        if !raw.is_object() {
            return Err(invalid(format!(
                "messages[{index}] must be an object with 'role' and 'content'"
            )));
        }
        let mut message = ChatMessage::from_openai_json(raw)
            .map_err(|e| invalid(format!("messages[{index}]: {e}")))?;
        message.role = match message.role.as_str() {
            "developer" => "system".into(),
            "system" | "user" | "assistant" | "tool" => message.role,
            other => {
                return Err(invalid(format!(
                    "messages[{index}].role must be system, developer, user, assistant or tool, not '{other}'"
                )));
            }
        };
        messages.push(message);
    }
    let choice = ToolChoice::parse(fields.get("tool_choice"))?;
    let choice_none = choice == ToolChoice::None;
    let mut tools = Vec::new();
    if let Some(items) = fields.array("tools")? {
        let mut names: Vec<&str> = Vec::with_capacity(items.len());
        for (index, tool) in items.iter().enumerate() {
            let name = check_tool(index, tool)?;
            if names.contains(&name) {
                return Err(ApiError::invalid(
                    &format!("tools[{index}].function.name"),
                    format!(
                        "tools[{index}]: a function named '{name}' is already defined; tool names must be unique"
                    ),
                ));
            }
            names.push(name);
            if !choice_none {
                tools.push(tool.clone());
            }
        }
    }
    let mut extra = serde_json::Map::new();
    if let Some(kwargs) = fields.object("chat_template_kwargs")? {
        extra.extend(kwargs.0.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let tokenizer = model.tokenizer();
    let token_text = |id: Option<u32>| {
        id.and_then(|id| tokenizer.token_text(id))
            .unwrap_or("")
            .to_owned()
    };
    let request = ChatRequest {
        messages,
        tools: tools.clone(),
        add_generation_prompt: true,
        bos_token: token_text(tokenizer.bos_id()),
        eos_token: token_text(tokenizer.eos_id()),
        extra,
        now_unix_seconds: None,
    };
    let text = model.chat_template().render(&request).map_err(|e| {
        ApiError::bad_request(format!(
            "the chat template could not render these messages: {e}"
        ))
    })?;
    let in_reasoning = text.trim_end().ends_with("<think>");
    let forced_call = choice.forced_call(&tools, in_reasoning)?;
    Ok(ChatPrompt {
        text,
        tools: !tools.is_empty(),
        in_reasoning,
        forced_call,
    })
}

/// Checks one entry of `tools` as OpenAI does and gives its function's
/// name: a `function` tool whose name is 1-64 letters, digits, `_` or `-`,
/// with an optional string `description`, object `parameters` (a JSON
/// schema) and boolean `strict`.
fn check_tool(index: usize, tool: &Value) -> Result<&str, ApiError> {
    let shape = || {
        ApiError::invalid(
            &format!("tools[{index}]"),
            format!(
                "tools[{index}] must be {{\"type\": \"function\", \"function\": {{\"name\": ..., \"parameters\": ...}}}}"
            ),
        )
    };
    let function = match (
        tool.get("type").and_then(Value::as_str),
        tool.get("function"),
    ) {
        (Some("function"), Some(Value::Object(function))) => function,
        _ => return Err(shape()),
    };
    let field = |name: &str| format!("tools[{index}].function.{name}");
    let Some(name) = function.get("name").and_then(Value::as_str) else {
        return Err(shape());
    };
    let name_is_valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_is_valid {
        return Err(ApiError::invalid(
            &field("name"),
            format!(
                "{}: {name:?} is not a function name (1 to 64 letters, digits, '_' or '-')",
                field("name")
            ),
        ));
    }
    let expect = |key: &str, fits: fn(&Value) -> bool, what: &str| match function.get(key) {
        Some(value) if !value.is_null() && !fits(value) => Err(ApiError::invalid(
            &field(key),
            format!("{} must be {what}", field(key)),
        )),
        _ => Ok(()),
    };
    expect("description", Value::is_string, "a string")?;
    expect("parameters", Value::is_object, "an object (a JSON schema)")?;
    expect("strict", Value::is_boolean, "true or false")?;
    Ok(name)
}

/// Prompt text to ids: BOS as the model wants it unless the template wrote
/// it already; special-token text is parsed.
pub fn tokenize_prompt(model: &dyn ModelInfo, text: &str) -> Result<Vec<u32>, ApiError> {
    let tokenizer = model.tokenizer();
    let bos_text = tokenizer
        .bos_id()
        .and_then(|id| tokenizer.token_text(id))
        .unwrap_or("");
    let add_bos = tokenizer.adds_bos() && (bos_text.is_empty() || !text.starts_with(bos_text));
    let mut ids = tokenizer
        .encode(text, false, true)
        .map_err(|e| ApiError::bad_request(format!("the prompt could not be tokenized: {e}")))?;
    if add_bos && let Some(bos) = tokenizer.bos_id() {
        ids.insert(0, bos);
    }
    Ok(ids)
}

/// A chat body made ready to generate: its settings, its rendered prompt
/// and the prompt's ids. Shared by the chat and Responses routes (the latter
/// translates its body to a chat body first).
pub struct PreparedChat {
    pub params: CommonParams,
    pub prompt: ChatPrompt,
    pub ids: Vec<u32>,
}

pub fn prepare_chat(
    model: &dyn ModelInfo,
    defaults: &SamplingDefaults,
    fields: &Fields<'_>,
) -> Result<PreparedChat, ApiError> {
    let mut params = common_params(
        fields,
        defaults,
        model.model_id(),
        model.tokenizer().n_tokens(),
    )?;
    params.sampling.logprobs = fields.boolean("logprobs")?.unwrap_or(false);
    if let Some(top) = fields.integer("top_logprobs", 0, 20)? {
        if !params.sampling.logprobs {
            return Err(ApiError::invalid(
                "top_logprobs",
                "'top_logprobs' needs 'logprobs': true",
            ));
        }
        params.sampling.top_logprobs = top as u32;
    }
    let prompt = render_chat(model, fields)?;
    if let Some(call) = prompt.forced_call.clone() {
        params.sampling.json_format = Some(call);
    }
    let ids = tokenize_prompt(model, &prompt.text)?;
    Ok(PreparedChat {
        params,
        prompt,
        ids,
    })
}

pub async fn chat_completions(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let loaded = state.loaded()?;
    let model = loaded.model.clone();
    let PreparedChat {
        params,
        prompt,
        ids,
    } = {
        let (model, defaults) = (model.clone(), state.defaults.clone());
        super::off_runtime(move || prepare_chat(&*model, &defaults, &Fields(&body))).await?
    };
    loaded.scheduler.check_fits(params.n_choices)?;
    let mut choices = Vec::with_capacity(params.n_choices);
    for sampling in params.choice_sampling() {
        let format = ChatFormat::new(
            MarkupParser::new(prompt.tools, prompt.in_reasoning),
            params.sampling.logprobs,
        );
        let generation = Generation::start(
            "messages",
            model.clone(),
            &loaded.scheduler,
            ids.clone(),
            sampling,
            params.max_tokens,
            params.stop.clone(),
            params.ignore_eos,
        )?;
        choices.push(Choice { generation, format });
    }
    respond(
        Envelope::chat(model.model_id()).with_choices_per_prompt(params.n_choices),
        choices,
        params.stream,
        params.include_usage,
    )
    .await
}

/// A chat choice: the answer split into content, reasoning and tool calls,
/// as `delta`s when streaming and one `message` when not.
pub struct ChatFormat {
    parser: MarkupParser,
    logprobs: bool,
    /// Tool calls so far (streaming: the next call's index).
    tool_calls: Vec<Value>,
    content: String,
    reasoning: String,
    entries: Vec<TokenLogprobs>,
}

impl ChatFormat {
    pub fn new(parser: MarkupParser, logprobs: bool) -> Self {
        Self {
            parser,
            logprobs,
            tool_calls: Vec::new(),
            content: String::new(),
            reasoning: String::new(),
            entries: Vec::new(),
        }
    }

    /// One piece as deltas; the first carries `logprobs`.
    fn piece_chunks(&mut self, piece: Piece, logprobs: Value, out: &mut Vec<RespondFields>) {
        match piece {
            Piece::Content(text) => out.push(fields([
                ("delta", json!({"content": text})),
                ("logprobs", logprobs),
            ])),
            Piece::Reasoning(text) => out.push(fields([
                ("delta", json!({"reasoning_content": text})),
                ("logprobs", logprobs),
            ])),
            Piece::ToolCall { name, arguments } => {
                // As OpenAI streams calls: index, id, type and name first
                // with empty arguments, then the arguments in fragments.
                let index = self.tool_calls.len();
                let head = tool_call_json(index, &name, "");
                self.tool_calls.push(head.clone());
                out.push(fields([
                    ("delta", json!({"tool_calls": [head]})),
                    ("logprobs", logprobs),
                ]));
                let chars: Vec<char> = arguments.chars().collect();
                for fragment in chars.chunks(16) {
                    let fragment: String = fragment.iter().collect();
                    out.push(fields([(
                        "delta",
                        json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                    )]));
                }
            }
        }
    }

    fn collect(&mut self, pieces: Vec<Piece>) {
        for piece in pieces {
            match piece {
                Piece::Content(text) => self.content.push_str(&text),
                Piece::Reasoning(text) => self.reasoning.push_str(&text),
                Piece::ToolCall { name, arguments } => {
                    let mut call = tool_call_json(self.tool_calls.len(), &name, &arguments);
                    if let Some(map) = call.as_object_mut() {
                        map.remove("index");
                    }
                    self.tool_calls.push(call);
                }
            }
        }
    }
}

impl ChoiceFormat for ChatFormat {
    fn opening(&mut self) -> Vec<RespondFields> {
        vec![fields([(
            "delta",
            json!({"role": "assistant", "content": ""}),
        )])]
    }

    fn stream_text(&mut self, text: &str, entries: Vec<TokenLogprobs>) -> Vec<RespondFields> {
        let pieces = self.parser.push(text);
        let mut logprobs = if self.logprobs && !entries.is_empty() {
            logprobs_json(&entries)
        } else {
            Value::Null
        };
        let mut out = Vec::new();
        if pieces.is_empty() && !logprobs.is_null() {
            // Text held back (a possible stop string or marker) still has
            // its tokens' log-probabilities reported, with empty content.
            out.push(fields([
                ("delta", json!({"content": ""})),
                ("logprobs", logprobs),
            ]));
            return out;
        }
        for piece in pieces {
            self.piece_chunks(piece, std::mem::take(&mut logprobs), &mut out);
        }
        out
    }

    fn stream_end(&mut self) -> Vec<RespondFields> {
        let mut out = Vec::new();
        for piece in self.parser.finish() {
            self.piece_chunks(piece, Value::Null, &mut out);
        }
        out
    }

    fn finish_fields(&self) -> RespondFields {
        fields([("delta", json!({}))])
    }

    fn absorb(&mut self, text: &str, entries: Vec<TokenLogprobs>) {
        self.entries.extend(entries);
        let pieces = self.parser.push(text);
        self.collect(pieces);
    }

    fn complete(&mut self) -> RespondFields {
        let pieces = self.parser.finish();
        self.collect(pieces);
        let content = std::mem::take(&mut self.content);
        let mut message = json!({
            "role": "assistant",
            "content": if content.is_empty() && !self.tool_calls.is_empty() { Value::Null } else { content.into() },
        });
        if !self.reasoning.is_empty() {
            message["reasoning_content"] = std::mem::take(&mut self.reasoning).into();
        }
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = self.tool_calls.clone().into();
        }
        let logprobs = if self.logprobs {
            logprobs_json(&self.entries)
        } else {
            Value::Null
        };
        fields([("message", message), ("logprobs", logprobs)])
    }

    fn called_tools(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

fn logprobs_json(entries: &[TokenLogprobs]) -> Value {
    let content: Vec<Value> = entries.iter().map(logprob_entry_json).collect();
    json!({"content": content})
}

/// One token's log-probabilities in OpenAI's shape (both chat and the
/// Responses API's text parts).
pub fn logprob_entry_json(entry: &TokenLogprobs) -> Value {
    json!({
        "token": entry.token,
        "logprob": entry.logprob,
        "bytes": entry.bytes,
        "top_logprobs": entry.top.iter().map(|(token, bytes, logprob)| json!({
            "token": token, "logprob": logprob, "bytes": bytes,
        })).collect::<Vec<_>>(),
    })
}

fn tool_call_json(index: usize, name: &str, arguments: &str) -> Value {
    json!({
        "index": index,
        "id": new_id("call_"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_checked_as_openai_does() {
        let tool = |function: Value| json!({"type": "function", "function": function});
        let good = tool(json!({"name": "get_weather-2", "description": "d",
                               "parameters": {"type": "object"}, "strict": true}));
        assert_eq!(check_tool(0, &good).ok(), Some("get_weather-2"));
        assert_eq!(check_tool(0, &tool(json!({"name": "f"}))).ok(), Some("f"));
        let cases = [
            (json!({"type": "function"}), "tools[3]"),
            (
                json!({"type": "web_search", "function": {"name": "f"}}),
                "tools[3]",
            ),
            (tool(json!({"parameters": {}})), "tools[3]"),
            (tool(json!({"name": ""})), "tools[3].function.name"),
            (
                tool(json!({"name": "get weather"})),
                "tools[3].function.name",
            ),
            (
                tool(json!({"name": "x".repeat(65)})),
                "tools[3].function.name",
            ),
            (
                tool(json!({"name": "f", "parameters": "{}"})),
                "tools[3].function.parameters",
            ),
            (
                tool(json!({"name": "f", "description": 7})),
                "tools[3].function.description",
            ),
            (
                tool(json!({"name": "f", "strict": "yes"})),
                "tools[3].function.strict",
            ),
        ];
        for (value, param) in cases {
            let error = check_tool(3, &value).err();
            assert_eq!(
                error.as_ref().and_then(|e| e.param.as_deref()),
                Some(param),
                "{value}: {error:?}"
            );
        }
    }

    fn deltas(chunks: &[RespondFields]) -> Vec<Value> {
        chunks.iter().map(|c| c["delta"].clone()).collect()
    }

    #[test]
    fn a_streamed_tool_call_sends_index_id_and_name_then_argument_fragments() {
        let mut format = ChatFormat::new(MarkupParser::new(true, false), false);
        assert_eq!(
            deltas(&format.opening()),
            [json!({"role": "assistant", "content": ""})]
        );
        let arguments = r#"{"city": "Paris, the capital of France"}"#;
        let text = format!(
            "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {arguments}}}\n</tool_call>"
        );
        let mut chunks = format.stream_text(&text, Vec::new());
        chunks.extend(format.stream_end());
        let deltas = deltas(&chunks);
        let head = &deltas[0]["tool_calls"][0];
        assert_eq!(head["index"], 0);
        assert_eq!(head["type"], "function");
        assert_eq!(head["function"]["name"], "get_weather");
        assert_eq!(head["function"]["arguments"], "");
        assert!(
            head["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("call_"))
        );
        let fragments: Vec<&str> = deltas[1..]
            .iter()
            .map(|d| {
                assert_eq!(d["tool_calls"][0]["index"], 0, "{d}");
                assert!(d["tool_calls"][0].get("id").is_none(), "{d}");
                d["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert!(fragments.len() > 1, "{fragments:?}");
        let joined: String = fragments.concat();
        assert_eq!(
            serde_json::from_str::<Value>(&joined).unwrap(),
            serde_json::from_str::<Value>(arguments).unwrap()
        );
        assert!(format.called_tools());
        assert!(deltas.iter().all(|d| d.get("content").is_none()));
    }

    #[test]
    fn the_whole_message_splits_reasoning_content_and_keeps_logprobs() {
        let mut format = ChatFormat::new(MarkupParser::new(false, false), true);
        let entry = TokenLogprobs {
            token: "x".into(),
            bytes: b"x".to_vec(),
            logprob: -0.1,
            top: Vec::new(),
        };
        format.absorb("<think>\nhmm\n</think>\n\n", vec![entry.clone()]);
        format.absorb("The answer.", vec![entry]);
        let choice = format.complete();
        assert_eq!(choice["message"]["reasoning_content"], "hmm");
        assert_eq!(choice["message"]["content"], "The answer.");
        assert_eq!(choice["message"]["role"], "assistant");
        assert_eq!(choice["logprobs"]["content"].as_array().unwrap().len(), 2);
        assert!(!format.called_tools());
    }
}
