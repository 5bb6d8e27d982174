//! What llama.cpp's vocab loader decides after reading a file, whatever the
//! file says: default special-token ids per tokenizer model, special ids
//! found by token text when the metadata lacks them, "control-looking"
//! tokens promoted to control, the end-of-generation (EOG) set, and the
//! per-model strip attributes. Converted files often get token types wrong
//! (Qwen2's `</s>` is typed normal), and llama.cpp is the reference both for
//! how text splits and for when generation stops, so the same rules apply
//! here.

use std::collections::{BTreeSet, HashMap};

use super::vocab::TokenAttrs;
use super::{TokenizerConfig, TokenizerModel};

/// The ids of the special roles, once the load-time rules have run. `None`
/// where the model has no such token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpecialIds {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// End of turn (`<|eot_id|>`, `<|im_end|>`, `<end_of_turn>`, ...).
    pub eot: Option<u32>,
    /// End of message (`<|eom_id|>`).
    pub eom: Option<u32>,
    pub unk: Option<u32>,
    pub sep: Option<u32>,
    pub pad: Option<u32>,
    pub mask: Option<u32>,
    /// Fill-in-the-middle prefix, suffix, middle, pad, repository and file
    /// separator.
    pub fim_pre: Option<u32>,
    pub fim_suf: Option<u32>,
    pub fim_mid: Option<u32>,
    pub fim_pad: Option<u32>,
    pub fim_rep: Option<u32>,
    pub fim_sep: Option<u32>,
}

/// The outcome of the load-time rules.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    pub special: SpecialIds,
    /// Sorted, without duplicates.
    pub end_of_generation: Vec<u32>,
}

/// Texts that make a token the end-of-turn token when the metadata names
/// none (llama.cpp's list, same order).
const EOT_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
];
const EOM_TEXTS: &[&str] = &["<|eom_id|>"];
const FIM_PRE_TEXTS: &[&str] = &[
    "<|fim_prefix|>",
    "<fim-prefix>",
    "<fim_prefix>",
    "<｜fim▁begin｜>",
    "<PRE>",
    "▁<PRE>",
    "<|code_prefix|>",
    "<|prefix|>",
];
const FIM_SUF_TEXTS: &[&str] = &[
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<｜fim▁hole｜>",
    "<SUF>",
    "▁<SUF>",
    "<|code_suffix|>",
    "<|suffix|>",
];
const FIM_MID_TEXTS: &[&str] = &[
    "<|fim_middle|>",
    "<fim-middle>",
    "<fim_middle>",
    "<｜fim▁end｜>",
    "<MID>",
    "▁<MID>",
    "<|code_middle|>",
    "<|middle|>",
];
const FIM_PAD_TEXTS: &[&str] = &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"];
const FIM_REP_TEXTS: &[&str] = &[
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<REPO>",
    "<reponame>",
];
const FIM_SEP_TEXTS: &[&str] = &["<|file_sep|>"];

/// Texts that always end generation and are always control tokens.
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];

/// gpt-oss's structural tokens, which llama.cpp always renders (user-defined).
const ALWAYS_RENDERED: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/// The ids llama.cpp assumes before it reads the metadata.
fn default_ids(model: TokenizerModel, config: &TokenizerConfig) -> SpecialIds {
    let mut ids = SpecialIds::default();
    match model {
        TokenizerModel::SentencePiece => {
            ids.bos = Some(1);
            ids.eos = Some(2);
            ids.unk = Some(0);
        }
        TokenizerModel::WordPiece => {
            ids.bos = Some(101);
            ids.unk = Some(100);
            ids.sep = Some(102);
            ids.pad = Some(0);
            ids.mask = Some(103);
        }
        TokenizerModel::Bpe if config.model != "gemma4" => {
            ids.bos = Some(11);
            ids.eos = Some(11);
        }
        TokenizerModel::Bpe => {}
    }
    ids
}

/// A metadata id wins when it is inside the vocabulary; a default that is
/// outside is dropped. llama.cpp warns and keeps the default for a bad
/// metadata id rather than refusing the file, and so does this.
fn resolve(role: &str, default: Option<u32>, metadata: Option<u32>, n: usize) -> Option<u32> {
    let default = default.filter(|&id| (id as usize) < n);
    match metadata {
        Some(id) if (id as usize) < n => Some(id),
        Some(id) => {
            tracing::warn!(
                role,
                id,
                vocab_len = n,
                "special token id outside the vocabulary; using the default"
            );
            default
        }
        None => default,
    }
}

