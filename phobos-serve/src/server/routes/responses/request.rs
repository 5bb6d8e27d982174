//! A Responses API request as the chat request the rest of the server
//! already validates, renders and samples: `input` and `instructions` become
//! `messages`, the flat function tools and `tool_choice` their chat
//! spellings, `text.format` becomes `response_format`, `max_output_tokens`
//! `max_completion_tokens`. What a stateless local server cannot honour
//! (stored responses, hosted tools, images) is a 400 naming the field.

use serde_json::{Map, Value, json};

use crate::server::error::ApiError;

/// The translated request.
pub struct Translated {
    /// A chat-completions body.
    pub chat: Map<String, Value>,
    /// Whether the answer's text parts carry log-probabilities.
    pub logprobs: bool,
}

/// Fields whose meaning is the same in both APIs (the sampling extensions
/// llama-server accepts on every route included).
const SHARED_FIELDS: &[&str] = &[
    "model",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
    "stop",
    "logit_bias",
    "ignore_eos",
    "chat_template_kwargs",
];

/// What `include` may ask for; only the log-probabilities change the answer
/// (no reasoning is encrypted and no hosted tool runs here).
const KNOWN_INCLUDES: &[&str] = &[
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "code_interpreter_call.outputs",
];

pub fn translate(body: &Map<String, Value>) -> Result<Translated, ApiError> {
    refuse_state(body)?;
    let mut chat = Map::new();
    for name in SHARED_FIELDS {
        if let Some(value) = body.get(*name) {
            chat.insert((*name).into(), value.clone());
        }
    }
    let instructions = match body.get("instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => {
            return Err(ApiError::invalid(
                "instructions",
                "'instructions' must be a string",
            ));
        }
    };
    chat.insert(
        "messages".into(),
        messages(body.get("input"), instructions)?.into(),
    );
    if let Some(limit) = body.get("max_output_tokens")
        && !limit.is_null()
    {
        if limit.as_u64().is_none_or(|n| n == 0) {
            return Err(ApiError::invalid(
                "max_output_tokens",
                "'max_output_tokens' must be a positive integer",
            ));
        }
        chat.insert("max_completion_tokens".into(), limit.clone());
    }
    if let Some(tools) = body.get("tools")
        && !tools.is_null()
    {
        chat.insert("tools".into(), chat_tools(tools)?.into());
    }
    if let Some(choice) = body.get("tool_choice")
        && !choice.is_null()
    {
        chat.insert("tool_choice".into(), chat_tool_choice(choice)?);
    }
    if let Some(format) = text_format(body.get("text"))? {
        chat.insert("response_format".into(), format);
    }
    if reasoning_off(body.get("reasoning"))? {
        let kwargs = chat
            .entry("chat_template_kwargs")
            .or_insert_with(|| json!({}));
        if let Some(kwargs) = kwargs.as_object_mut() {
            kwargs
                .entry("enable_thinking")
                .or_insert(Value::Bool(false));
        }
    }
    let mut logprobs = included_logprobs(body.get("include"))?;
    match body.get("top_logprobs") {
        None | Some(Value::Null) => {}
        Some(value) => match value.as_u64().filter(|&n| n <= 20) {
            Some(n) => {
                logprobs = true;
                chat.insert("top_logprobs".into(), n.into());
            }
            None => {
                return Err(ApiError::invalid(
                    "top_logprobs",
                    "'top_logprobs' must be an integer from 0 to 20",
                ));
            }
        },
    }
    if logprobs {
        chat.insert("logprobs".into(), true.into());
    }
    Ok(Translated { chat, logprobs })
}

/// Stored state is the one thing a caller cannot get around, so it is
/// refused with what to do instead.
fn refuse_state(body: &Map<String, Value>) -> Result<(), ApiError> {
    let present = |name: &str| body.get(name).is_some_and(|v| !v.is_null());
    for name in ["previous_response_id", "conversation"] {
        if present(name) {
            return Err(ApiError::invalid(
                name,
                format!(
                    "'{name}' needs stored responses, and this server stores none; send the whole conversation in 'input'"
                ),
            ));
        }
    }
    if body.get("background").and_then(Value::as_bool) == Some(true) {
        return Err(ApiError::invalid(
            "background",
            "'background' responses are not supported; use 'stream': true to read the answer as it is made",
        ));
    }
    if present("prompt") {
        return Err(ApiError::invalid(
            "prompt",
            "'prompt' names a stored prompt template, and this server stores none; send 'instructions' and 'input'",
        ));
    }
    Ok(())
}

