//! Every architecture against llama.cpp on a tiny random-weight model
//! (`tests/golden/arch/`, made by `scripts/gen_arch_goldens.py`).
//!
//! Each model is rebuilt here from its committed skeleton (metadata and
//! layer tensors in F32/F16/Q8_0/Q4_K), the tokenizer keys of a llama.cpp
//! vocab file and a generated F16 embedding (the generator is the script's,
//! checked by checksum), then:
//! - the full logits at the first and last position of each prompt agree
//!   with llama.cpp's within [`logit_tolerance`];
//! - over 32 greedy steps, teacher-forced on llama.cpp's tokens, our argmax
//!   equals llama.cpp's wherever its top-2 logit gap is clear of the two
//!   sides' numerics ([`clear_gap`]);
//! - a batch of several sessions, a prompt fed in pieces, and a session
//!   truncated and fed again (prefix reuse; recurrent layers restore a
//!   checkpoint and replay) give the logits of one whole prompt alone;
//! - our tokenizer gives llama.cpp's prompt ids.
//!
//! Skips without the vocab files, fails instead under
//! `PHOBOS_REQUIRE_TEST_DATA=1`.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use half::f16;
use phobos_models::engine::{
    EngineError, LoadOptions, LogitsWanted, MAX_CHECKPOINTS, Model, SeqInput,
};
use phobos_models::gguf::{Gguf, GgufWriter, Value};
use phobos_models::quant::GgmlType;
use phobos_models::sample::argmax_logits;

