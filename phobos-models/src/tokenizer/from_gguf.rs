//! Building a tokenizer from a GGUF file's `tokenizer.ggml.*` metadata.

use super::{TokenType, Tokenizer, TokenizerConfig, TokenizerError};
use crate::gguf::{Gguf, Value};

fn optional_u32(gguf: &Gguf, key: &str) -> Result<Option<u32>, TokenizerError> {
    if gguf.contains_key(key) {
        Ok(Some(gguf.get_u32(key)?))
    } else {
        Ok(None)
    }
}

fn optional_bool(gguf: &Gguf, key: &str) -> Result<Option<bool>, TokenizerError> {
    if gguf.contains_key(key) {
        Ok(Some(gguf.get_bool(key)?))
    } else {
        Ok(None)
    }
}

impl TokenizerConfig {
    /// Reads the tokenizer metadata of a GGUF file.
    pub fn from_gguf(gguf: &Gguf) -> Result<Self, TokenizerError> {
        let model = gguf.get_str("tokenizer.ggml.model")?;
        let mut config =
            TokenizerConfig::new(model, gguf.get_str_array("tokenizer.ggml.tokens")?.to_vec());
        if gguf.contains_key("tokenizer.ggml.pre") {
            config.pre = Some(gguf.get_str("tokenizer.ggml.pre")?.to_owned());
        }
        if let Some(Value::Array(scores)) = gguf.get("tokenizer.ggml.scores") {
            config.scores = match scores.as_f32() {
                Some(floats) => floats.to_vec(),
                None => (0..scores.len())
                    .map(|i| scores.integer_at(i).unwrap_or(0) as f32)
                    .collect(),
            };
        }
        if gguf.contains_key("tokenizer.ggml.token_type") {
            config.token_types = gguf
                .get_i32_array("tokenizer.ggml.token_type")?
                .iter()
                .map(|&code| TokenType::from_gguf(code))
                .collect();
        }
        if gguf.contains_key("tokenizer.ggml.merges") {
            config.merges = gguf.get_str_array("tokenizer.ggml.merges")?.to_vec();
        }
        config.bos_id = optional_u32(gguf, "tokenizer.ggml.bos_token_id")?;
        config.eos_id = optional_u32(gguf, "tokenizer.ggml.eos_token_id")?;
        config.unk_id = optional_u32(gguf, "tokenizer.ggml.unknown_token_id")?;
        config.sep_id = optional_u32(gguf, "tokenizer.ggml.seperator_token_id")?;
        config.pad_id = optional_u32(gguf, "tokenizer.ggml.padding_token_id")?;
        config.eot_id = optional_u32(gguf, "tokenizer.ggml.eot_token_id")?;
        config.eom_id = optional_u32(gguf, "tokenizer.ggml.eom_token_id")?;
        config.mask_id = optional_u32(gguf, "tokenizer.ggml.mask_token_id")?;
        // The prefix/suffix/middle keys are the older names of the first three
        // FIM ids; llama.cpp lets them win when both are present.
        for (slot, key, old_key) in [
            (&mut config.fim_pre_id, "fim_pre", Some("prefix")),
            (&mut config.fim_suf_id, "fim_suf", Some("suffix")),
            (&mut config.fim_mid_id, "fim_mid", Some("middle")),
            (&mut config.fim_pad_id, "fim_pad", None),
            (&mut config.fim_rep_id, "fim_rep", None),
            (&mut config.fim_sep_id, "fim_sep", None),
        ] {
            *slot = optional_u32(gguf, &format!("tokenizer.ggml.{key}_token_id"))?;
            if let Some(old_key) = old_key
                && let Some(id) = optional_u32(gguf, &format!("tokenizer.ggml.{old_key}_token_id"))?
            {
                *slot = Some(id);
            }
        }
        config.add_bos = optional_bool(gguf, "tokenizer.ggml.add_bos_token")?;
        config.add_eos = optional_bool(gguf, "tokenizer.ggml.add_eos_token")?;
        config.add_space_prefix = optional_bool(gguf, "tokenizer.ggml.add_space_prefix")?;
        if gguf.contains_key("general.name") {
            config.model_name = Some(gguf.get_str("general.name")?.to_owned());
        }
        if gguf.contains_key("general.architecture") {
            config.architecture = Some(gguf.get_str("general.architecture")?.to_owned());
        }
        Ok(config)
    }
}

impl Tokenizer {
    /// The tokenizer a GGUF file describes in its own metadata.
    pub fn from_gguf(gguf: &Gguf) -> Result<Self, TokenizerError> {
        Tokenizer::new(TokenizerConfig::from_gguf(gguf)?)
    }
}