/// `input` (a string, or a list of messages and function-call items) after
/// `instructions` as a system message.
fn messages(input: Option<&Value>, instructions: Option<&str>) -> Result<Vec<Value>, ApiError> {
    let mut messages = Vec::new();
    if let Some(text) = instructions {
        messages.push(json!({"role": "system", "content": text}));
    }
    let items = match input {
        Some(Value::String(text)) => {
            messages.push(json!({"role": "user", "content": text}));
            return Ok(messages);
        }
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            return Err(ApiError::invalid("input", "'input' must not be empty"));
        }
        None | Some(Value::Null) => {
            return Err(ApiError::invalid(
                "input",
                "'input' is required: a string or a list of input items",
            ));
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "input",
                "'input' must be a string or a list of input items",
            ));
        }
    };
    // Tool results name the function they answer, which some templates print.
    let mut call_names: Vec<(String, String)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("input[{index}]");
        let Some(object) = item.as_object() else {
            return Err(ApiError::invalid(
                &at,
                format!("{at} must be an object (a message or a function-call item)"),
            ));
        };
        let string = |name: &str| -> Result<&str, ApiError> {
            object
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::invalid(&at, format!("{at} needs a string '{name}'")))
        };
        match object.get("type").and_then(Value::as_str) {
            None | Some("message") => {
                let role = string("role")?;
                if !matches!(role, "user" | "assistant" | "system" | "developer") {
                    return Err(ApiError::invalid(
                        &at,
                        format!(
                            "{at}.role must be user, assistant, system or developer, not '{role}'"
                        ),
                    ));
                }
                let text = message_text(object.get("content"), &at)?;
                messages.push(json!({"role": role, "content": text}));
            }
            Some("function_call") => {
                let call_id = string("call_id")?;
                let name = string("name")?;
                let arguments = string("arguments")?;
                call_names.push((call_id.to_owned(), name.to_owned()));
                let call = json!({
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                });
                // Calls right after an assistant turn belong to that turn.
                match messages.last_mut() {
                    Some(last) if last["role"] == "assistant" => {
                        match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                            Some(calls) => calls.push(call),
                            None => last["tool_calls"] = json!([call]),
                        }
                    }
                    _ => messages.push(json!({
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [call],
                    })),
                }
            }
            Some("function_call_output") => {
                let call_id = string("call_id")?;
                let output = match object.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    other => message_text(other, &format!("{at}.output"))?,
                };
                let mut message =
                    json!({"role": "tool", "tool_call_id": call_id, "content": output});
                if let Some((_, name)) = call_names.iter().rev().find(|(id, _)| id == call_id) {
                    message["name"] = name.clone().into();
                }
                messages.push(message);
            }
            // Earlier reasoning is not shown to the model again, as chat
            // templates drop past turns' thinking.
            Some("reasoning") => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    &at,
                    format!(
                        "{at}.type '{other}' is not supported; items are messages, function_call, function_call_output and reasoning"
                    ),
                ));
            }
        }
    }
    if messages.iter().all(|m| m["role"] == "system") {
        return Err(ApiError::invalid(
            "input",
            "'input' holds no message to answer",
        ));
    }
    Ok(messages)
}

/// A message's content: a string, or text parts joined (images, files and
/// audio are refused: the served models read text).
fn message_text(content: Option<&Value>, at: &str) -> Result<String, ApiError> {
    let parts = match content {
        Some(Value::String(text)) => return Ok(text.clone()),
        Some(Value::Array(parts)) => parts,
        _ => {
            return Err(ApiError::invalid(
                at,
                format!("{at}.content must be a string or a list of text parts"),
            ));
        }
    };
    let mut text = String::new();
    for (index, part) in parts.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
        let field = match kind {
            "input_text" | "output_text" | "text" => "text",
            "refusal" => "refusal",
            _ => {
                return Err(ApiError::invalid(
                    at,
                    format!(
                        "{at}.content[{index}] is a '{kind}' part; this server reads text parts only (input_text, output_text)"
                    ),
                ));
            }
        };
        let Some(piece) = part.get(field).and_then(Value::as_str) else {
            return Err(ApiError::invalid(
                at,
                format!("{at}.content[{index}] needs a string '{field}'"),
            ));
        };
        text.push_str(piece);
    }
    Ok(text)
}