const ARCHES: &[&str] = &[
    "llama",
    "qwen2",
    "qwen3",
    "qwen3moe",
    "minicpm",
    "gemma3",
    "qwen35",
    "qwen35moe",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn golden_dir() -> PathBuf {
    root().join("tests/golden/arch")
}

struct Prompt {
    text: String,
    ids: Vec<u32>,
    greedy: Vec<u32>,
    gaps: Vec<f32>,
    logits_first: Vec<f32>,
    logits_last: Vec<f32>,
}

struct Golden {
    json: serde_json::Value,
    prompts: Vec<Prompt>,
}

fn ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn golden(arch: &str) -> Golden {
    let dir = golden_dir();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{arch}.json"))).unwrap())
            .unwrap();
    let n_vocab = json["n_vocab"].as_u64().unwrap() as usize;
    let bytes = std::fs::read(dir.join(json["logits_file"].as_str().unwrap())).unwrap();
    let rows: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let prompts = json["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, p)| Prompt {
            text: p["text"].as_str().unwrap().to_owned(),
            ids: ids(&p["prompt_ids"]),
            greedy: ids(&p["greedy_ids"]),
            gaps: p["greedy_gaps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g.as_f64().unwrap() as f32)
                .collect(),
            logits_first: rows[2 * i * n_vocab..(2 * i + 1) * n_vocab].to_vec(),
            logits_last: rows[(2 * i + 1) * n_vocab..(2 * i + 2) * n_vocab].to_vec(),
        })
        .collect();
    Golden { json, prompts }
}

/// The script's embedding generator: splitmix64 of the flat index, top 24
/// bits to [-1, 1), times the amplitude, to F16 (exact until the rounding).
fn generated_matrix_f16(seed: u64, n_rows: usize, n_cols: usize, amplitude: f32) -> Vec<f16> {
    (0..(n_rows * n_cols) as u64)
        .map(|i| {
            let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let unit = (z >> 40) as f32 / (1u64 << 24) as f32;
            f16::from_f32((unit * 2.0 - 1.0) * amplitude)
        })
        .collect()
}

fn f16_bytes(values: &[f16]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Skeleton + vocab tokenizer keys + generated embedding, as one GGUF;
/// `drop_tensor` leaves one tensor out. `None` when the vocab file is absent.
fn build_gguf(arch: &str, drop_tensor: Option<&str>) -> Option<(Gguf, Golden)> {
    build_gguf_with(arch, drop_tensor, QkvLayout::AsCommitted)
}

/// How [`build_gguf_with`] writes the tensors a converter may fuse: each
/// attention layer's Q/K/V and each MoE layer's gate and up experts.
#[derive(Clone, Copy, PartialEq)]
enum QkvLayout {
    /// As the skeleton has them.
    AsCommitted,
    /// `attn_q`, `attn_k`, `attn_v` (weights and biases) and
    /// `ffn_gate_exps`, `ffn_up_exps`, all as F32 (the skeleton mixes
    /// formats within a group, which one tensor cannot).
    SeparateF32,
    /// The same F32 values as one `attn_qkv` weight and bias (the three
    /// matrices' rows in order, `convert_hf_to_gguf.py --fuse-qkv`) and one
    /// `ffn_gate_up_exps` (each expert's gate rows then its up rows,
    /// `--fuse-gate-up-exps`).
    FusedF32,
}

/// [`build_gguf`] with the fusable tensors written as `qkv` says.
fn build_gguf_with(
    arch: &str,
    drop_tensor: Option<&str>,
    qkv: QkvLayout,
) -> Option<(Gguf, Golden)> {
    let golden = golden(arch);
    let skeleton = Gguf::open(golden_dir().join(format!("{arch}.skeleton.gguf"))).unwrap();
    let vocab_name = skeleton.get_str("phobos.test.vocab").unwrap().to_owned();
    // The vocab directory the tokenizer vector tests use (README's table).
    let vocab_dir = std::env::var_os("PHOBOS_LLAMA_VOCABS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("models/llama-vocabs"));
    let vocab_path = vocab_dir.join(format!("ggml-vocab-{vocab_name}.gguf"));
    if !vocab_path.exists() {
        common::missing_test_data(&vocab_path.display().to_string());
        return None;
    }
    let vocab = Gguf::open(&vocab_path).unwrap();
    let mut w = GgufWriter::new();
    for (key, value) in skeleton.metadata() {
        w.add(key, value.clone()).unwrap();
    }
    for (key, value) in vocab.metadata() {
        if key.starts_with("tokenizer.") {
            w.add(key, value.clone()).unwrap();
        }
    }
    let n_vocab = vocab.get_str_array("tokenizer.ggml.tokens").unwrap().len();
    assert_eq!(n_vocab as u64, golden.json["n_vocab"].as_u64().unwrap());
    let n_embd = golden.json["n_embd"].as_u64().unwrap() as usize;
    let amplitude = golden.json["embd_amplitude"].as_f64().unwrap() as f32;
    let seed = |key: &str| match skeleton.get(key) {
        Some(Value::U64(s)) => Some(*s),
        _ => None,
    };
    let embd = generated_matrix_f16(
        seed("phobos.test.embd_seed").unwrap(),
        n_vocab,
        n_embd,
        amplitude,
    );
    // The generator must be the script's: checksum and end bits.
    let sum: f64 = embd.iter().map(|v| f64::from(v.to_f32())).sum();
    let want_sum = golden.json["embd_sum"].as_f64().unwrap();
    assert!(
        (sum - want_sum).abs() < 1e-6 * (1.0 + want_sum.abs()),
        "{sum} vs {want_sum}"
    );
    let bits = |v: &[f16]| v.iter().map(|x| u64::from(x.to_bits())).collect::<Vec<_>>();
    let want_bits = |key: &str| {
        golden.json[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&embd[..8]), want_bits("embd_first_bits"));
    assert_eq!(bits(&embd[embd.len() - 8..]), want_bits("embd_last_bits"));
    let dims = [n_embd as u64, n_vocab as u64];
    let add = |w: &mut GgufWriter, name: &str, ty, dims: &[u64], data: Vec<u8>| {
        if drop_tensor != Some(name) {
            w.add_tensor(name, dims, ty, data).unwrap();
        }
    };
    add(
        &mut w,
        "token_embd.weight",
        GgmlType::F16,
        &dims,
        f16_bytes(&embd),
    );
    if let Some(s) = seed("phobos.test.output_seed") {
        let out = generated_matrix_f16(s, n_vocab, n_embd, amplitude);
        add(
            &mut w,
            "output.weight",
            GgmlType::F16,
            &dims,
            f16_bytes(&out),
        );
    }
    let groups = if qkv == QkvLayout::AsCommitted {
        Vec::new()
    } else {
        fusable_groups(&skeleton)
    };
    let f32_values = |name: &str| skeleton.dequantize_tensor(name).unwrap();
    for view in skeleton.tensor_views() {
        let name = view.info.name.as_str();
        let Some(group) = groups.iter().find(|g| g.parts.iter().any(|p| p == name)) else {
            add(
                &mut w,
                name,
                view.info.ty,
                &view.info.dims,
                view.data.to_vec(),
            );
            continue;
        };
        match qkv {
            QkvLayout::FusedF32 if group.parts[0] == name => {
                // Per outermost index (expert), each part's rows in order.
                let parts: Vec<Vec<f32>> = group.parts.iter().map(|p| f32_values(p)).collect();
                let mut data = Vec::new();
                for outer in 0..group.outer {
                    for part in &parts {
                        let len = part.len() / group.outer;
                        for v in &part[outer * len..(outer + 1) * len] {
                            data.extend_from_slice(&v.to_le_bytes());
                        }
                    }
                }
                add(
                    &mut w,
                    &group.fused_name,
                    GgmlType::F32,
                    &group.fused_dims,
                    data,
                );
            }
            QkvLayout::FusedF32 => {}
            _ => {
                let data = f32_values(name)
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                add(&mut w, name, GgmlType::F32, &view.info.dims, data);
            }
        }
    }
    Some((Gguf::from_vec(w.to_bytes()).unwrap(), golden))
}

/// Tensors a converter may write as one, and the tensor that replaces
/// them: its parts are concatenated along the second ggml dim, per index
/// of the third (`outer`: the expert; 1 for a matrix or vector).
struct FusedGroup {
    parts: Vec<String>,
    fused_name: String,
    fused_dims: Vec<u64>,
    outer: usize,
}

/// Every layer's `attn_{q,k,v}.{weight,bias}` and
/// `ffn_{gate,up}_exps.weight` groups.
fn fusable_groups(skeleton: &Gguf) -> Vec<FusedGroup> {
    const KINDS: [(&str, &[&str], &str); 3] = [
        (
            "attn_q.weight",
            &["attn_q", "attn_k", "attn_v"],
            "attn_qkv.weight",
        ),
        (
            "attn_q.bias",
            &["attn_q", "attn_k", "attn_v"],
            "attn_qkv.bias",
        ),
        (
            "ffn_gate_exps.weight",
            &["ffn_gate_exps", "ffn_up_exps"],
            "ffn_gate_up_exps.weight",
        ),
    ];
    let mut groups = Vec::new();
    for info in skeleton.tensors() {
        for (first, members, fused) in KINDS {
            let Some(block) = info.name.strip_suffix(first) else {
                continue;
            };
            let suffix = first.split_once('.').map_or("", |(_, kind)| kind);
            let parts: Vec<String> = members
                .iter()
                .map(|t| format!("{block}{t}.{suffix}"))
                .collect();
            let infos: Vec<_> = parts
                .iter()
                .filter_map(|p| skeleton.tensor_info(p))
                .collect();
            if infos.len() != parts.len() {
                continue;
            }
            let mut fused_dims = info.dims.clone();
            let row_dim = fused_dims.len().min(2) - 1;
            fused_dims[row_dim] = infos.iter().map(|i| i.dims[row_dim]).sum();
            groups.push(FusedGroup {
                parts,
                fused_name: format!("{block}{fused}"),
                outer: info.dims.get(2).map_or(1, |&e| e as usize),
                fused_dims,
            });
        }
    }
    groups
}

fn load(arch: &str) -> Option<(Arc<Model>, Golden)> {
    let (gguf, golden) = build_gguf(arch, None)?;
    let model = Model::from_gguf(gguf, LoadOptions::default()).unwrap();
    assert_eq!(model.arch_name(), arch);
    Some((model, golden))
}

/// Logits of `tokens` fed as one prompt: every position.
fn all_logits(model: &Model, tokens: &[u32]) -> Vec<f32> {
    let mut session = model.new_session(256).unwrap();
    let mut out = model
        .forward(&mut [SeqInput {
            session: &mut session,
            tokens,
            logits: LogitsWanted::All,
        }])
        .unwrap();
    out.remove(0)
}

/// How far our logits may be from llama.cpp's, from the two computations'
/// numerics (VERIFY.md: an outside reference within a derived bound).
///
/// The derivation assumes the worst case for the engine's weight products:
/// that they dot the dequantized weights with f32 activations (the exact
/// form the engine first had, `ops::matmul::matmul_exact`). llama.cpp
/// (ggml's CPU matmul) first rounds the activations to the weight's
/// partner type: Q8_0 blocks of 32 for Q8_0 weights, Q8_K blocks of 256
/// for Q4_K, F16 for F16 weights (2^-11 relative, negligible here); F32
/// weights are dotted in f32 on both sides (K <= 256 products: ~K * 2^-24).
/// Both sides dequantize the same weight bytes the same way.
///
/// A q8 rounding step is amax/127 of its block; rounding to nearest leaves
/// a uniform error of rms step/sqrt(12), i.e. amax/440. A block's amax is
/// its crest factor (<= 4 for 32 to 256 values of these rows) times its
/// rms, so each q8 product's input carries a relative rms error of at most
/// 4/440 = 0.9%, and so does its output (a dot of K terms with independent
/// signs carries its inputs' relative error). RMSNorm removes scale, so the
/// products' errors add in quadrature rather than compound: a model of
/// these has at most 2 layers x 4 q8/Q4_K products (attention output,
/// gate and up (one rounding, shared), down, and Q/K/V (one rounding,
/// shared)) = 8, giving the final hidden row a relative rms error of at
/// most sqrt(8) * 0.9% = 2.5%. The output projection maps it linearly, so
/// each logit's error is roughly normal with sigma <= 2.5% of the logits'
/// rms: we check
/// - the rms of the difference over the vocabulary <= 0.025 * rms(logits)
///   (a wrong op, rotation or scale gives errors of order 100%), and
/// - every logit within 5 sigma plus its own F16 rounding in llama.cpp's
///   output product: `5 * 0.025 * rms(logits) + 2^-10 * |logit|` (the
///   largest of n_vocab <= 152k normal errors is below 5 sigma with
///   probability > 0.9).
///
/// The engine's matmul now takes ggml's form (the same activation
/// rounding), so most roundings agree; the two sides still differ where an
/// input that differs slightly upstream lands across a rounding step, and
/// in what llama.cpp's default context runs beyond the plain products
/// (repacked weight kernels, f16 flash attention). Measured rms of the
/// difference: at most 1.8% of the logits' rms (llama; qwen3 1.5%, qwen35
/// 1.3%, qwen35moe 1.7%), within the bound, which holds a fortiori.
///
/// The hybrid qwen35/qwen35moe models fit the same count. Their DeltaNet
/// layer has two rounded products (the shared rounding of `attn_qkv` and
/// `attn_gate`, and `ssm_out`; `ssm_alpha`/`ssm_beta` are F32, dotted in
/// f32 on both sides), their attention layer two (Q/K/V, output), and each
/// feed-forward two (gate/up, down): 8 in all. In qwen35moe the routed
/// experts' and the shared expert's down projections round different
/// inputs independently and their outputs add, so their errors add in
/// quadrature relative to the sum, like one product's. The recurrence
/// does not amplify an error: the conv is a fixed 4-tap filter, Q and K
/// are L2-normalised and the output RMS-normed (both scale-free), and the
/// state update `S <- exp(g) (I - beta k k^T) S + ...` has gain at most 1
/// (`exp(g) <= 1`, `0 < beta < 1`, `|k| = 1`), so an error entering the
/// state decays instead of compounding over the tokens. Its own f32
/// arithmetic adds ~d * 2^-24 per step: nothing at this scale.
const REL_RMS_ERROR: f32 = 0.025;

fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|&l| f64::from(l) * f64::from(l)).sum::<f64>() / x.len().max(1) as f64).sqrt()
        as f32
}

