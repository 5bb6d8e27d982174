//! What a template can express, found by rendering probes, and the
//! rewrites for what it cannot (the same fallbacks llama.cpp uses).

use super::{ChatMessage, ChatRequest, ChatTemplate, ChatTemplateError, ToolCall};

/// What a chat template renders itself; [`ChatTemplate::render`] rewrites
/// the rest into what it does render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Messages with the `system` role.
    pub system_role: bool,
    /// The request's `tools` (their definitions, in the prompt).
    pub tools: bool,
    /// An assistant message's `tool_calls`.
    pub tool_calls: bool,
    /// Messages with the `tool` role (a call's result).
    pub tool_responses: bool,
}

impl Capabilities {
    pub fn all() -> Self {
        Self {
            system_role: true,
            tools: true,
            tool_calls: true,
            tool_responses: true,
        }
    }
}

/// Whether the template renders `messages` with `needle` in the text. A
/// template error means no; a template that hits a limit fails the probe.
fn renders_with(
    template: &ChatTemplate,
    messages: &[ChatMessage],
    tools: &[serde_json::Value],
    needle: &str,
) -> Result<bool, ChatTemplateError> {
    let request = ChatRequest {
        add_generation_prompt: false,
        now_unix_seconds: Some(0),
        ..ChatRequest::default()
    };
    let json: Vec<serde_json::Value> = messages.iter().map(ChatMessage::to_json).collect();
    match template.render_raw(&request, &json, tools) {
        Ok(out) => Ok(out.contains(needle)),
        Err(limit @ ChatTemplateError::Limit { .. }) => Err(limit),
        Err(_) => Ok(false),
    }
}

pub(crate) fn probe(template: &ChatTemplate) -> Result<Capabilities, ChatTemplateError> {
    let user = ChatMessage::new("user", "Hey");
    let system_role = renders_with(
        template,
        &[ChatMessage::new("system", "SystemProbe7d1"), user.clone()],
        &[],
        "SystemProbe7d1",
    )?;
    let tool_definition = serde_json::json!({
        "type": "function",
        "function": {
            "name": "ToolDefinitionProbe3b5",
            "description": "probe",
            "parameters": {"type": "object", "properties": {}},
        },
    });
    let tools = renders_with(
        template,
        std::slice::from_ref(&user),
        std::slice::from_ref(&tool_definition),
        "ToolDefinitionProbe3b5",
    )?;
    let mut call = ChatMessage::new("assistant", "");
    call.tool_calls.push(ToolCall {
        id: "call_probe".into(),
        name: "ToolProbe9c2".into(),
        arguments: serde_json::json!({"arg": "value"}),
    });
    let tool_calls = renders_with(template, &[user.clone(), call.clone()], &[], "ToolProbe9c2")?;
    let mut response = ChatMessage::new("tool", "ResultProbe4e8");
    response.tool_call_id = Some("call_probe".into());
    response.name = Some("ToolProbe9c2".into());
    let tool_responses = renders_with(template, &[user, call, response], &[], "ResultProbe4e8")?;
    Ok(Capabilities {
        system_role,
        tools,
        tool_calls,
        tool_responses,
    })
}

fn tool_calls_as_text(calls: &[ToolCall]) -> String {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|c| serde_json::json!({"name": c.name, "arguments": c.arguments, "id": c.id}))
        .collect();
    serde_json::json!({ "tool_calls": calls }).to_string()
}

