//! Tiny random-weight models in each architecture's exact tensor names and
//! metadata, written with the project's GGUF writer, for the engine's
//! consistency and error tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use phobos_models::gguf::GgufWriter;
use phobos_models::quant::{self, GgmlType};

pub const N_EMBD: usize = 64;
pub const N_HEAD: usize = 4;
pub const N_HEAD_KV: usize = 2;
pub const HEAD_DIM: usize = 16;
pub const N_FF: usize = 96;
pub const N_LAYER: usize = 2;

/// A byte-fallback SentencePiece vocabulary: 3 specials + 256 bytes.
fn add_vocab(w: &mut GgufWriter) -> usize {
    let mut tokens = vec!["<unk>".to_owned(), "<s>".into(), "</s>".into()];
    let mut types = vec![2i32, 3, 3];
    for byte in 0..=255u8 {
        tokens.push(format!("<0x{byte:02X}>"));
        types.push(6);
    }
    let scores = vec![0.0f32; tokens.len()];
    w.add("tokenizer.ggml.model", "llama").unwrap();
    let texts: Vec<&str> = tokens.iter().map(String::as_str).collect();
    w.add_array("tokenizer.ggml.tokens", texts).unwrap();
    w.add_array("tokenizer.ggml.scores", scores).unwrap();
    w.add_array("tokenizer.ggml.token_type", types).unwrap();
    w.add("tokenizer.ggml.bos_token_id", 1u32).unwrap();
    w.add("tokenizer.ggml.eos_token_id", 2u32).unwrap();
    tokens.len()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % 20001) as f32 / 10000.0 - 1.0
    }
}

fn tensor(
    w: &mut GgufWriter,
    rng: &mut Rng,
    name: &str,
    dims: &[u64],
    ty: GgmlType,
    scale: f32,
    offset: f32,
) {
    let n: u64 = dims.iter().product();
    let values: Vec<f32> = (0..n).map(|_| offset + scale * rng.next()).collect();
    let bytes = if ty == GgmlType::F32 {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    } else {
        let mut out = Vec::new();
        quant::quantize(ty, &values, &mut out).unwrap();
        out
    };
    w.add_tensor(name, dims, ty, bytes).unwrap();
}

/// Writes a tiny `arch` model (gemma3, llama, qwen2, qwen3, qwen35) to `dir`;
/// `skip` leaves one tensor out, `matrix_type` is the weights' format.
pub fn tiny_arch_model(
    dir: &Path,
    arch: &str,
    skip: Option<&str>,
    matrix_type: GgmlType,
) -> PathBuf {
    let mut w = GgufWriter::new();
    w.add("general.architecture", arch).unwrap();
    let n_vocab = add_vocab(&mut w);
    let key = |k: &str| format!("{arch}.{k}");
    w.add(&key("block_count"), N_LAYER as u32).unwrap();
    w.add(&key("context_length"), 256u32).unwrap();
    w.add(&key("embedding_length"), N_EMBD as u32).unwrap();
    w.add(&key("feed_forward_length"), N_FF as u32).unwrap();
    w.add(&key("attention.head_count"), N_HEAD as u32).unwrap();
    w.add(&key("attention.head_count_kv"), N_HEAD_KV as u32)
        .unwrap();
    w.add(&key("attention.key_length"), HEAD_DIM as u32)
        .unwrap();
    w.add(&key("attention.value_length"), HEAD_DIM as u32)
        .unwrap();
    w.add(&key("attention.layer_norm_rms_epsilon"), 1e-6f32)
        .unwrap();
    w.add(&key("rope.freq_base"), 10000.0f32).unwrap();
    if arch == "qwen35" {
        // Layer 0 gated DeltaNet (2 key heads, 4 value heads of 16), layer 1
        // gated attention.
        w.add(&key("full_attention_interval"), 2u32).unwrap();
        w.add(&key("rope.dimension_count"), HEAD_DIM as u32)
            .unwrap();
        w.add_array(&key("rope.dimension_sections"), vec![3i32, 3, 2, 0])
            .unwrap();
        w.add(&key("ssm.conv_kernel"), 4u32).unwrap();
        w.add(&key("ssm.state_size"), 16u32).unwrap();
        w.add(&key("ssm.group_count"), 2u32).unwrap();
        w.add(&key("ssm.time_step_rank"), 4u32).unwrap();
        w.add(&key("ssm.inner_size"), 64u32).unwrap();
    }
    if arch == "gemma3" {
        w.add(&key("attention.sliding_window"), 4u32).unwrap();
        w.add(&key("attention.sliding_window_pattern"), 2u32)
            .unwrap();
    }
    let mut rng = Rng(0x5EED ^ arch.len() as u64);
    let mut tensors: Vec<(String, Vec<u64>, GgmlType, f32, f32)> = vec![
        (
            "token_embd.weight".into(),
            vec![N_EMBD as u64, n_vocab as u64],
            matrix_type,
            1.0,
            0.0,
        ),
        (
            "output_norm.weight".into(),
            vec![N_EMBD as u64],
            GgmlType::F32,
            0.2,
            1.0,
        ),
    ];
    let (q, kv) = ((N_HEAD * HEAD_DIM) as u64, (N_HEAD_KV * HEAD_DIM) as u64);
    let d = N_EMBD as u64;
    for il in 0..N_LAYER {
        let mut add = |name: &str, dims: Vec<u64>, ty: GgmlType, scale: f32, offset: f32| {
            tensors.push((format!("blk.{il}.{name}"), dims, ty, scale, offset));
        };
        add("attn_norm.weight", vec![d], GgmlType::F32, 0.2, 1.0);
        if arch == "qwen35" {
            qwen35_layer(il, &mut add, matrix_type);
            continue;
        }
        add("attn_q.weight", vec![d, q], matrix_type, 0.3, 0.0);
        add("attn_k.weight", vec![d, kv], matrix_type, 0.3, 0.0);
        add("attn_v.weight", vec![d, kv], matrix_type, 0.3, 0.0);
        add("attn_output.weight", vec![q, d], matrix_type, 0.3, 0.0);
        add("ffn_norm.weight", vec![d], GgmlType::F32, 0.2, 1.0);
        add(
            "ffn_gate.weight",
            vec![d, N_FF as u64],
            matrix_type,
            0.3,
            0.0,
        );
        add("ffn_up.weight", vec![d, N_FF as u64], matrix_type, 0.3, 0.0);
        add(
            "ffn_down.weight",
            vec![N_FF as u64, d],
            matrix_type,
            0.3,
            0.0,
        );
        if arch == "qwen2" {
            add("attn_q.bias", vec![q], GgmlType::F32, 0.1, 0.0);
            add("attn_k.bias", vec![kv], GgmlType::F32, 0.1, 0.0);
            add("attn_v.bias", vec![kv], GgmlType::F32, 0.1, 0.0);
        }
        if arch == "qwen3" || arch == "gemma3" {
            add(
                "attn_q_norm.weight",
                vec![HEAD_DIM as u64],
                GgmlType::F32,
                0.2,
                1.0,
            );
            add(
                "attn_k_norm.weight",
                vec![HEAD_DIM as u64],
                GgmlType::F32,
                0.2,
                1.0,
            );
        }
        if arch == "gemma3" {
            add(
                "post_attention_norm.weight",
                vec![d],
                GgmlType::F32,
                0.2,
                1.0,
            );
            add("post_ffw_norm.weight", vec![d], GgmlType::F32, 0.2, 1.0);
        }
    }
    if arch != "gemma3" {
        tensors.push((
            "output.weight".into(),
            vec![d, n_vocab as u64],
            matrix_type,
            0.5,
            0.0,
        ));
    }
    for (name, dims, ty, scale, offset) in tensors {
        if skip == Some(name.as_str()) {
            continue;
        }
        tensor(&mut w, &mut rng, &name, &dims, ty, scale, offset);
    }
    let path = dir.join(format!("tiny-{arch}.gguf"));
    w.write_file(&path).unwrap();
    path
}