fn logit_tolerance(reference: &[f32]) -> impl Fn(f32) -> f32 {
    let sigma = REL_RMS_ERROR * rms(reference);
    move |l: f32| 5.0 * sigma + l.abs() / 1024.0
}

/// Two top logits closer than this may swap between the two sides: the
/// difference of two logits' errors has sigma sqrt(2) * 2.5% of the rms,
/// and we call a gap clear beyond 5 of those.
fn clear_gap(reference: &[f32]) -> f32 {
    5.0 * std::f32::consts::SQRT_2 * REL_RMS_ERROR * rms(reference)
}

fn assert_logits_close(arch: &str, what: &str, ours: &[f32], theirs: &[f32]) {
    assert_eq!(ours.len(), theirs.len(), "{arch} {what}: vocab size");
    let tol = logit_tolerance(theirs);
    let diff: Vec<f32> = ours.iter().zip(theirs).map(|(a, b)| a - b).collect();
    let (rms_theirs, rms_diff) = (rms(theirs), rms(&diff));
    let worst = diff.iter().fold(0f32, |m, d| m.max(d.abs()));
    eprintln!(
        "{arch} {what}: rms(logits) {rms_theirs:.4}, rms(diff) {rms_diff:.5} ({:.2}%), max |diff| {worst:.5} ({:.2}% of rms)",
        100.0 * rms_diff / rms_theirs,
        100.0 * worst / rms_theirs
    );
    assert!(
        rms_diff <= REL_RMS_ERROR * rms_theirs,
        "{arch} {what}: rms of the difference {rms_diff} is over {REL_RMS_ERROR} of the logits' rms {rms_theirs}"
    );
    for (i, (&a, &b)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (a - b).abs() <= tol(b),
            "{arch} {what}: logit {i} is {a}, llama.cpp {b} (tolerance {})",
            tol(b)
        );
    }
}

