//! The register layouts of `mma.sync` (shapes m16n8k16 and m16n8k8, f16 or
//! bf16 operands, f32 accumulators) and the `ldmatrix` row addresses that
//! fill them, written once as data so that the emitter and the CPU
//! emulation in the tests use the very same formulas.
//!
//! # Derivation
//!
//! A warp's 32 lanes are split as `group = lane / 4` (0..8) and
//! `pair = lane % 4` (0..4). PTX (ISA "Matrix fragments for mma.m16n8k16"
//! and "...m16n8k8", 16-bit floating point types) defines, per lane:
//!
//! - C/D (16x8, f32, 4 registers `c0..c3`): `c_r` is element
//!   `(row = group + 8 * (r / 2), col = 2 * pair + r % 2)`.
//! - A (16xK, row major, `K / 4` registers of two halves each): register
//!   `i`, half `h` is `(row = group + 8 * (i % 2), col = 2 * pair + h + 8 * (i / 2))`
//!   (k16: `i` in 0..4; k8: `i` in 0..2, so the `i / 2` term is 0).
//! - B (Kx8, "col", `K / 8` registers): register `i`, half `h` is
//!   `(k = 2 * pair + h + 8 * i, n = group)`.
//!
//! `ldmatrix .x{1,2,4}` loads one to four 8x8 matrices of 16-bit elements:
//! lanes `8j..8j+8` give the addresses of rows `0..8` of matrix `j`, and
//! register `j` of lane `l` receives row `l / 4`, elements `2 * (l % 4)`
//! and `+1` of matrix `j` (with `.trans`: column `l / 4`, rows `2 * (l % 4)`
//! and `+1`). So register `j` of every lane is exactly an 8x8 block of a
//! fragment above when matrix `j` is chosen as:
//!
//! - A: matrix `j` = rows `8 * (j % 2) ..`, cols `8 * (j / 2) ..` of the
//!   16xK step (the `i % 2` / `i / 2` split of register `i`); so lane `l`
//!   points at row `l % 8 + 8 * ((l / 8) % 2)`, col `8 * ((l / 16) % 2)`.
//! - B of `dot` (stored `[K, N]`, row major): register `i` holds `B[k][n]`
//!   with `k` running along the pair, i.e. a column of the stored 8x8
//!   block, so it is loaded with `.trans`; matrix `j` = k rows `8 * j ..`;
//!   lane `l` points at k row `l % 8 + 8 * ((l / 8) % 2)`, col 0.
//! - B of `dot_t` (stored `[N, K]`): `B[k][n] = Bt[n][k]` runs along a row
//!   of the stored block, so no `.trans`; matrix `j` = k cols `8 * j ..`;
//!   lane `l` points at n row `l % 8`, k col `8 * ((l / 8) % 2)`.
//!
//! Lanes past the ones a `.x1`/`.x2` load reads still compute an in-range
//! address (the `% 2` terms wrap, repeating lower lanes' rows), so no lane
//! ever points outside the tile; PTX requires exactly that on sm_75, where
//! every lane's ldmatrix address must be valid.
//!
//! The accumulator tile `[M, N]` of a contraction is split into `16x8`
//! blocks numbered row major (`N / 8` per block row); warp `w` owns blocks
//! `w * per_warp .. (w + 1) * per_warp`, and in its slot `4 * i + r` each
//! lane keeps `c_r` of its `i`-th block. [`owned_element`] is that map.

/// One term `coeff * ((var / div) % modulo)` of a [`Formula`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    pub var: Var,
    pub div: i64,
    pub modulo: i64,
    pub coeff: i64,
}

/// What a [`Term`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Var {
    /// The lane in the warp, 0..32.
    Lane,
    /// The register (`r` of `c_r`, `i` of an operand), 0..4.
    Reg,
}

/// A coordinate as a sum of [`Term`]s: the only shape of arithmetic the
/// fragment layouts need.
pub(crate) type Formula = &'static [Term];

const fn term(var: Var, div: i64, modulo: i64, coeff: i64) -> Term {
    Term {
        var,
        div,
        modulo,
        coeff,
    }
}

/// `group = lane / 4`.
const GROUP: Term = term(Var::Lane, 4, 8, 1);

/// C/D element `r`: row `group + 8 * (r / 2)`.
pub(crate) const C_ROW: Formula = &[GROUP, term(Var::Reg, 2, 2, 8)];
/// C/D element `r`: col `2 * pair + r % 2`.
pub(crate) const C_COL: Formula = &[term(Var::Lane, 1, 4, 2), term(Var::Reg, 1, 2, 1)];

