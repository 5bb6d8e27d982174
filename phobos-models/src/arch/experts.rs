//! Mixture-of-experts weights: the stacked expert matrices (`ffn_*_exps`,
//! ggml dims `[cols, rows, n_expert]`) as views of the memory map, and the
//! layer's MoE feed-forward over `ops::moe`.

use crate::engine::weights::Linear;
use crate::engine::{EngineError, Result};
use crate::gguf::{Gguf, TensorInfo};
use crate::ops::QMatrixRef;
use crate::ops::moe::{ExpertsRef, MoeError, MoeWeights, Routing, moe_ffn};

/// `n_expert` matrices of `rows` x `cols`.
#[derive(Debug, Clone)]
pub(crate) struct ExpertLinear {
    n_expert: usize,
    rows: usize,
    cols: usize,
    info: TensorInfo,
    /// Rows per expert in the tensor and the first that is this matrix
    /// (`rows` and 0 unless it is a part of `ffn_gate_up_exps`).
    expert_rows: usize,
    first_row: usize,
}

impl ExpertLinear {
    pub fn load(
        gguf: &Gguf,
        name: &str,
        cols: usize,
        rows: usize,
        n_expert: usize,
    ) -> Result<ExpertLinear> {
        let info = gguf
            .tensor_info(name)
            .ok_or_else(|| EngineError::MissingTensor {
                name: name.to_owned(),
            })?;
        let expected = [cols as u64, rows as u64, n_expert as u64];
        let row_bytes = QMatrixRef {
            ty: info.ty,
            rows,
            cols,
            data: &[],
        }
        .row_bytes();
        if info.dims != expected || row_bytes.is_none() || !crate::quant::can_dequantize(info.ty) {
            return Err(EngineError::TensorShape {
                name: info.name.clone(),
                expected: expected.to_vec(),
                found: info.dims.clone(),
                ty: info.ty.name(),
            });
        }
        Ok(ExpertLinear {
            n_expert,
            rows,
            cols,
            info: info.clone(),
            expert_rows: rows,
            first_row: 0,
        })
    }

    /// The gate and up experts from the fused `name` (ggml dims `[cols,
    /// 2 * rows, n_expert]`: each expert's gate rows, then its up rows, as
    /// `convert_hf_to_gguf.py --fuse-gate-up-exps` writes); `None` when the
    /// file has no tensor `name`.
    pub fn load_gate_up(
        gguf: &Gguf,
        name: &str,
        cols: usize,
        rows: usize,
        n_expert: usize,
    ) -> Result<Option<[ExpertLinear; 2]>> {
        if gguf.tensor_info(name).is_none() {
            return Ok(None);
        }
        let whole = ExpertLinear::load(gguf, name, cols, 2 * rows, n_expert)?;
        let part = |first_row| ExpertLinear {
            rows,
            first_row,
            ..whole.clone()
        };
        Ok(Some([part(0), part(rows)]))
    }

    pub fn view<'g>(&self, gguf: &'g Gguf) -> ExpertsRef<'g> {
        ExpertsRef {
            ty: self.info.ty,
            n_expert: self.n_expert,
            rows: self.rows,
            cols: self.cols,
            data: gguf.tensor_data(&self.info),
            expert_rows: self.expert_rows,
            first_row: self.first_row,
        }
    }
}

/// One layer's experts and router.
pub(crate) struct MoeFfn {
    pub router: Linear,
    pub gate: ExpertLinear,
    pub up: ExpertLinear,
    pub down: ExpertLinear,
    pub routing: Routing,
}

impl MoeFfn {
    /// Loads `blk.{il}.ffn_{gate_inp,gate_exps,up_exps,down_exps}.weight`
    /// (or `ffn_gate_up_exps` for the gate and up experts when present).
    pub fn load(
        gguf: &Gguf,
        il: usize,
        n_embd: usize,
        n_ff_exp: usize,
        n_expert: usize,
        routing: Routing,
    ) -> Result<MoeFfn> {
        let name = |t: &str| format!("blk.{il}.{t}.weight");
        let fused = ExpertLinear::load_gate_up(
            gguf,
            &name("ffn_gate_up_exps"),
            n_embd,
            n_ff_exp,
            n_expert,
        )?;
        let [gate, up] = match fused {
            Some(parts) => parts,
            None => [
                ExpertLinear::load(gguf, &name("ffn_gate_exps"), n_embd, n_ff_exp, n_expert)?,
                ExpertLinear::load(gguf, &name("ffn_up_exps"), n_embd, n_ff_exp, n_expert)?,
            ],
        };
        Ok(MoeFfn {
            router: Linear::load(gguf, &name("ffn_gate_inp"), n_embd, n_expert)?,
            gate,
            up,
            down: ExpertLinear::load(gguf, &name("ffn_down_exps"), n_ff_exp, n_embd, n_expert)?,
            routing,
        })
    }

    /// `x` is `[m][n_embd]` (already normalised); returns `[m][n_embd]`.
    pub fn apply(&self, gguf: &Gguf, x: &[f32], m: usize) -> Result<Vec<f32>> {
        let weights = MoeWeights {
            router: self.router.view(gguf),
            gate: self.gate.view(gguf),
            up: self.up.view(gguf),
            down: self.down.view(gguf),
        };
        moe_ffn(x, m, &weights, &self.routing).map_err(|e| match e {
            MoeError::Matmul(e) => EngineError::Matmul(e),
            MoeError::RowOp(e) => EngineError::RowOp(e),
            // Load checked every expert's extent; report the tensor if not.
            MoeError::Expert { .. } => EngineError::TensorShape {
                name: self.gate.info.name.clone(),
                expected: vec![
                    self.gate.cols as u64,
                    self.gate.rows as u64,
                    self.gate.n_expert as u64,
                ],
                found: self.gate.info.dims.clone(),
                ty: self.gate.info.ty.name(),
            },
        })
    }
}