fn for_each_arch(f: impl Fn(&str, &Model, &Golden)) {
    for arch in ARCHES {
        let Some((model, golden)) = load(arch) else {
            return;
        };
        f(arch, &model, &golden);
    }
}

#[test]
fn logits_at_first_and_last_positions_match_llama_cpp() {
    for_each_arch(|arch, model, golden| {
        let n_vocab = model.n_vocab();
        for (pi, p) in golden.prompts.iter().enumerate() {
            let logits = all_logits(model, &p.ids);
            let n = p.ids.len();
            assert_logits_close(
                arch,
                &format!("prompt {pi} first"),
                &logits[..n_vocab],
                &p.logits_first,
            );
            assert_logits_close(
                arch,
                &format!("prompt {pi} last"),
                &logits[(n - 1) * n_vocab..],
                &p.logits_last,
            );
        }
    });
}

#[test]
fn greedy_tokens_match_llama_cpp_where_clear() {
    for_each_arch(|arch, model, golden| {
        for (pi, p) in golden.prompts.iter().enumerate() {
            // A step is clear when its top-2 gap exceeds what the two sides'
            // errors (each within the logit tolerance) could close.
            let clear_gap = clear_gap(&p.logits_last);
            let mut session = model.new_session(256).unwrap();
            let mut last = model
                .forward(&mut [SeqInput {
                    session: &mut session,
                    tokens: &p.ids,
                    logits: LogitsWanted::Last,
                }])
                .unwrap()
                .remove(0);
            let mut n_checked = 0;
            for (step, (&want, &gap)) in p.greedy.iter().zip(&p.gaps).enumerate() {
                if gap > clear_gap {
                    let ours = argmax_logits(&last);
                    assert_eq!(ours, want, "{arch} prompt {pi} step {step} (gap {gap})");
                    n_checked += 1;
                }
                // Teacher-forced: continue on llama.cpp's token.
                last = model
                    .forward(&mut [SeqInput {
                        session: &mut session,
                        tokens: &[want],
                        logits: LogitsWanted::Last,
                    }])
                    .unwrap()
                    .remove(0);
            }
            eprintln!(
                "{arch} prompt {pi}: {n_checked}/{} greedy steps clear and equal",
                p.greedy.len()
            );
            assert!(
                n_checked >= p.greedy.len() / 4,
                "{arch}: too few clear steps to test"
            );
        }
    });
}