/// `ldmatrix` row address inside one K step of A (`[16, K]` block):
/// row `l % 8 + 8 * ((l / 8) % 2)`.
pub(crate) const LDM_A_ROW: Formula = &[term(Var::Lane, 1, 8, 1), term(Var::Lane, 8, 2, 8)];
/// ... col `8 * ((l / 16) % 2)` (k16, four matrices).
pub(crate) const LDM_A_COL_K16: Formula = &[term(Var::Lane, 16, 2, 8)];
/// ... col 0 (k8, two matrices).
pub(crate) const LDM_A_COL_K8: Formula = &[];
/// `dot` B stored `[K, N]`, loaded with `.trans`: k row
/// `l % 8 + 8 * ((l / 8) % 2)` (k16) ...
pub(crate) const LDM_B_ROW_K16: Formula = &[term(Var::Lane, 1, 8, 1), term(Var::Lane, 8, 2, 8)];
/// ... or `l % 8` (k8); the col is 0 in both.
pub(crate) const LDM_ROW8: Formula = &[term(Var::Lane, 1, 8, 1)];
/// `dot_t` B stored `[N, K]`, no `.trans`: n row `l % 8` ([`LDM_ROW8`]),
/// k col `8 * ((l / 8) % 2)` (k16) or 0 (k8).
pub(crate) const LDM_BT_COL_K16: Formula = &[term(Var::Lane, 8, 2, 8)];

/// Evaluates `f` for one lane and register.
#[cfg(test)]
pub(crate) fn eval(f: Formula, lane: i64, reg: i64) -> i64 {
    f.iter()
        .map(|t| {
            let v = match t.var {
                Var::Lane => lane,
                Var::Reg => reg,
            };
            t.coeff * ((v / t.div) % t.modulo)
        })
        .sum()
}

/// The K extent of one `mma.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MmaK {
    /// m16n8k16 (sm_80+).
    K16,
    /// m16n8k8 (sm_75, f16 only).
    K8,
}

impl MmaK {
    pub(crate) fn k(self) -> i64 {
        match self {
            MmaK::K16 => 16,
            MmaK::K8 => 8,
        }
    }

    /// 8x8 matrices (= registers) of the A fragment.
    pub(crate) fn a_regs(self) -> i64 {
        self.k() / 4
    }

    /// 8x8 matrices (= registers) of the B fragment.
    pub(crate) fn b_regs(self) -> i64 {
        self.k() / 8
    }

    pub(crate) fn ldm_a_col(self) -> Formula {
        match self {
            MmaK::K16 => LDM_A_COL_K16,
            MmaK::K8 => LDM_A_COL_K8,
        }
    }

    /// Row (k) of a `dot` B address; its col is 0.
    pub(crate) fn ldm_b_row(self) -> Formula {
        match self {
            MmaK::K16 => LDM_B_ROW_K16,
            MmaK::K8 => LDM_ROW8,
        }
    }

    /// Col (k) of a `dot_t` B address; its row is [`LDM_ROW8`].
    pub(crate) fn ldm_bt_col(self) -> Formula {
        match self {
            MmaK::K16 => LDM_BT_COL_K16,
            MmaK::K8 => &[],
        }
    }
}

/// How an `[M, N]` accumulator tile is spread over the warps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FragmentTiling {
    /// 16x8 blocks per block row (`N / 8`).
    pub blocks_per_row: i64,
    /// All 16x8 blocks (`M / 16 * N / 8`).
    pub blocks: i64,
    /// Blocks each warp owns (the last warps may own fewer, down to none).
    pub per_warp: i64,
}

impl FragmentTiling {
    pub(crate) fn new(m: i64, n: i64, warps: i64) -> FragmentTiling {
        let blocks_per_row = n / 8;
        let blocks = (m / 16) * blocks_per_row;
        FragmentTiling {
            blocks_per_row,
            blocks,
            per_warp: (blocks + warps - 1) / warps,
        }
    }

    /// Private slots per thread: four per owned block.
    pub(crate) fn slots(&self) -> i64 {
        4 * self.per_warp
    }

    /// Whether some warp's block index runs past the last block.
    pub(crate) fn guarded(&self, warps: i64) -> bool {
        self.per_warp * warps != self.blocks
    }
}

