//! POST /v1/completions (text in, text out): a prompt given as a string, a
//! list of strings, a list of token ids or a list of such lists (one choice
//! per prompt, generated concurrently), `echo`, and log-probabilities in the
//! legacy shape.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};

use super::body::JsonBody;
use super::chat::tokenize_prompt;
use super::respond::{Choice, ChoiceFormat, Envelope, Fields as RespondFields, fields, respond};
use crate::server::backend::ModelInfo;
use crate::server::error::ApiError;
use crate::server::generate::{Generation, TokenLogprobs};
use crate::server::params::{Fields, common_params, token_ids};
use crate::server::state::AppState;

/// Prompts one request may carry (each takes a queue place).
const MAX_PROMPTS: usize = 32;
/// At most this many completions (prompts x `n`) per request.
const MAX_GENERATIONS: usize = 64;

pub async fn completions(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let loaded = state.loaded()?;
    let model = loaded.model.clone();
    let fields = Fields(&body);
    let mut params = common_params(
        &fields,
        &state.defaults,
        model.model_id(),
        model.tokenizer().n_tokens(),
    )?;
    // Completions' `logprobs` is how many alternatives to report (0..=5).
    if let Some(n) = fields.integer("logprobs", 0, 5)? {
        params.sampling.logprobs = true;
        params.sampling.top_logprobs = n as u32;
    }
    let echo = fields.boolean("echo")?.unwrap_or(false);
    if echo && params.sampling.logprobs {
        return Err(ApiError::invalid(
            "echo",
            "'echo' with 'logprobs' would need the prompt's log-probabilities, which this \
             server does not compute; ask for one or the other",
        ));
    }
    if fields.string("suffix")?.is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::invalid(
            "suffix",
            "'suffix' (fill in the middle) is not supported; leave it out",
        ));
    }
    // `best_of` above `n` would generate candidates and return the best
    // `n`; only the plain case (every candidate returned) is served.
    if let Some(best_of) = fields.integer("best_of", 0, u64::MAX)?
        && best_of != 1
        && best_of != params.n_choices as u64
    {
        return Err(ApiError::invalid(
            "best_of",
            format!(
                "'best_of' must be 1 or equal to 'n' ({}), got {best_of}",
                params.n_choices
            ),
        ));
    }
    let prompts = {
        let (model, prompt) = (model.clone(), fields.get("prompt").cloned());
        super::off_runtime(move || parse_prompts(&*model, prompt.as_ref())).await?
    };
    let n_generations = prompts.len() * params.n_choices;
    if n_generations > MAX_GENERATIONS {
        return Err(ApiError::invalid(
            "n",
            format!(
                "{} prompts x 'n' {} asks for {n_generations} completions; at most {MAX_GENERATIONS} per request",
                prompts.len(),
                params.n_choices
            ),
        ));
    }
    loaded.scheduler.check_fits(n_generations)?;
    // OpenAI's order: the `n` choices of the first prompt, then the next's.
    let mut choices = Vec::with_capacity(prompts.len() * params.n_choices);
    for prompt in prompts {
        for sampling in params.choice_sampling() {
            let generation = Generation::start(
                "prompt",
                model.clone(),
                &loaded.scheduler,
                prompt.ids.clone(),
                sampling,
                params.max_tokens,
                params.stop.clone(),
                params.ignore_eos,
            )?;
            let echo_text = if echo {
                prompt.text.clone()
            } else {
                String::new()
            };
            choices.push(Choice {
                generation,
                format: TextFormat::new(echo_text, params.sampling.logprobs),
            });
        }
    }
    respond(
        Envelope::text(model.model_id()).with_choices_per_prompt(params.n_choices),
        choices,
        params.stream,
        params.include_usage,
    )
    .await
}

/// One prompt: its tokens and its text (what `echo` repeats).
#[derive(Debug)]
struct Prompt {
    ids: Vec<u32>,
    text: String,
}