#[test]
fn batched_and_split_prompts_match_one_whole_prompt() {
    for_each_arch(|arch, model, golden| {
        let n_vocab = model.n_vocab();
        let long = &golden.prompts[0].ids;
        let short = &golden.prompts[1].ids;
        let whole_long = all_logits(model, long);
        let whole_short = all_logits(model, short);

        // Two sessions in one batch.
        let mut s1 = model.new_session(256).unwrap();
        let mut s2 = model.new_session(256).unwrap();
        let out = model
            .forward(&mut [
                SeqInput {
                    session: &mut s1,
                    tokens: long,
                    logits: LogitsWanted::All,
                },
                SeqInput {
                    session: &mut s2,
                    tokens: short,
                    logits: LogitsWanted::All,
                },
            ])
            .unwrap();
        // The same computation in another grouping: only f32 summation
        // order differs (per-row matmuls, attention over the same cache).
        let tol = 1e-4 * rms(&whole_long[..n_vocab]);
        let close = |a: &[f32], b: &[f32], what: &str| {
            assert_eq!(a.len(), b.len());
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert!((x - y).abs() <= tol, "{arch} {what}: logit {i}: {x} vs {y}");
            }
        };
        close(&out[0], &whole_long, "batched long prompt");
        close(&out[1], &whole_short, "batched short prompt");

        // The long prompt in three pieces, then one more token.
        let mut s = model.new_session(256).unwrap();
        let cuts = [0, 1, long.len() / 2, long.len()];
        let mut pieces = Vec::new();
        for w in cuts.windows(2) {
            let mut got = model
                .forward(&mut [SeqInput {
                    session: &mut s,
                    tokens: &long[w[0]..w[1]],
                    logits: LogitsWanted::All,
                }])
                .unwrap();
            pieces.append(&mut got[0]);
        }
        close(&pieces, &whole_long, "split prompt");
        assert_eq!(s.tokens(), &long[..]);

        // Prefix reuse: truncate and feed the rest again. Recurrent layers
        // restore a checkpoint (taken at the end of each piece above of two
        // or more tokens: n/2 and n): 3n/4 replays from n/2's, n/2 is one,
        // n/2 - 1 has none before it and replays from the start.
        let n = long.len();
        for keep in [3 * n / 4, n / 2, n / 2 - 1] {
            s.truncate(keep);
            assert_eq!(s.len(), keep);
            let again = model
                .forward(&mut [SeqInput {
                    session: &mut s,
                    tokens: &long[keep..],
                    logits: LogitsWanted::All,
                }])
                .unwrap();
            close(
                &again[0],
                &whole_long[keep * n_vocab..],
                &format!("after truncation to {keep}"),
            );
            assert_eq!(s.tokens(), &long[..]);
        }
        // A decode step right after a truncation that needs a replay.
        s.truncate(n - 2);
        let mut last = Vec::new();
        for &t in &long[n - 2..] {
            last = model
                .forward(&mut [SeqInput {
                    session: &mut s,
                    tokens: &[t],
                    logits: LogitsWanted::Last,
                }])
                .unwrap()
                .remove(0);
        }
        close(
            &last,
            &whole_long[(n - 1) * n_vocab..],
            "decode after truncation",
        );
        // The live state and each checkpoint are one footprint's worth.
        let per_state = model.footprint().recurrent_bytes_per_session as usize;
        let n_checkpoints = s.checkpoint_positions().len();
        assert_eq!(
            s.recurrent_bytes(),
            per_state * (1 + n_checkpoints),
            "{arch}"
        );
        if arch.starts_with("qwen35") {
            // One DeltaNet layer: conv state 3 taps x 128 channels, delta
            // rule 4 heads of 16 x 16, in f32.
            assert_eq!(per_state, (3 * 128 + 4 * 16 * 16) * 4, "{arch}");
            assert!(n_checkpoints > 0, "{arch}: checkpoints");
        } else {
            assert_eq!(per_state, 0, "{arch}");
        }
    });
}