/// Responses' flat function tools (`{"type": "function", "name", ...}`) in
/// the chat API's nested form; the nested form is taken as it is.
fn chat_tools(tools: &Value) -> Result<Vec<Value>, ApiError> {
    let Some(items) = tools.as_array() else {
        return Err(ApiError::invalid("tools", "'tools' must be a list"));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let kind = tool.get("type").and_then(Value::as_str).unwrap_or("");
            if kind != "function" {
                return Err(ApiError::invalid(
                    &format!("tools[{index}]"),
                    format!(
                        "tools[{index}] is a '{kind}' tool; only function tools run here (hosted tools such as web search are OpenAI's)"
                    ),
                ));
            }
            if tool.get("function").is_some() {
                return Ok(tool.clone());
            }
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return Err(ApiError::invalid(
                    &format!("tools[{index}]"),
                    format!("tools[{index}] needs a string 'name'"),
                ));
            };
            let mut function = json!({"name": name});
            for key in ["description", "parameters", "strict"] {
                if let Some(value) = tool.get(key).filter(|v| !v.is_null()) {
                    function[key] = value.clone();
                }
            }
            Ok(json!({"type": "function", "function": function}))
        })
        .collect()
}

fn chat_tool_choice(choice: &Value) -> Result<Value, ApiError> {
    let Some(object) = choice.as_object() else {
        return Ok(choice.clone());
    };
    match object.get("type").and_then(Value::as_str) {
        Some("function") if object.get("function").is_none() => {
            let name = object.get("name").and_then(Value::as_str).ok_or_else(|| {
                ApiError::invalid(
                    "tool_choice",
                    "'tool_choice' {\"type\": \"function\"} needs a string 'name'",
                )
            })?;
            Ok(json!({"type": "function", "function": {"name": name}}))
        }
        Some("function") => Ok(choice.clone()),
        other => Err(ApiError::invalid(
            "tool_choice",
            format!(
                "'tool_choice' must be 'auto', 'none', 'required' or {{\"type\": \"function\", \"name\": ...}}, got type {other:?}"
            ),
        )),
    }
}

/// `text.format` as the chat API's `response_format` (`None` for text).
fn text_format(text: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let Some(format) = text.and_then(|t| t.get("format")).filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let mut spec = Map::new();
            for key in ["name", "schema", "strict", "description"] {
                if let Some(value) = format.get(key) {
                    spec.insert(key.into(), value.clone());
                }
            }
            Ok(Some(json!({"type": "json_schema", "json_schema": spec})))
        }
        other => Err(ApiError::invalid(
            "text.format",
            format!(
                "'text.format.type' must be 'text', 'json_object' or 'json_schema', {}",
                other.map_or("and is missing".to_owned(), |kind| format!("got '{kind}'"))
            ),
        )),
    }
}

/// `reasoning.effort: "none"` turns thinking off in templates that read
/// `enable_thinking`; other efforts leave the template's default.
fn reasoning_off(reasoning: Option<&Value>) -> Result<bool, ApiError> {
    let Some(effort) = reasoning
        .and_then(|r| r.get("effort"))
        .filter(|e| !e.is_null())
    else {
        return Ok(false);
    };
    match effort.as_str() {
        Some("none") => Ok(true),
        Some("minimal" | "low" | "medium" | "high" | "xhigh") => Ok(false),
        _ => Err(ApiError::invalid(
            "reasoning.effort",
            "'reasoning.effort' must be none, minimal, low, medium, high or xhigh",
        )),
    }
}

