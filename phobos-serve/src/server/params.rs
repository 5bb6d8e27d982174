//! Reading request fields with messages that say what to fix. Unknown
//! fields are ignored (clients send vendor extensions); known ones must have
//! the right type and range.

use serde_json::{Map, Value};

use super::backend::SamplingParams;
use super::error::ApiError;
use super::json_format::{JsonFormat, JsonShape};

/// Server-wide defaults for sampling (the `serve` flags); request fields
/// override them.
#[derive(Debug, Clone)]
pub struct SamplingDefaults {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: u32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    pub seed: Option<u64>,
    /// Tokens to generate when the request names no limit (None: up to the
    /// context).
    pub max_tokens: Option<usize>,
}

/// The fields of a JSON object body.
pub struct Fields<'a>(pub &'a Map<String, Value>);

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Fields<'a> {
    /// Parses a body as a JSON object.
    pub fn parse_body(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(format!(
                "the request body is not valid JSON ({e}); send a JSON object"
            ))
        })?;
        match value {
            Value::Object(map) => Ok(map),
            other => Err(ApiError::bad_request(format!(
                "the request body must be a JSON object, not {}",
                type_name(&other)
            ))),
        }
    }

    /// The field, treating `null` as absent.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    pub fn number(&self, name: &str, min: f64, max: f64) -> Result<Option<f64>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let number = value.as_f64().ok_or_else(|| {
            ApiError::invalid(
                name,
                format!("'{name}' must be a number, not {}", type_name(value)),
            )
        })?;
        if !(min..=max).contains(&number) {
            return Err(ApiError::invalid(
                name,
                format!("'{name}' must be between {min} and {max}, got {number}"),
            ));
        }
        Ok(Some(number))
    }

    pub fn integer(&self, name: &str, min: u64, max: u64) -> Result<Option<u64>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let integer = value.as_u64().ok_or_else(|| {
            ApiError::invalid(
                name,
                format!(
                    "'{name}' must be a non-negative integer, got {}",
                    if value.is_number() {
                        value.to_string()
                    } else {
                        type_name(value).to_owned()
                    }
                ),
            )
        })?;
        if !(min..=max).contains(&integer) {
            return Err(ApiError::invalid(
                name,
                format!("'{name}' must be between {min} and {max}, got {integer}"),
            ));
        }
        Ok(Some(integer))
    }

    pub fn boolean(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(ApiError::invalid(
                name,
                format!("'{name}' must be true or false, not {}", type_name(other)),
            )),
        }
    }

    pub fn string(&self, name: &str) -> Result<Option<&'a str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(ApiError::invalid(
                name,
                format!("'{name}' must be a string, not {}", type_name(other)),
            )),
        }
    }

    pub fn object(&self, name: &str) -> Result<Option<Fields<'a>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields(map))),
            Some(other) => Err(ApiError::invalid(
                name,
                format!("'{name}' must be an object, not {}", type_name(other)),
            )),
        }
    }

    pub fn array(&self, name: &str) -> Result<Option<&'a Vec<Value>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(ApiError::invalid(
                name,
                format!("'{name}' must be an array, not {}", type_name(other)),
            )),
        }
    }
}

/// A list of token ids from request field `param`, each below `n_vocab`.
pub fn token_ids(items: &[Value], n_vocab: usize, param: &str) -> Result<Vec<u32>, ApiError> {
    items
        .iter()
        .map(|v| match v.as_u64() {
            Some(id) if id < n_vocab as u64 => Ok(id as u32),
            _ => Err(ApiError::invalid(
                param,
                format!("'{param}' must hold integer token ids below the vocabulary size {n_vocab}, got {v}"),
            )),
        })
        .collect()
}

/// The fields chat and text completions share.
#[derive(Debug, Clone)]
pub struct CommonParams {
    pub sampling: SamplingParams,
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
    /// Choices per prompt (`n`), generated side by side.
    pub n_choices: usize,
    /// llama-server's `ignore_eos`: generate up to the limit even past the
    /// model's end-of-generation token (benchmarks of fixed length).
    pub ignore_eos: bool,
}

impl CommonParams {
    /// The sampling of each of the `n` choices: the request's, with seeds
    /// `seed`, `seed + 1`, ... (from one random seed when it set none), so
    /// the choices differ and a seeded request repeats.
    pub fn choice_sampling(&self) -> Vec<SamplingParams> {
        if self.n_choices == 1 {
            return vec![self.sampling.clone()];
        }
        let base = self.sampling.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        (0..self.n_choices as u64)
            .map(|i| SamplingParams {
                seed: Some(base.wrapping_add(i)),
                ..self.sampling.clone()
            })
            .collect()
    }
}

/// At most this many choices per prompt (`n`).
pub const MAX_CHOICES: u64 = 16;

/// At most this many stop strings, each at most this long.
const MAX_STOPS: usize = 16;
const MAX_STOP_LEN: usize = 256;