/// A session filled to its context in pieces of two tokens (each leaves a
/// checkpoint in models with DeltaNet layers) holds exactly what the
/// footprint budgets per server slot: the full KV cache, the recurrent
/// state and `MAX_CHECKPOINTS` checkpoints of it.
#[test]
fn a_full_session_holds_what_the_footprint_budgets() {
    for_each_arch(|arch, model, golden| {
        let n_ctx = 2 * (MAX_CHECKPOINTS + 3);
        let mut s = model.new_session(n_ctx).unwrap();
        let tokens: Vec<u32> = golden.prompts[0]
            .ids
            .iter()
            .cycle()
            .take(n_ctx)
            .copied()
            .collect();
        for piece in tokens.chunks(2) {
            model
                .forward(&mut [SeqInput {
                    session: &mut s,
                    tokens: piece,
                    logits: LogitsWanted::None,
                }])
                .unwrap();
        }
        assert_eq!(s.len(), n_ctx, "{arch}");
        let footprint = model.footprint();
        let held = (s.kv_bytes() + s.recurrent_bytes()) as u64;
        assert_eq!(held, footprint.session_bytes_max(n_ctx), "{arch}");
        if arch.starts_with("qwen35") {
            assert_eq!(s.checkpoint_positions().len(), MAX_CHECKPOINTS, "{arch}");
            assert!(footprint.recurrent_bytes_per_session > 0, "{arch}");
        } else {
            assert_eq!(s.recurrent_bytes(), 0, "{arch}");
        }
    });
}