/// The element `(row, col)` that `thread` keeps in `slot`, or `None` when
/// the slot is past the blocks (only when [`FragmentTiling::guarded`]).
#[cfg(test)]
pub(crate) fn owned_element(tiling: &FragmentTiling, thread: i64, slot: i64) -> Option<(i64, i64)> {
    let (warp, lane) = (thread / 32, thread % 32);
    let (i, r) = (slot / 4, slot % 4);
    let block = warp * tiling.per_warp + i;
    if block >= tiling.blocks {
        return None;
    }
    let row = 16 * (block / tiling.blocks_per_row) + eval(C_ROW, lane, r);
    let col = 8 * (block % tiling.blocks_per_row) + eval(C_COL, lane, r);
    Some((row, col))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic value generator (no test may depend on luck).
    fn values(len: usize, seed: i64) -> Vec<i64> {
        (0..len as i64)
            .map(|i| ((i * 37 + seed * 11) % 19) - 9)
            .collect()
    }

    /// `ldmatrix` on the CPU (PTX ISA, "ldmatrix"): lanes `8j..8j+8` give
    /// the flat element index where rows `0..8` of matrix `j` start
    /// (`addr(lane)`; every lane gives one, as sm_75 requires); register `j`
    /// of lane `l` receives row `l / 4`, elements `2 (l % 4)` and `+1`, or
    /// with `.trans` (column-major) column `l / 4`, rows `2 (l % 4)` and
    /// `+1`. Returns, per lane, per register, the two halves.
    fn ldmatrix(
        memory: &[i64],
        matrices: i64,
        trans: bool,
        addr: &dyn Fn(i64) -> usize,
    ) -> Vec<Vec<[i64; 2]>> {
        (0..32)
            .map(|lane| {
                (0..matrices)
                    .map(|j| {
                        let mut halves = [0; 2];
                        for (h, half) in halves.iter_mut().enumerate() {
                            let (r, c) = if trans {
                                (2 * (lane % 4) + h as i64, lane / 4)
                            } else {
                                (lane / 4, 2 * (lane % 4) + h as i64)
                            };
                            *half = memory[addr(8 * j + r) + c as usize];
                        }
                        halves
                    })
                    .collect()
            })
            .collect()
    }

    /// `mma.sync` on the CPU, reading operands only through the PTX
    /// fragment definitions (module doc): D = A (16xK) * B (Kx8) + C.
    fn mma(k: MmaK, a: &[Vec<[i64; 2]>], b: &[Vec<[i64; 2]>], c: &[[i64; 4]]) -> Vec<[i64; 4]> {
        let kk = k.k();
        let mut am = vec![vec![None; kk as usize]; 16];
        let mut bm = vec![vec![None; 8]; kk as usize];
        for lane in 0..32i64 {
            let (group, pair) = (lane / 4, lane % 4);
            for i in 0..k.a_regs() {
                for h in 0..2 {
                    let (row, col) = (group + 8 * (i % 2), 2 * pair + h + 8 * (i / 2));
                    assert!(am[row as usize][col as usize].is_none(), "A overlap");
                    am[row as usize][col as usize] = Some(a[lane as usize][i as usize][h as usize]);
                }
            }
            for i in 0..k.b_regs() {
                for h in 0..2 {
                    let (kr, n) = (2 * pair + h + 8 * i, group);
                    assert!(bm[kr as usize][n as usize].is_none(), "B overlap");
                    bm[kr as usize][n as usize] = Some(b[lane as usize][i as usize][h as usize]);
                }
            }
        }
        (0..32i64)
            .map(|lane| {
                let mut d = c[lane as usize];
                for (r, out) in d.iter_mut().enumerate() {
                    let row = eval(C_ROW, lane, r as i64) as usize;
                    let col = eval(C_COL, lane, r as i64) as usize;
                    for kr in 0..kk as usize {
                        *out += am[row][kr].unwrap() * bm[kr][col].unwrap();
                    }
                }
                d
            })
            .collect()
    }

    /// One warp computes `A[32, K] @ B` (`B` stored `[K, 16]` for `dot`,
    /// `[16, K]` for `dot_t`) over its four 16x8 blocks and K steps,
    /// addressing ldmatrix exactly as `Emitter::tensor_core_dot` does: block
    /// origin, operand row stride and, as under `@pipeline`, each operand
    /// in the second half of a doubled buffer. It must reproduce a plain
    /// matmul plus the initial accumulator, in the slots [`owned_element`]
    /// names.
    fn check_blocks(k: MmaK, kdim: usize, transposed_b: bool) {
        let (m, n) = (32usize, 16usize);
        let a = values(m * kdim, 1);
        let b_logical = values(kdim * n, 2);
        let b_stored: Vec<i64> = if transposed_b {
            (0..n * kdim)
                .map(|i| b_logical[(i % kdim) * n + i / kdim])
                .collect()
        } else {
            b_logical.clone()
        };
        // Doubled buffers, the operand in the second half.
        let doubled = |tile: &[i64]| -> Vec<i64> {
            let mut v = vec![i64::MIN; tile.len()];
            v.extend_from_slice(tile);
            v
        };
        let (a_mem, b_mem) = (doubled(&a), doubled(&b_stored));
        let (a_half, b_half) = (a.len() as i64, b_stored.len() as i64);
        let tiling = FragmentTiling::new(m as i64, n as i64, 1);
        let c0: Vec<Vec<i64>> = (0..32)
            .map(|l| (0..tiling.slots()).map(|s| l * 3 - s).collect())
            .collect();
        let mut acc = c0.clone();
        let kd = kdim as i64;
        for block in 0..tiling.blocks {
            let row0 = 16 * (block / tiling.blocks_per_row);
            let col0 = 8 * (block % tiling.blocks_per_row);
            let mut c: Vec<[i64; 4]> = (0..32)
                .map(|l| {
                    let s = 4 * block as usize;
                    [acc[l][s], acc[l][s + 1], acc[l][s + 2], acc[l][s + 3]]
                })
                .collect();
            for step in 0..(kd / k.k()) {
                let k0 = step * k.k();
                let fa = ldmatrix(&a_mem, k.a_regs(), false, &|l| {
                    let at = (row0 + eval(LDM_A_ROW, l, 0)) * kd + eval(k.ldm_a_col(), l, 0) + k0;
                    (a_half + at) as usize
                });
                let fb = if transposed_b {
                    ldmatrix(&b_mem, k.b_regs(), false, &|l| {
                        let at =
                            (col0 + eval(LDM_ROW8, l, 0)) * kd + eval(k.ldm_bt_col(), l, 0) + k0;
                        (b_half + at) as usize
                    })
                } else {
                    ldmatrix(&b_mem, k.b_regs(), true, &|l| {
                        let at = (eval(k.ldm_b_row(), l, 0) + k0) * n as i64 + col0;
                        (b_half + at) as usize
                    })
                };
                c = mma(k, &fa, &fb, &c);
            }
            for (lane, regs) in c.iter().enumerate() {
                for (r, v) in regs.iter().enumerate() {
                    acc[lane][4 * block as usize + r] = *v;
                }
            }
        }
        for lane in 0..32i64 {
            for slot in 0..tiling.slots() {
                let (row, col) = owned_element(&tiling, lane, slot).unwrap();
                let want: i64 = (0..kdim)
                    .map(|kr| a[row as usize * kdim + kr] * b_logical[kr * n + col as usize])
                    .sum::<i64>()
                    + c0[lane as usize][slot as usize];
                assert_eq!(
                    acc[lane as usize][slot as usize], want,
                    "{k:?} dot_t={transposed_b} lane {lane} slot {slot}"
                );
            }
        }
    }

    /// The C/D layout against the PTX ISA table ("Matrix Fragments for
    /// mma.m16n8k16 with floating point type", same for m16n8k8): `c_i`
    /// is at row `groupID` (i < 2) or `groupID + 8`, col
    /// `2 * threadID_in_group + (i & 1)`. The emulation above reads C
    /// through these formulas, so they are checked on their own here.
    #[test]
    fn the_accumulator_formulas_are_the_ptx_table() {
        for lane in 0..32 {
            let (group, thread_in_group) = (lane >> 2, lane % 4);
            for i in 0..4 {
                let row = if i < 2 { group } else { group + 8 };
                assert_eq!(eval(C_ROW, lane, i), row, "lane {lane} c{i}");
                assert_eq!(eval(C_COL, lane, i), thread_in_group * 2 + (i & 1));
            }
        }
    }

    #[test]
    fn one_warp_reproduces_a_matmul_for_every_shape_and_b_layout() {
        for transposed_b in [false, true] {
            check_blocks(MmaK::K16, 32, transposed_b);
            check_blocks(MmaK::K8, 24, transposed_b);
        }
    }

    #[test]
    fn ldmatrix_addresses_stay_inside_the_step_for_every_lane() {
        for k in [MmaK::K16, MmaK::K8] {
            for lane in 0..32 {
                assert!((0..16).contains(&eval(LDM_A_ROW, lane, 0)));
                assert!((0..k.k()).contains(&(eval(k.ldm_a_col(), lane, 0) + 7)));
                assert!((0..k.k()).contains(&eval(k.ldm_b_row(), lane, 0)));
                assert!((0..8).contains(&eval(LDM_ROW8, lane, 0)));
                assert!((0..k.k()).contains(&(eval(k.ldm_bt_col(), lane, 0) + 7)));
            }
        }
    }

    #[test]
    fn the_accumulator_layout_owns_every_element_exactly_once() {
        for (m, n, warps) in [
            (64, 64, 4),
            (128, 64, 4),
            (16, 16, 4),
            (32, 8, 2),
            (48, 24, 8),
        ] {
            let tiling = FragmentTiling::new(m, n, warps);
            let mut seen = vec![0; (m * n) as usize];
            for thread in 0..32 * warps {
                for slot in 0..tiling.slots() {
                    if let Some((row, col)) = owned_element(&tiling, thread, slot) {
                        assert!(row < m && col < n);
                        seen[(row * n + col) as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "{m}x{n} over {warps} warps");
            assert_eq!(
                tiling.guarded(warps),
                (m / 16 * n / 8) % warps != 0,
                "{m}x{n}"
            );
        }
    }
}