fn parse_prompts(model: &dyn ModelInfo, value: Option<&Value>) -> Result<Vec<Prompt>, ApiError> {
    let invalid = || {
        ApiError::invalid(
            "prompt",
            "'prompt' must be a string, a list of strings, a list of token ids, or a list of \
             lists of token ids",
        )
    };
    let from_text = |text: &str| {
        Ok(Prompt {
            ids: tokenize_prompt(model, text)?,
            text: text.to_owned(),
        })
    };
    let from_ids = |items: &[Value]| {
        let ids = token_ids(items, model.tokenizer().n_tokens(), "prompt")?;
        let text = model.tokenizer().decode(&ids, true);
        Ok(Prompt { ids, text })
    };
    let prompts = match value {
        None => return Err(ApiError::invalid("prompt", "'prompt' is required")),
        Some(Value::String(text)) => vec![from_text(text)?],
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(ApiError::invalid("prompt", "'prompt' must not be empty"));
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => vec![from_ids(items)?],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => from_text(text),
                Value::Array(ids) => from_ids(ids),
                _ => Err(invalid()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(invalid()),
    };
    if prompts.len() > MAX_PROMPTS {
        return Err(ApiError::invalid(
            "prompt",
            format!(
                "'prompt' holds {} prompts; send at most {MAX_PROMPTS} per request",
                prompts.len()
            ),
        ));
    }
    Ok(prompts)
}

/// A text choice: `text` (after the echoed prompt) and logprobs as the
/// legacy parallel lists, whose `text_offset` counts characters from the
/// start of the choice's text.
pub struct TextFormat {
    echo: String,
    logprobs: bool,
    text: String,
    entries: Vec<TokenLogprobs>,
    /// Characters before the next streamed token.
    offset_chars: usize,
}

impl TextFormat {
    fn new(echo: String, logprobs: bool) -> Self {
        Self {
            offset_chars: echo.chars().count(),
            echo,
            logprobs,
            text: String::new(),
            entries: Vec::new(),
        }
    }
}

impl ChoiceFormat for TextFormat {
    fn opening(&mut self) -> Vec<RespondFields> {
        if self.echo.is_empty() {
            return Vec::new();
        }
        vec![fields([("text", self.echo.clone().into())])]
    }

    fn stream_text(&mut self, text: &str, entries: Vec<TokenLogprobs>) -> Vec<RespondFields> {
        if text.is_empty() && entries.is_empty() {
            return Vec::new();
        }
        let logprobs = if self.logprobs {
            logprobs_json(&entries, &mut self.offset_chars)
        } else {
            Value::Null
        };
        vec![fields([("text", text.into()), ("logprobs", logprobs)])]
    }

    fn stream_end(&mut self) -> Vec<RespondFields> {
        Vec::new()
    }

    fn finish_fields(&self) -> RespondFields {
        fields([("text", "".into())])
    }

    fn absorb(&mut self, text: &str, entries: Vec<TokenLogprobs>) {
        self.text.push_str(text);
        self.entries.extend(entries);
    }

    fn complete(&mut self) -> RespondFields {
        let logprobs = if self.logprobs {
            logprobs_json(&self.entries, &mut self.offset_chars)
        } else {
            Value::Null
        };
        let text = format!("{}{}", self.echo, self.text);
        fields([("text", text.into()), ("logprobs", logprobs)])
    }

    fn called_tools(&self) -> bool {
        false
    }
}

/// The legacy completions shape: parallel lists, one entry per token.
fn logprobs_json(entries: &[TokenLogprobs], offset_chars: &mut usize) -> Value {
    let mut offsets = Vec::with_capacity(entries.len());
    for entry in entries {
        offsets.push(*offset_chars);
        *offset_chars += entry.token.chars().count();
    }
    json!({
        "tokens": entries.iter().map(|e| e.token.clone()).collect::<Vec<_>>(),
        "token_logprobs": entries.iter().map(|e| e.logprob).collect::<Vec<_>>(),
        "top_logprobs": entries.iter().map(|e| {
            e.top.iter().map(|(token, _, logprob)| (token.clone(), json!(logprob))).collect::<serde_json::Map<_, _>>()
        }).collect::<Vec<_>>(),
        "text_offset": offsets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(token: &str) -> TokenLogprobs {
        TokenLogprobs {
            token: token.into(),
            bytes: token.as_bytes().to_vec(),
            logprob: -0.5,
            top: vec![(token.into(), token.as_bytes().to_vec(), -0.5)],
        }
    }

    #[test]
    fn text_offsets_count_characters_after_the_echo() {
        let mut format = TextFormat::new("héllo ".into(), true);
        assert_eq!(format.opening()[0]["text"], "héllo ");
        let first = format.stream_text("wö", vec![entry("w"), entry("ö")]);
        assert_eq!(first[0]["logprobs"]["text_offset"], json!([6, 7]));
        let second = format.stream_text("rld", vec![entry("rld")]);
        assert_eq!(second[0]["logprobs"]["text_offset"], json!([8]));
        assert_eq!(second[0]["logprobs"]["tokens"], json!(["rld"]));
        assert!(format.stream_text("", Vec::new()).is_empty());

        let mut whole = TextFormat::new("héllo ".into(), true);
        whole.absorb("wö", vec![entry("w"), entry("ö")]);
        whole.absorb("rld", vec![entry("rld")]);
        let choice = whole.complete();
        assert_eq!(choice["text"], "héllo wörld");
        assert_eq!(choice["logprobs"]["text_offset"], json!([6, 7, 8]));
        assert_eq!(choice["logprobs"]["top_logprobs"][2], json!({"rld": -0.5}));
    }

    #[test]
    fn without_logprobs_the_field_is_null_and_no_echo_sends_nothing_first() {
        let mut format = TextFormat::new(String::new(), false);
        assert!(format.opening().is_empty());
        let chunks = format.stream_text("hi", Vec::new());
        assert_eq!(chunks[0]["logprobs"], Value::Null);
        format.absorb("hi", Vec::new());
        assert_eq!(format.complete()["logprobs"], Value::Null);
    }
}
