//! Where a loaded model's memory goes: the weights (mapped from the file,
//! and how much of the mapping is resident), the f32 copies the engine
//! keeps (norm and bias vectors), the KV cache per token, the recurrent
//! state per session (with its checkpoints) and the activations a forward
//! pass holds per batch row.

use crate::gguf::Gguf;
use crate::quant::GgmlType;

use super::{MAX_CHECKPOINTS, Model};

/// A model's memory, in bytes. Weight matrices are never copied on the
/// host: they are read from the file's memory map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    /// Tensor data in the file (what the mapping can make resident).
    pub weights_mapped_bytes: u64,
    /// The part of it stored as F32 in the file.
    pub weights_f32_bytes: u64,
    /// Pages of the tensor data resident now (`/proc/self/smaps`; `None`
    /// where that is not readable).
    pub weights_resident_bytes: Option<u64>,
    /// One-dimensional tensors (norms, biases) the engine reads to f32
    /// vectors at load: the only weight bytes it copies.
    pub weights_copied_bytes: u64,
    /// KV cache per cached token (f16 keys and values, every layer).
    pub kv_bytes_per_token: u64,
    /// One session's recurrent state (f32 conv and DeltaNet states of the
    /// linear-attention layers; 0 for models without them). Each of a
    /// session's checkpoints (at most [`MAX_CHECKPOINTS`]) holds as much
    /// again; [`Footprint::session_bytes_max`] counts them.
    pub recurrent_bytes_per_session: u64,
    /// f32 activations a forward pass holds per batch row at its peak, an
    /// upper bound: the residual, one normed copy and every projection of
    /// one layer.
    pub scratch_bytes_per_row: u64,
    /// One row of f32 logits (only rows that ask for logits hold one).
    pub logits_bytes_per_row: u64,
}

impl Footprint {
    /// The most one session of `n_ctx` tokens holds: its KV cache full,
    /// its recurrent state and the [`MAX_CHECKPOINTS`] checkpoints of it
    /// a session keeps (what a server must budget per slot).
    pub fn session_bytes_max(&self, n_ctx: usize) -> u64 {
        let recurrent_copies = 1 + MAX_CHECKPOINTS as u64;
        self.kv_bytes_per_token * n_ctx as u64 + self.recurrent_bytes_per_session * recurrent_copies
    }
}

impl Model {
    /// This model's memory (see [`Footprint`]).
    pub fn footprint(&self) -> Footprint {
        let gguf = self.gguf();
        let tensors = gguf.tensors();
        let weights_mapped_bytes = tensors.iter().map(|t| t.n_bytes).sum();
        let weights_f32_bytes = tensors
            .iter()
            .filter(|t| t.ty == GgmlType::F32)
            .map(|t| t.n_bytes)
            .sum();
        let weights_copied_bytes = tensors
            .iter()
            .filter(|t| t.dims.len() == 1)
            .map(|t| t.n_elements * 4)
            .sum();
        let shape = self.shape();
        let layer_outputs: u64 = tensors
            .iter()
            .filter(|t| t.name.starts_with("blk.0.") && t.dims.len() == 2)
            .map(|t| t.dims[1])
            .sum();
        let row_floats = 2 * shape.n_embd as u64 + layer_outputs;
        Footprint {
            weights_mapped_bytes,
            weights_f32_bytes,
            weights_resident_bytes: resident_tensor_bytes(gguf),
            weights_copied_bytes,
            kv_bytes_per_token: self.kv_bytes_per_token() as u64,
            recurrent_bytes_per_session: shape
                .recurrent_state_lens
                .iter()
                .map(|&(conv, ssm)| (conv + ssm) as u64 * 4)
                .sum(),
            scratch_bytes_per_row: row_floats * 4,
            logits_bytes_per_row: shape.n_vocab as u64 * 4,
        }
    }
}

/// Resident bytes of the mapping that holds the tensor data, from
/// `/proc/self/smaps` (Linux); `None` for a model held in memory or where
/// the file is not readable.
fn resident_tensor_bytes(gguf: &Gguf) -> Option<u64> {
    let first = gguf.tensors().first()?;
    let address = gguf.tensor_data(first).as_ptr() as u64;
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    rss_of_mapping_containing(&smaps, address)
}

/// The `Rss:` of the smaps entry whose address range holds `address`.
fn rss_of_mapping_containing(smaps: &str, address: u64) -> Option<u64> {
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) =
                (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        {
            inside = (start..end).contains(&address);
            continue;
        }
        if inside && let Some(rest) = line.strip_prefix("Rss:") {
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            return Some(kib * 1024);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_rss_of_the_mapping_holding_an_address() {
        let smaps = "\
7f0000000000-7f0000100000 r--p 00000000 fd:01 12 /m/a.gguf
Size:               1024 kB
Rss:                 512 kB
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
Size:               1024 kB
Rss:                1024 kB
";
        assert_eq!(
            rss_of_mapping_containing(smaps, 0x7f00_0000_0800),
            Some(512 * 1024)
        );
        assert_eq!(
            rss_of_mapping_containing(smaps, 0x7f00_0020_0000),
            Some(1024 * 1024)
        );
        assert_eq!(rss_of_mapping_containing(smaps, 0x10), None);
    }
}