/// The markup [`TOOLS_PREAMBLE_HEAD`] asks the model to answer with, one
/// block per call: the form servers read back as tool calls (Hermes').
fn tool_calls_as_markup(calls: &[ToolCall]) -> String {
    calls
        .iter()
        .map(|c| {
            let call = serde_json::json!({"name": c.name, "arguments": c.arguments});
            format!("<tool_call>\n{call}\n</tool_call>")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const TOOLS_PREAMBLE_HEAD: &str = "You can call the functions listed below. To call one, \
answer with only this, one block per call:\n<tool_call>\n{\"name\": \"<function name>\", \
\"arguments\": <the arguments as a JSON object>}\n</tool_call>\n\
Each call's result comes back in a later message. When no function is needed, answer \
in plain text.\n\nFunctions (JSON):";

/// The tool definitions as system-prompt text, for a template that does
/// not render `tools` itself (llama.cpp and Hugging Face's fallbacks do the
/// same): without it the model would never learn the tools exist.
fn tools_preamble(tools: &[serde_json::Value]) -> String {
    let mut text = String::from(TOOLS_PREAMBLE_HEAD);
    for tool in tools {
        text.push('\n');
        // An OpenAI tool is `{"type": "function", "function": {...}}`; the
        // function object is what the model needs.
        text.push_str(&tool.get("function").unwrap_or(tool).to_string());
    }
    text
}

/// Message JSON for the template, rewriting what it cannot express:
/// `tools` it does not render become a system-prompt preamble.
pub(crate) fn adapt_messages(
    messages: &[ChatMessage],
    tools: &[serde_json::Value],
    caps: &Capabilities,
) -> Vec<serde_json::Value> {
    let tools_in_preamble = !caps.tools && !tools.is_empty();
    let mut messages = messages.to_vec();
    if tools_in_preamble {
        let preamble = tools_preamble(tools);
        match messages.first_mut() {
            Some(first) if first.role == "system" => {
                first.content = format!("{}\n\n{preamble}", first.content);
            }
            _ => messages.insert(0, ChatMessage::new("system", &preamble)),
        }
    }
    let mut adapted: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    let mut pending_system: Option<String> = None;
    for mut message in messages {
        if message.role == "system" && !caps.system_role {
            pending_system = Some(match pending_system {
                Some(previous) => format!("{previous}\n{}", message.content),
                None => message.content,
            });
            continue;
        }
        if message.role == "assistant" && !message.tool_calls.is_empty() && !caps.tool_calls {
            // Past calls read as the preamble asks new ones to be written.
            let calls = if tools_in_preamble {
                tool_calls_as_markup(&message.tool_calls)
            } else {
                tool_calls_as_text(&message.tool_calls)
            };
            message.content = if message.content.is_empty() {
                calls
            } else {
                format!("{}\n{calls}", message.content)
            };
            message.tool_calls.clear();
        }
        if message.role == "tool" && !caps.tool_responses {
            let response = serde_json::json!({
                "tool_response": {
                    "tool": message.name.clone().unwrap_or_default(),
                    "content": message.content,
                    "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
                }
            });
            message = ChatMessage::new("user", &response.to_string());
        }
        if message.role == "user"
            && let Some(system) = pending_system.take()
        {
            message.content = format!("{system}\n{}", message.content);
        }
        adapted.push(message);
    }
    if let Some(system) = pending_system {
        adapted.insert(0, ChatMessage::new("user", &system));
    }
    // Templates that insist on alternating roles: merge consecutive user turns
    // created by the rewrites above.
    let mut merged: Vec<ChatMessage> = Vec::with_capacity(adapted.len());
    for message in adapted {
        if let Some(last) = merged.last_mut()
            && !caps.tool_responses
            && last.role == "user"
            && message.role == "user"
        {
            last.content = format!("{}\n{}", last.content, message.content);
            continue;
        }
        merged.push(message);
    }
    merged.iter().map(ChatMessage::to_json).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_messages_parse_with_string_arguments() {
        let message = ChatMessage::from_openai_json(&serde_json::json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "f", "arguments": "{\"x\": 1}"}}]
        }))
        .unwrap();
        assert_eq!(message.content, "");
        assert_eq!(message.tool_calls[0].arguments, serde_json::json!({"x": 1}));
        let parts = ChatMessage::from_openai_json(&serde_json::json!({
            "role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        }))
        .unwrap();
        assert_eq!(parts.content, "ab");
        assert!(ChatMessage::from_openai_json(&serde_json::json!({"content": "x"})).is_err());
    }

    #[test]
    fn system_is_folded_into_the_first_user_turn_when_unsupported() {
        let caps = Capabilities {
            system_role: false,
            ..Capabilities::all()
        };
        let adapted = adapt_messages(
            &[
                ChatMessage::new("system", "S"),
                ChatMessage::new("user", "U"),
            ],
            &[],
            &caps,
        );
        assert_eq!(adapted.len(), 1);
        assert_eq!(adapted[0]["role"], "user");
        assert_eq!(adapted[0]["content"], "S\nU");
    }

    fn weather_tool() -> serde_json::Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        })
    }

    /// The turns as `role: content` lines, for comparing whole renderings.
    const PLAIN: &str = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";

    #[test]
    fn tools_a_template_ignores_are_described_in_the_system_prompt() {
        let template = ChatTemplate::new(PLAIN).unwrap();
        assert!(!template.supports().tools);
        let mut call = ChatMessage::new("assistant", "");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "get_weather".into(),
            arguments: serde_json::json!({"city": "Oslo"}),
        });
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new("system", "Be brief."),
                ChatMessage::new("user", "Weather in Oslo?"),
                call,
            ],
            tools: vec![weather_tool()],
            ..ChatRequest::default()
        };
        let text = template.render(&request).unwrap();
        let function = weather_tool()["function"].to_string();
        let expected = format!(
            "system: Be brief.\n\n{TOOLS_PREAMBLE_HEAD}\n{function}\nuser: Weather in Oslo?\n\
             assistant: <tool_call>\n{{\"name\":\"get_weather\",\"arguments\":{{\"city\":\"Oslo\"}}}}\n</tool_call>\n"
        );
        assert_eq!(text, expected);

        // No system message: the preamble becomes one, first.
        let request = ChatRequest {
            messages: vec![ChatMessage::new("user", "Hi")],
            tools: vec![weather_tool()],
            ..ChatRequest::default()
        };
        assert_eq!(
            template.render(&request).unwrap(),
            format!("system: {TOOLS_PREAMBLE_HEAD}\n{function}\nuser: Hi\n")
        );
        // No tools, no preamble.
        let request = ChatRequest {
            messages: vec![ChatMessage::new("user", "Hi")],
            ..ChatRequest::default()
        };
        assert_eq!(template.render(&request).unwrap(), "user: Hi\n");
    }

    #[test]
    fn a_template_that_renders_tools_gets_them_untouched() {
        let source = format!("{{{{ tools | tojson }}}}\n{PLAIN}");
        let template = ChatTemplate::new(source).unwrap();
        assert!(template.supports().tools);
        let request = ChatRequest {
            messages: vec![ChatMessage::new("user", "Hi")],
            tools: vec![weather_tool()],
            ..ChatRequest::default()
        };
        let text = template.render(&request).unwrap();
        assert!(!text.contains(TOOLS_PREAMBLE_HEAD), "{text}");
        assert!(text.contains("Current weather for a city"), "{text}");
        assert!(text.ends_with("\nuser: Hi\n"), "{text}");
    }

    #[test]
    fn a_template_that_refuses_tools_renders_them_through_the_preamble() {
        let source = format!(
            "{{% if tools %}}{{{{ raise_exception('no tools here') }}}}{{% endif %}}{PLAIN}"
        );
        let template = ChatTemplate::new(source).unwrap();
        assert!(!template.supports().tools);
        let request = ChatRequest {
            messages: vec![ChatMessage::new("user", "Hi")],
            tools: vec![weather_tool()],
            ..ChatRequest::default()
        };
        let text = template.render(&request).unwrap();
        assert!(
            text.starts_with(&format!("system: {TOOLS_PREAMBLE_HEAD}")),
            "{text}"
        );
    }
}