fn included_logprobs(include: Option<&Value>) -> Result<bool, ApiError> {
    let Some(include) = include.filter(|v| !v.is_null()) else {
        return Ok(false);
    };
    let Some(items) = include.as_array() else {
        return Err(ApiError::invalid(
            "include",
            "'include' must be a list of strings",
        ));
    };
    let mut logprobs = false;
    for item in items {
        match item.as_str() {
            Some("message.output_text.logprobs") => logprobs = true,
            Some(known) if KNOWN_INCLUDES.contains(&known) => {}
            _ => {
                return Err(ApiError::invalid(
                    "include",
                    format!("'include' does not know {item}"),
                ));
            }
        }
    }
    Ok(logprobs)
}

/// An error the chat route raised for the translated request, in the
/// Responses API's own field names (`text.format` for `response_format`,
/// flat `tools[i].name`, `max_output_tokens`, `input`), so a client is
/// told about the field it sent.
pub fn in_responses_terms(mut error: ApiError) -> ApiError {
    let Some(param) = error.param.take() else {
        return error;
    };
    let renamed = responses_param(&param);
    if renamed != param {
        error.message = error.message.replace(&param, &renamed);
        error.message = error
            .message
            .replace("'response_format'", "'text.format'")
            .replace("'max_completion_tokens'", "'max_output_tokens'")
            .replace("'max_tokens'", "'max_output_tokens'");
    }
    error.param = Some(renamed);
    error
}