/// `response_format`: `text` (or absent) leaves output free; `json_object`
/// constrains it to a JSON object; `json_schema` to JSON of the schema in
/// `json_schema.schema` (any JSON object when it has none).
fn response_format(fields: &Fields<'_>) -> Result<Option<JsonFormat>, ApiError> {
    let Some(format) = fields.object("response_format")? else {
        return Ok(None);
    };
    match format
        .string("type")
        .map_err(|e| e.in_object("response_format"))?
    {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(JsonFormat::plain(JsonShape::any_object()))),
        Some("json_schema") => {
            let spec = format
                .object("json_schema")
                .map_err(|e| e.in_object("response_format"))?
                .ok_or_else(|| {
                    ApiError::invalid(
                        "response_format",
                        "'json_schema' needs a 'json_schema' object",
                    )
                })?;
            let shape = match spec.get("schema") {
                None => JsonShape::any_object(),
                Some(schema) => JsonShape::compile(schema).map_err(|e| {
                    ApiError::invalid("response_format", format!("'json_schema.schema': {e}"))
                })?,
            };
            Ok(Some(JsonFormat::plain(shape)))
        }
        other => Err(ApiError::invalid(
            "response_format",
            format!(
                "'response_format.type' must be 'text', 'json_object' or 'json_schema', {}",
                other.map_or("and is missing".to_owned(), |kind| format!("got '{kind}'"))
            ),
        )),
    }
}

/// OpenAI's `logit_bias`: token id (as a string) to a bias in [-100, 100]
/// added to that token's logit before sampling.
fn logit_bias(fields: &Fields<'_>, n_vocab: usize) -> Result<Vec<(u32, f32)>, ApiError> {
    let Some(map) = fields.object("logit_bias")? else {
        return Ok(Vec::new());
    };
    map.0
        .iter()
        .map(|(key, value)| {
            let id = key.parse::<u32>().ok().filter(|&id| (id as usize) < n_vocab);
            let bias = value.as_f64().filter(|b| (-100.0..=100.0).contains(b));
            match (id, bias) {
                (Some(id), Some(bias)) => Ok((id, bias as f32)),
                _ => Err(ApiError::invalid(
                    "logit_bias",
                    format!(
                        "'logit_bias' maps token ids below the vocabulary size {n_vocab} to numbers in [-100, 100]; got {key:?}: {value}"
                    ),
                )),
            }
        })
        .collect()
}