#[test]
fn our_tokenizer_gives_llama_cpp_prompt_ids() {
    for_each_arch(|arch, model, golden| {
        for p in &golden.prompts {
            let ours = model.tokenizer().encode(&p.text, true, true).unwrap();
            assert_eq!(ours, p.ids, "{arch}: tokens of {:?}", p.text);
        }
    });
}

#[test]
fn missing_tensor_is_a_clear_error() {
    for (arch, tensor) in [
        ("llama", "blk.1.ffn_down.weight"),
        ("qwen2", "blk.0.attn_q.weight"),
        ("qwen3", "blk.0.attn_k_norm.weight"),
        ("qwen3moe", "blk.1.ffn_gate_inp.weight"),
        ("qwen3moe", "blk.0.ffn_up_exps.weight"),
        ("minicpm", "output_norm.weight"),
        ("gemma3", "blk.1.post_ffw_norm.weight"),
        ("qwen35", "blk.0.ssm_conv1d.weight"),
        ("qwen35", "blk.0.ssm_a"),
        ("qwen35", "blk.1.attn_q_norm.weight"),
        ("qwen35moe", "blk.1.ffn_gate_inp_shexp.weight"),
        ("qwen35moe", "blk.0.ffn_down_exps.weight"),
    ] {
        let Some((gguf, _)) = build_gguf(arch, Some(tensor)) else {
            return;
        };
        let err = Model::from_gguf(gguf, LoadOptions::default()).unwrap_err();
        match &err {
            EngineError::MissingTensor { name } => assert_eq!(name, tensor),
            other => panic!("{arch} without {tensor}: {other}"),
        }
        assert!(err.to_string().contains(tensor), "{err}");
    }
}

#[test]
fn unknown_architecture_is_an_error_listing_the_supported_ones() {
    let Some((gguf, _)) = build_gguf("llama", None) else {
        return;
    };
    let mut w = GgufWriter::new();
    for (key, value) in gguf.metadata() {
        let value = if key == "general.architecture" {
            Value::String("nosucharch".into())
        } else {
            value.clone()
        };
        w.add(key, value).unwrap();
    }
    let err = Model::from_gguf(
        Gguf::from_vec(w.to_bytes()).unwrap(),
        LoadOptions::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, EngineError::UnknownArch { .. }), "{text}");
    for arch in ARCHES {
        assert!(text.contains(arch), "{text} should list {arch}");
    }
    assert!(text.contains("nosucharch"), "{text}");
}

