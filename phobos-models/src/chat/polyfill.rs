//! What a template can express, found by rendering probes, and the
//! rewrites for what it cannot (the same fallbacks llama.cpp uses).

use super::{ChatMessage, ChatRequest, ChatTemplate, ChatTemplateError, ToolCall};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities {
    pub system_role: bool,
    pub tool_calls: bool,
    pub tool_responses: bool,
}

impl Capabilities {
    pub fn all() -> Self {
        Self {
            system_role: true,
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
    needle: &str,
) -> Result<bool, ChatTemplateError> {
    let request = ChatRequest {
        add_generation_prompt: false,
        now_unix_seconds: Some(0),
        ..ChatRequest::default()
    };
    let json: Vec<serde_json::Value> = messages.iter().map(ChatMessage::to_json).collect();
    match template.render_raw(&request, &json) {
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
        "SystemProbe7d1",
    )?;
    let mut call = ChatMessage::new("assistant", "");
    call.tool_calls.push(ToolCall {
        id: "call_probe".into(),
        name: "ToolProbe9c2".into(),
        arguments: serde_json::json!({"arg": "value"}),
    });
    let tool_calls = renders_with(template, &[user.clone(), call.clone()], "ToolProbe9c2")?;
    let mut response = ChatMessage::new("tool", "ResultProbe4e8");
    response.tool_call_id = Some("call_probe".into());
    response.name = Some("ToolProbe9c2".into());
    let tool_responses = renders_with(template, &[user, call, response], "ResultProbe4e8")?;
    Ok(Capabilities {
        system_role,
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

/// Message JSON for the template, rewriting what it cannot express.
pub(crate) fn adapt_messages(
    messages: &[ChatMessage],
    caps: &Capabilities,
) -> Vec<serde_json::Value> {
    let mut adapted: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    let mut pending_system: Option<String> = None;
    for message in messages {
        let mut message = message.clone();
        if message.role == "system" && !caps.system_role {
            pending_system = Some(match pending_system {
                Some(previous) => format!("{previous}\n{}", message.content),
                None => message.content,
            });
            continue;
        }
        if message.role == "assistant" && !message.tool_calls.is_empty() && !caps.tool_calls {
            let calls = tool_calls_as_text(&message.tool_calls);
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
            &caps,
        );
        assert_eq!(adapted.len(), 1);
        assert_eq!(adapted[0]["role"], "user");
        assert_eq!(adapted[0]["content"], "S\nU");
    }
}