fn responses_param(param: &str) -> String {
    let renames: [(&str, &str); 5] = [
        ("response_format.json_schema", "text.format"),
        ("response_format", "text.format"),
        ("max_completion_tokens", "max_output_tokens"),
        ("max_tokens", "max_output_tokens"),
        ("messages", "input"),
    ];
    for (chat, responses) in renames {
        if let Some(rest) = param.strip_prefix(chat)
            && (rest.is_empty() || rest.starts_with(['.', '[']))
        {
            // Message indices differ after the translation; the field is
            // `input` as a whole.
            if chat == "messages" {
                return responses.to_owned();
            }
            return format!("{responses}{rest}");
        }
    }
    // Chat's `tools[i].function.name` is the flat `tools[i].name`.
    if let Some(rest) = param.strip_prefix("tools[")
        && let Some((index, field)) = rest.split_once(']')
    {
        let field = field.strip_prefix(".function").unwrap_or(field);
        return format!("tools[{index}]{field}");
    }
    param.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_errors_name_the_responses_fields() {
        let cases = [
            ("response_format", "text.format"),
            ("response_format.json_schema.schema", "text.format.schema"),
            ("response_format.type", "text.format.type"),
            ("tools[2].function.name", "tools[2].name"),
            ("tools[2].function.parameters", "tools[2].parameters"),
            ("tools[2]", "tools[2]"),
            ("max_completion_tokens", "max_output_tokens"),
            ("messages[3].content", "input"),
            ("temperature", "temperature"),
            ("response_formats", "response_formats"),
        ];
        for (chat, responses) in cases {
            let error = in_responses_terms(ApiError::invalid(
                chat,
                format!("{chat} is wrong; 'response_format' says so"),
            ));
            assert_eq!(error.param.as_deref(), Some(responses), "{chat}");
            if chat != responses {
                assert!(!error.message.contains(chat), "{chat}: {}", error.message);
            }
        }
        let plain = in_responses_terms(ApiError::bad_request("no field"));
        assert_eq!((plain.param, plain.message.as_str()), (None, "no field"));
    }

    fn translate_json(body: Value) -> Result<Translated, ApiError> {
        let Value::Object(map) = body else {
            panic!("test bodies are objects");
        };
        translate(&map)
    }

    #[test]
    fn a_string_input_with_instructions_is_a_system_and_a_user_message() {
        let t = translate_json(json!({
            "model": "m", "input": "Hi", "instructions": "Be brief.",
            "max_output_tokens": 20, "temperature": 0,
        }))
        .unwrap();
        assert_eq!(
            t.chat["messages"],
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
        );
        assert_eq!(t.chat["max_completion_tokens"], 20);
        assert_eq!(t.chat["temperature"], 0);
        assert_eq!(t.chat["model"], "m");
        assert!(!t.logprobs);
    }

    #[test]
    fn function_calls_join_the_assistant_turn_and_outputs_name_their_function() {
        let t = translate_json(json!({"input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in "}, {"type": "input_text", "text": "Paris?"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{}"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call_output", "call_id": "c1", "output": "18C"},
        ]}))
        .unwrap();
        let messages = t.chat["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["content"], "Weather in Paris?");
        assert_eq!(messages[1]["content"], "Checking.");
        assert_eq!(messages[1]["tool_calls"][0]["id"], "c1");
        assert_eq!(messages[1]["tool_calls"][1]["function"]["name"], "get_time");
        assert_eq!(
            messages[2],
            json!({"role": "tool", "tool_call_id": "c1", "content": "18C", "name": "get_weather"})
        );
    }

    #[test]
    fn flat_tools_choice_format_and_logprobs_take_their_chat_spellings() {
        let t = translate_json(json!({
            "input": "x",
            "tools": [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}, "strict": true}],
            "tool_choice": {"type": "function", "name": "f"},
            "text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}, "strict": true}},
            "top_logprobs": 3,
            "reasoning": {"effort": "none"},
        }))
        .unwrap();
        assert_eq!(
            t.chat["tools"],
            json!([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}, "strict": true}}])
        );
        assert_eq!(
            t.chat["tool_choice"],
            json!({"type": "function", "function": {"name": "f"}})
        );
        assert_eq!(
            t.chat["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "object"}, "strict": true}})
        );
        assert_eq!(t.chat["top_logprobs"], 3);
        assert_eq!(t.chat["logprobs"], true);
        assert_eq!(t.chat["chat_template_kwargs"]["enable_thinking"], false);
        assert!(t.logprobs);
        let included =
            translate_json(json!({"input": "x", "include": ["message.output_text.logprobs"]}))
                .unwrap();
        assert!(included.logprobs);
        assert!(
            translate_json(json!({"input": "x", "text": {"format": {"type": "text"}}}))
                .unwrap()
                .chat
                .get("response_format")
                .is_none()
        );
    }

    #[test]
    fn what_cannot_run_here_is_a_400_naming_the_field() {
        for (body, param) in [
            (json!({}), "input"),
            (json!({"input": []}), "input"),
            (json!({"input": 3}), "input"),
            (
                json!({"input": "x", "previous_response_id": "resp_1"}),
                "previous_response_id",
            ),
            (
                json!({"input": "x", "conversation": "conv_1"}),
                "conversation",
            ),
            (json!({"input": "x", "background": true}), "background"),
            (json!({"input": "x", "prompt": {"id": "p"}}), "prompt"),
            (json!({"input": "x", "instructions": 1}), "instructions"),
            (
                json!({"input": "x", "max_output_tokens": 0}),
                "max_output_tokens",
            ),
            (
                json!({"input": "x", "tools": [{"type": "web_search"}]}),
                "tools[0]",
            ),
            (
                json!({"input": "x", "tools": [{"type": "function"}]}),
                "tools[0]",
            ),
            (
                json!({"input": "x", "tool_choice": {"type": "function"}}),
                "tool_choice",
            ),
            (
                json!({"input": "x", "tool_choice": {"type": "file_search"}}),
                "tool_choice",
            ),
            (
                json!({"input": "x", "text": {"format": {"type": "xml"}}}),
                "text.format",
            ),
            (json!({"input": "x", "top_logprobs": 21}), "top_logprobs"),
            (json!({"input": "x", "include": ["nope"]}), "include"),
            (
                json!({"input": "x", "reasoning": {"effort": "max"}}),
                "reasoning.effort",
            ),
            (json!({"input": [1]}), "input[0]"),
            (
                json!({"input": [{"role": "robot", "content": "x"}]}),
                "input[0]",
            ),
            (json!({"input": [{"role": "user"}]}), "input[0]"),
            (
                json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}),
                "input[0]",
            ),
            (
                json!({"input": [{"type": "function_call", "name": "f"}]}),
                "input[0]",
            ),
            (
                json!({"input": [{"type": "item_reference", "id": "x"}]}),
                "input[0]",
            ),
            (
                json!({"input": [{"role": "system", "content": "x"}]}),
                "input",
            ),
        ] {
            let error = translate_json(body.clone())
                .err()
                .unwrap_or_else(|| panic!("{body} was accepted"));
            assert_eq!(error.status, 400, "{body}");
            assert_eq!(error.param.as_deref(), Some(param), "{body}");
        }
    }
}
