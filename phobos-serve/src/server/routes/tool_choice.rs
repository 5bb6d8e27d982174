//! `tool_choice`: `auto` (or absent) lets the model choose, `none` hides
//! the tools, and `required` or one named function makes the answer a tool
//! call, enforced while sampling as `response_format` is: the output is
//! `<tool_call>` markup around `{"name": ..., "arguments": {...}}`, with
//! the name one of the allowed tools and the arguments that tool's
//! `parameters` schema.

use serde_json::Value;

use crate::server::error::ApiError;
use std::sync::Arc;

use crate::server::json_format::{Alternative, JsonFormat, JsonShape, MAX_ALTERNATIVES};

/// What `tool_choice` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Function(String),
}

impl ToolChoice {
    pub fn parse(value: Option<&Value>) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::invalid(
                "tool_choice",
                "'tool_choice' must be 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}",
            )
        };
        match value {
            None | Some(Value::Null) => Ok(Self::Auto),
            Some(Value::String(s)) => match s.as_str() {
                "auto" => Ok(Self::Auto),
                "none" => Ok(Self::None),
                "required" => Ok(Self::Required),
                _ => Err(invalid()),
            },
            Some(Value::Object(object)) => {
                if object.get("type").and_then(Value::as_str) != Some("function") {
                    return Err(invalid());
                }
                object
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .map(|name| Self::Function(name.to_owned()))
                    .ok_or_else(invalid)
            }
            Some(_) => Err(invalid()),
        }
    }

    /// The constraint a call demands, or `None` when the model may answer
    /// freely. `tools` are the request's (already checked) tool entries;
    /// `in_reasoning`: the prompt opened a reasoning block, which the
    /// call's text must close first so the call is not read as reasoning.
    pub fn forced_call(
        &self,
        tools: &[Value],
        in_reasoning: bool,
    ) -> Result<Option<JsonFormat>, ApiError> {
        let name_of = |tool: &Value| {
            tool.get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let allowed: Vec<&Value> = match self {
            Self::Auto | Self::None => return Ok(None),
            Self::Required => tools.iter().collect(),
            Self::Function(name) => tools
                .iter()
                .filter(|tool| name_of(tool).as_deref() == Some(name))
                .collect(),
        };
        if allowed.is_empty() {
            return Err(ApiError::invalid(
                "tool_choice",
                match self {
                    Self::Function(name) => {
                        format!(
                            "'tool_choice' names the function '{name}', which is not in 'tools'"
                        )
                    }
                    _ => "'tool_choice': 'required' needs at least one entry in 'tools'".to_owned(),
                },
            ));
        }
        let opening = if in_reasoning {
            "</think>\n\n<tool_call>\n"
        } else {
            "<tool_call>\n"
        };
        let alternatives = allowed
            .iter()
            .map(|tool| {
                let function = tool.get("function");
                let name = function
                    .and_then(|f| f.get("name"))
                    .cloned()
                    .unwrap_or(Value::Null);
                // Arguments whose schema the matcher does not follow are
                // still held to a JSON object; the name stays enforced.
                let shape = function
                    .and_then(|f| f.get("parameters"))
                    .filter(|p| p.is_object())
                    .and_then(|p| JsonShape::compile(p).ok())
                    .unwrap_or_else(JsonShape::any_object);
                Alternative {
                    prefix: format!("{opening}{{\"name\": {name}, \"arguments\": ")
                        .into_bytes()
                        .into(),
                    shape: Arc::new(shape),
                    suffix: (*b"}\n</tool_call>").into(),
                }
            })
            .collect();
        JsonFormat::one_of(alternatives).map(Some).ok_or_else(|| {
            ApiError::invalid(
                "tool_choice",
                format!("'tool_choice' can enforce a call among at most {MAX_ALTERNATIVES} tools"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, parameters: Value) -> Value {
        json!({"type": "function", "function": {"name": name, "parameters": parameters}})
    }

    #[test]
    fn parses_every_openai_spelling_and_refuses_the_rest() {
        let cases = [
            (None, Some(ToolChoice::Auto)),
            (Some(json!("auto")), Some(ToolChoice::Auto)),
            (Some(json!("none")), Some(ToolChoice::None)),
            (Some(json!("required")), Some(ToolChoice::Required)),
            (
                Some(json!({"type": "function", "function": {"name": "f"}})),
                Some(ToolChoice::Function("f".into())),
            ),
            (Some(json!("any")), None),
            (Some(json!(3)), None),
            (Some(json!({"type": "function"})), None),
            (
                Some(json!({"type": "tool", "function": {"name": "f"}})),
                None,
            ),
        ];
        for (value, want) in cases {
            let got = ToolChoice::parse(value.as_ref()).ok();
            assert_eq!(got, want, "{value:?}");
        }
    }

    #[test]
    fn auto_and_none_leave_output_free() {
        let tools = [tool("f", json!({"type": "object"}))];
        for choice in [ToolChoice::Auto, ToolChoice::None] {
            assert!(matches!(choice.forced_call(&tools, false), Ok(None)));
        }
    }

    #[test]
    fn a_missing_function_or_no_tools_is_a_400_naming_tool_choice() {
        let tools = [tool("f", json!({"type": "object"}))];
        for (choice, tools) in [
            (ToolChoice::Function("g".into()), &tools[..]),
            (ToolChoice::Required, &[][..]),
        ] {
            let error = choice
                .forced_call(tools, false)
                .err()
                .unwrap_or_else(|| panic!("{choice:?} was accepted"));
            assert!(format!("{error:?}").contains("tool_choice"), "{error:?}");
        }
    }

    fn accepts(format: JsonFormat, text: &str) -> bool {
        format.accepts_whole(text)
    }

    #[test]
    fn the_call_names_an_allowed_tool_with_arguments_of_its_schema() {
        let tools = [
            tool(
                "get_weather",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            tool("now", json!({"type": "object", "properties": {}})),
        ];
        let required = ToolChoice::Required.forced_call(&tools, false);
        let Ok(Some(required)) = required else {
            panic!("no constraint");
        };
        let weather = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert!(accepts(required.clone(), weather));
        assert!(accepts(
            required.clone(),
            "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"
        ));
        for wrong in [
            "{\"name\": \"now\", \"arguments\": {}}",
            "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}",
        ] {
            assert!(!accepts(required.clone(), wrong), "{wrong}");
        }
        let Ok(Some(named)) = ToolChoice::Function("now".into()).forced_call(&tools, true) else {
            panic!("no constraint");
        };
        assert!(!accepts(named.clone(), weather));
        let Ok(Some(weather_only)) =
            ToolChoice::Function("get_weather".into()).forced_call(&tools, false)
        else {
            panic!("no constraint");
        };
        assert!(accepts(weather_only.clone(), weather));
        for wrong in [
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>",
        ] {
            assert!(!accepts(weather_only.clone(), wrong), "{wrong}");
        }
        assert!(accepts(
            named,
            "</think>\n\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"
        ));
    }

    #[test]
    fn parameters_the_matcher_cannot_follow_still_force_a_named_object_call() {
        let tools = [tool(
            "f",
            json!({"type": "object", "patternProperties": {"x": {}}}),
        )];
        let Ok(Some(format)) = ToolChoice::Required.forced_call(&tools, false) else {
            panic!("no constraint");
        };
        assert!(accepts(
            format.clone(),
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"anything\": [1]}}\n</tool_call>"
        ));
        assert!(!accepts(
            format,
            "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>"
        ));
    }
}