/// `gguf` with some metadata keys replaced (tensors unchanged).
fn with_metadata(gguf: &Gguf, overrides: &[(&str, Value)]) -> Gguf {
    let mut w = GgufWriter::new();
    for (key, value) in gguf.metadata() {
        let value = overrides
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(value, |(_, v)| v);
        w.add(key, value.clone()).unwrap();
    }
    for view in gguf.tensor_views() {
        w.add_tensor(
            &view.info.name,
            &view.info.dims,
            view.info.ty,
            view.data.to_vec(),
        )
        .unwrap();
    }
    Gguf::from_vec(w.to_bytes()).unwrap()
}

#[test]
fn per_layer_metadata_arrays_are_read_per_layer() {
    use phobos_models::gguf::Array;
    // The gemma3 golden model: sliding-window period 2 (layer 0 local,
    // layer 1 global), 4 heads over 2 KV heads in both layers.
    let Some((gguf, golden)) = build_gguf("gemma3", None) else {
        return;
    };
    let ids = &golden.prompts[0].ids;
    let logits_of = |g: Gguf| {
        let model = Model::from_gguf(g, LoadOptions::default()).unwrap();
        all_logits(&model, ids)
    };
    let flags = |f: [bool; 2]| Value::Array(Array::Bool(f.to_vec()));
    let base = logits_of(with_metadata(&gguf, &[]));
    // The same schedule and heads written as per-layer arrays.
    let arrays = logits_of(with_metadata(
        &gguf,
        &[
            (
                "gemma3.attention.sliding_window_pattern",
                flags([true, false]),
            ),
            (
                "gemma3.attention.head_count",
                Value::Array(Array::U32(vec![4, 4])),
            ),
            (
                "gemma3.attention.head_count_kv",
                Value::Array(Array::U32(vec![2, 2])),
            ),
        ],
    ));
    assert_eq!(arrays, base);
    // Each flag counts for its own layer: making layer 0 global (the prompt
    // is longer than the window of 4) or layer 1 local changes the logits.
    for f in [[false, false], [true, true]] {
        let other = logits_of(with_metadata(
            &gguf,
            &[("gemma3.attention.sliding_window_pattern", flags(f))],
        ));
        assert_ne!(other, base, "pattern {f:?}");
    }
    // A per-layer array of the wrong length is refused by name.
    let bad = with_metadata(
        &gguf,
        &[(
            "gemma3.attention.head_count",
            Value::Array(Array::U32(vec![4, 4, 4])),
        )],
    );
    let err = Model::from_gguf(bad, LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("gemma3.attention.head_count") && err.contains("3 entries"),
        "{err}"
    );
}

/// A model whose Q/K/V projections are one fused `attn_qkv` tensor (and
/// bias), and whose MoE gate and up experts are one `ffn_gate_up_exps`,
/// gives the logits of the same weights written as separate tensors, bit
/// for bit, in every architecture.
#[test]
fn fused_tensors_give_the_separate_tensors_logits() {
    for arch in ARCHES {
        let (Some((separate, golden)), Some((fused, _))) = (
            build_gguf_with(arch, None, QkvLayout::SeparateF32),
            build_gguf_with(arch, None, QkvLayout::FusedF32),
        ) else {
            return;
        };
        let count = |gguf: &Gguf, suffix: &str| {
            gguf.tensors()
                .iter()
                .filter(|info| info.name.ends_with(suffix))
                .count()
        };
        assert!(
            count(&fused, ".attn_qkv.weight") > count(&separate, ".attn_qkv.weight"),
            "{arch}: no attention layer was fused"
        );
        let moe = count(&separate, ".ffn_gate_exps.weight");
        assert_eq!(count(&fused, ".ffn_gate_up_exps.weight"), moe, "{arch}");
        let separate = Model::from_gguf(separate, LoadOptions::default()).unwrap();
        let fused = Model::from_gguf(fused, LoadOptions::default()).unwrap();
        let tokens = &golden.prompts[0].ids;
        let (a, b) = (all_logits(&separate, tokens), all_logits(&fused, tokens));
        assert_eq!(a.len(), b.len());
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{arch}: fused tensors changed the logits"
        );
    }
}