/// Runs every load-time rule: fills in special ids and updates `attrs`.
pub(crate) fn settle(
    model: TokenizerModel,
    config: &TokenizerConfig,
    texts: &[String],
    ids: &HashMap<String, u32>,
    attrs: &mut [TokenAttrs],
) -> Settled {
    let n = texts.len();
    let d = default_ids(model, config);
    let mut s = SpecialIds {
        bos: resolve("bos", d.bos, config.bos_id, n),
        eos: resolve("eos", d.eos, config.eos_id, n),
        eot: resolve("eot", d.eot, config.eot_id, n),
        eom: resolve("eom", d.eom, config.eom_id, n),
        unk: resolve("unk", d.unk, config.unk_id, n),
        sep: resolve("sep", d.sep, config.sep_id, n),
        pad: resolve("pad", d.pad, config.pad_id, n),
        mask: resolve("mask", d.mask, config.mask_id, n),
        fim_pre: resolve("fim_pre", d.fim_pre, config.fim_pre_id, n),
        fim_suf: resolve("fim_suf", d.fim_suf, config.fim_suf_id, n),
        fim_mid: resolve("fim_mid", d.fim_mid, config.fim_mid_id, n),
        fim_pad: resolve("fim_pad", d.fim_pad, config.fim_pad_id, n),
        fim_rep: resolve("fim_rep", d.fim_rep, config.fim_rep_id, n),
        fim_sep: resolve("fim_sep", d.fim_sep, config.fim_sep_id, n),
    };

    // A role the metadata leaves empty takes the token with a known text, and
    // that token becomes control. llama.cpp walks a hash map here, so with
    // several candidates its pick is formally unspecified; on the vocabularies
    // that have several (Llama 3, Phi-3, Qwen2) it is the earliest text in its
    // list, which is the rule here.
    for (slot, candidates) in [
        (&mut s.eot, EOT_TEXTS),
        (&mut s.eom, EOM_TEXTS),
        (&mut s.fim_pre, FIM_PRE_TEXTS),
        (&mut s.fim_suf, FIM_SUF_TEXTS),
        (&mut s.fim_mid, FIM_MID_TEXTS),
        (&mut s.fim_pad, FIM_PAD_TEXTS),
        (&mut s.fim_rep, FIM_REP_TEXTS),
        (&mut s.fim_sep, FIM_SEP_TEXTS),
    ] {
        if slot.is_some() {
            continue;
        }
        if let Some(id) = candidates.iter().find_map(|t| ids.get(*t).copied()) {
            *slot = Some(id);
            attrs[id as usize].control = true;
        }
    }

    // Control tokens named "unused" are placeholders: never rendered.
    for (text, attr) in texts.iter().zip(attrs.iter_mut()) {
        if attr.control && text.contains("unused") {
            attr.unused = true;
        }
    }

    let mut eog: BTreeSet<u32> = [s.fim_pad, s.fim_rep, s.fim_sep]
        .into_iter()
        .flatten()
        .collect();
    for text in EOG_TEXTS {
        if let Some(&id) = ids.get(*text) {
            eog.insert(id);
            attrs[id as usize].control = true;
        }
    }
    for text in ALWAYS_RENDERED {
        if let Some(&id) = ids.get(*text) {
            attrs[id as usize] = TokenAttrs {
                user_defined: true,
                ..TokenAttrs::default()
            };
        }
    }
    eog.extend([s.eos, s.eot, s.eom].into_iter().flatten());

    let has = |eog: &BTreeSet<u32>, text: &str| ids.get(text).is_some_and(|id| eog.contains(id));
    // gpt-oss (and solar-open) end a message with <|end|> but keep
    // generating after it; <|return|>/<|call|> end generation there.
    let call = has(&eog, "<|call|>") || has(&eog, "<|calls|>");
    if call
        && (has(&eog, "<|return|>") || has(&eog, "<|flush|>"))
        && let Some(&end) = ids.get("<|end|>")
        && eog.remove(&end)
    {
        attrs[end as usize] = TokenAttrs {
            user_defined: true,
            ..TokenAttrs::default()
        };
    }
    // Gemma 4 and PLaMo use </s> as ordinary text.
    if (has(&eog, "<|tool_response>") || has(&eog, "<|plamo:eos|>"))
        && let Some(&s_id) = ids.get("</s>")
        && eog.remove(&s_id)
    {
        attrs[s_id as usize] = TokenAttrs::from_type(super::TokenType::Normal);
    }

    apply_strip_rules(config, ids, attrs);
    Settled {
        special: s,
        end_of_generation: eog.into_iter().collect(),
    }
}