/// A qwen35 block's tensors after `attn_norm`: layer 0 linear attention,
/// layer 1 gated full attention; `post_attention_norm` and a SwiGLU FFN.
/// Records one tensor: name, dims, format, value scale and offset.
type AddTensor<'a> = dyn FnMut(&str, Vec<u64>, GgmlType, f32, f32) + 'a;

fn qwen35_layer(il: usize, add: &mut AddTensor<'_>, ty: GgmlType) {
    let (d, n_ff) = (N_EMBD as u64, N_FF as u64);
    if il == 0 {
        let (key_dim, value_dim, n_v) = (32u64, 64u64, 4u64);
        let channels = 2 * key_dim + value_dim;
        add("attn_qkv.weight", vec![d, channels], ty, 0.3, 0.0);
        add("attn_gate.weight", vec![d, value_dim], ty, 0.3, 0.0);
        add(
            "ssm_conv1d.weight",
            vec![4, channels],
            GgmlType::F32,
            0.5,
            0.0,
        );
        add("ssm_dt.bias", vec![n_v], GgmlType::F32, 0.5, 0.0);
        // ssm_a holds -exp(A_log): negative.
        add("ssm_a", vec![n_v], GgmlType::F32, 0.5, -1.0);
        add("ssm_beta.weight", vec![d, n_v], ty, 0.3, 0.0);
        add("ssm_alpha.weight", vec![d, n_v], ty, 0.3, 0.0);
        add("ssm_norm.weight", vec![16], GgmlType::F32, 0.2, 1.0);
        add("ssm_out.weight", vec![value_dim, d], ty, 0.3, 0.0);
    } else {
        let (q, kv) = ((N_HEAD * HEAD_DIM) as u64, (N_HEAD_KV * HEAD_DIM) as u64);
        add("attn_q.weight", vec![d, 2 * q], ty, 0.3, 0.0);
        add("attn_k.weight", vec![d, kv], ty, 0.3, 0.0);
        add("attn_v.weight", vec![d, kv], ty, 0.3, 0.0);
        add(
            "attn_q_norm.weight",
            vec![HEAD_DIM as u64],
            GgmlType::F32,
            0.2,
            1.0,
        );
        add(
            "attn_k_norm.weight",
            vec![HEAD_DIM as u64],
            GgmlType::F32,
            0.2,
            1.0,
        );
        add("attn_output.weight", vec![q, d], ty, 0.3, 0.0);
    }
    add(
        "post_attention_norm.weight",
        vec![d],
        GgmlType::F32,
        0.2,
        1.0,
    );
    add("ffn_gate.weight", vec![d, n_ff], ty, 0.3, 0.0);
    add("ffn_up.weight", vec![d, n_ff], ty, 0.3, 0.0);
    add("ffn_down.weight", vec![n_ff, d], ty, 0.3, 0.0);
}

/// A fresh directory for one test, removed when the guard drops.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("phobos-engine-{name}-"))
        .tempdir()
        .unwrap()
}