pub fn common_params(
    fields: &Fields<'_>,
    defaults: &SamplingDefaults,
    model_id: &str,
    n_vocab: usize,
) -> Result<CommonParams, ApiError> {
    if let Some(model) = fields.string("model")?
        && !model.is_empty()
        && model != model_id
    {
        return Err(ApiError {
            param: Some("model".into()),
            ..ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "model_not_found",
                format!("the model '{model}' does not exist; this server serves '{model_id}'"),
            )
        });
    }
    let n_choices = fields.integer("n", 1, MAX_CHOICES)?.unwrap_or(1) as usize;
    // Both are checked; the newer name wins when both are given.
    let max_completion_tokens = fields.integer("max_completion_tokens", 1, u32::MAX as u64)?;
    let max_tokens = max_completion_tokens.or(fields.integer("max_tokens", 1, u32::MAX as u64)?);
    let stop = match fields.get("stop") {
        None => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    ApiError::invalid("stop", "'stop' must be a string or an array of strings")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::invalid(
                "stop",
                "'stop' must be a string or an array of strings",
            ));
        }
    };
    if stop.len() > MAX_STOPS || stop.iter().any(|s| s.len() > MAX_STOP_LEN) {
        return Err(ApiError::invalid(
            "stop",
            format!("'stop' takes at most {MAX_STOPS} strings of at most {MAX_STOP_LEN} bytes"),
        ));
    }
    let stream = fields.boolean("stream")?.unwrap_or(false);
    let include_usage = match fields.object("stream_options")? {
        Some(_) if !stream => {
            return Err(ApiError::invalid(
                "stream_options",
                "'stream_options' is only allowed when 'stream' is true",
            ));
        }
        Some(options) => options
            .boolean("include_usage")
            .map_err(|e| e.in_object("stream_options"))?
            .unwrap_or(false),
        None => false,
    };
    let json_format = response_format(fields)?;
    let float = |name: &str, min: f64, max: f64, default: f32| -> Result<f32, ApiError> {
        Ok(fields.number(name, min, max)?.map_or(default, |v| v as f32))
    };
    let top_p = float("top_p", 0.0, 1.0, defaults.top_p)?;
    if top_p <= 0.0 {
        return Err(ApiError::invalid("top_p", "'top_p' must be greater than 0"));
    }
    // Logits are divided by the penalty: 0 would make them infinite.
    let repeat_penalty = float("repeat_penalty", 0.0, 10.0, defaults.repeat_penalty)?;
    if repeat_penalty <= 0.0 {
        return Err(ApiError::invalid(
            "repeat_penalty",
            "'repeat_penalty' must be greater than 0 (1 leaves logits alone)",
        ));
    }
    let sampling = SamplingParams {
        temperature: float("temperature", 0.0, 2.0, defaults.temperature)?,
        top_p,
        top_k: fields
            .integer("top_k", 0, u32::MAX as u64)?
            .map_or(defaults.top_k, |v| v as u32),
        min_p: float("min_p", 0.0, 1.0, defaults.min_p)?,
        repeat_penalty,
        presence_penalty: float("presence_penalty", -2.0, 2.0, defaults.presence_penalty)?,
        frequency_penalty: float("frequency_penalty", -2.0, 2.0, defaults.frequency_penalty)?,
        seed: match fields.get("seed") {
            None => defaults.seed,
            // OpenAI's seed is any integer; negative ones map to u64 bits.
            Some(value) => Some(
                value
                    .as_i64()
                    .map(|v| v as u64)
                    .or(value.as_u64())
                    .ok_or_else(|| ApiError::invalid("seed", "'seed' must be an integer"))?,
            ),
        },
        logprobs: false,
        top_logprobs: 0,
        json_format,
        logit_bias: logit_bias(fields, n_vocab)?,
    };
    Ok(CommonParams {
        sampling,
        max_tokens: max_tokens.map(|n| n as usize).or(defaults.max_tokens),
        stop,
        stream,
        include_usage,
        n_choices,
        ignore_eos: fields.boolean("ignore_eos")?.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> SamplingDefaults {
        SamplingDefaults {
            temperature: 0.8,
            top_p: 0.95,
            top_k: 40,
            min_p: 0.05,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            seed: None,
            max_tokens: None,
        }
    }

    fn parse(body: &str) -> Result<CommonParams, ApiError> {
        let map = Fields::parse_body(body.as_bytes())?;
        common_params(&Fields(&map), &defaults(), "m", 100)
    }

    #[test]
    fn request_fields_override_defaults() {
        let p = parse(r#"{"temperature": 0, "top_k": 5, "seed": 7, "stop": "x", "max_tokens": 9}"#)
            .unwrap();
        assert_eq!(p.sampling.temperature, 0.0);
        assert_eq!(p.sampling.top_k, 5);
        assert_eq!(p.sampling.top_p, 0.95);
        assert_eq!(p.sampling.seed, Some(7));
        assert_eq!(p.stop, vec!["x"]);
        assert_eq!(p.max_tokens, Some(9));
    }

    #[test]
    fn token_ids_are_integers_below_the_vocabulary() {
        let ids: Vec<Value> = serde_json::from_str("[0, 5, 9]").unwrap();
        assert_eq!(token_ids(&ids, 10, "tokens").unwrap(), vec![0, 5, 9]);
        for bad in ["[10]", "[-1]", "[1.5]", "[\"1\"]", "[null]"] {
            let items: Vec<Value> = serde_json::from_str(bad).unwrap();
            let error = token_ids(&items, 10, "prompt").unwrap_err();
            assert_eq!(error.status, 400, "{bad}");
            assert_eq!(error.param.as_deref(), Some("prompt"), "{bad}");
            assert!(
                error.message.contains("below the vocabulary size 10"),
                "{bad}"
            );
        }
    }

    #[test]
    fn bad_values_name_the_field() {
        for (body, param) in [
            (r#"{"temperature": "hot"}"#, "temperature"),
            (r#"{"temperature": 3}"#, "temperature"),
            (r#"{"top_p": 0}"#, "top_p"),
            (r#"{"top_k": -1}"#, "top_k"),
            (r#"{"n": 0}"#, "n"),
            (r#"{"n": 17}"#, "n"),
            (r#"{"logit_bias": {"100": 1}}"#, "logit_bias"),
            (r#"{"logit_bias": {"x": 1}}"#, "logit_bias"),
            (r#"{"logit_bias": {"5": 101}}"#, "logit_bias"),
            (r#"{"logit_bias": {"5": "1"}}"#, "logit_bias"),
            (r#"{"max_tokens": 0}"#, "max_tokens"),
            (r#"{"stop": [1]}"#, "stop"),
            (r#"{"stream": "yes"}"#, "stream"),
            (r#"{"response_format": {"type": "xml"}}"#, "response_format"),
        ] {
            let error = parse(body).unwrap_err();
            assert_eq!(error.status, 400, "{body}");
            assert_eq!(error.param.as_deref(), Some(param), "{body}");
        }
        assert_eq!(parse(r#"{"model": "other"}"#).unwrap_err().status, 404);
        assert_eq!(parse("[1]").unwrap_err().status, 400);
        assert_eq!(parse("{").unwrap_err().status, 400);
    }
}