/// Whitespace-stripping attributes llama.cpp sets by model, tokenizer or
/// architecture name (the files carry no such attributes).
fn apply_strip_rules(
    config: &TokenizerConfig,
    ids: &HashMap<String, u32>,
    attrs: &mut [TokenAttrs],
) {
    let contains_any = |s: &str, subs: &[&str]| subs.iter().any(|sub| s.contains(sub));
    let pre = config.pre.as_deref().unwrap_or("");
    let arch = config.architecture.as_deref().unwrap_or("");
    // llama.cpp lowercases ASCII only.
    let name = config
        .model_name
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let set = |attrs: &mut [TokenAttrs], text: &str, f: fn(&mut TokenAttrs)| {
        if let Some(&id) = ids.get(text) {
            f(&mut attrs[id as usize]);
        }
    };
    if contains_any(pre, &["jina-v2-de", "jina-v2-es", "jina-v2-code"])
        || contains_any(arch, &["nomic-bert-moe", "jina-bert-v3"])
    {
        set(attrs, "<mask>", |a| a.lstrip = true);
    } else if contains_any(&name, &["phi-3", "phi3"]) {
        // Phi-3's special tokens swallow the whitespace after them.
        for attr in attrs.iter_mut().filter(|a| a.is_special()) {
            attr.rstrip = true;
        }
        set(attrs, "</s>", |a| a.rstrip = true);
        for text in ["<unk>", "<s>", "<|endoftext|>"] {
            set(attrs, text, |a| a.rstrip = false);
        }
    } else if name.contains("modern-bert") {
        set(attrs, "[MASK]", |a| a.lstrip = true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{TokenType, Tokenizer};

    fn tokenizer(model: &str, texts: &[&str], types: &[TokenType]) -> Tokenizer {
        let mut config = TokenizerConfig::new(model, texts.iter().map(|t| t.to_string()).collect());
        config.token_types = types.to_vec();
        if model == "gpt2" {
            config.pre = Some("qwen2".into());
        }
        Tokenizer::new(config).unwrap()
    }

    #[test]
    fn control_looking_tokens_become_control_and_end_generation() {
        use TokenType::{Control, Normal};
        let t = tokenizer(
            "gpt2",
            &[
                "a",
                "b",
                "</s>",
                "<|endoftext|>",
                "<|im_end|>",
                "<|fim_prefix|>",
            ],
            &[Normal, Normal, Normal, Control, Normal, Normal],
        );
        for id in [2, 4, 5] {
            assert!(t.token_attrs(id).control, "{id}");
        }
        // </s>, <|endoftext|> and <|im_end|>; not the FIM prefix.
        assert_eq!(t.end_of_generation_ids(), &[2, 3, 4]);
        assert!(t.is_end_of_generation(4) && !t.is_end_of_generation(5));
        // <|im_end|> comes before <|endoftext|> in llama.cpp's list.
        assert_eq!(t.special_ids().eot, Some(4));
        assert_eq!(t.special_ids().fim_pre, Some(5));
        assert_eq!(t.encode("</s>", false, true).unwrap(), vec![2]);
    }

    #[test]
    fn gpt_oss_end_is_not_end_of_generation() {
        use TokenType::Control;
        let t = tokenizer(
            "gpt2",
            &["<|return|>", "<|call|>", "<|end|>", "<|channel|>"],
            &[Control; 4],
        );
        assert_eq!(t.end_of_generation_ids(), &[0, 1]);
        let end = t.token_attrs(2);
        assert!(end.user_defined && !end.control);
        let channel = t.token_attrs(3);
        assert!(channel.user_defined && !channel.control);
    }

    #[test]
    fn gemma4_s_is_normal_text() {
        use TokenType::{Control, Normal};
        let t = tokenizer(
            "gpt2",
            &["</s>", "<|tool_response>", "x"],
            &[Control, Normal, Normal],
        );
        assert_eq!(t.end_of_generation_ids(), &[1]);
        assert!(t.token_attrs(0).normal && !t.token_attrs(0).control);
    }

    #[test]
    fn defaults_fill_missing_ids_and_bad_metadata_ids_fall_back() {
        let texts: Vec<String> = (0..4).map(|i| format!("t{i}")).collect();
        let mut config = TokenizerConfig::new("llama", texts);
        config.eos_id = Some(99);
        let t = Tokenizer::new(config).unwrap();
        let s = t.special_ids();
        assert_eq!((s.bos, s.eos, s.unk), (Some(1), Some(2), Some(0)));
        assert_eq!(t.end_of_generation_ids(), &[2]);
    }
}
