//! Reference quantizers for the i-quants.
//!
//! ggml's own quantizers run importance-weighted searches; these are
//! simpler and documented as such. For each scale group every allowed
//! sub-scale is tried, and for each value group the grid row with the least
//! squared error is taken (exhaustive, so slow but exact for the chosen
//! scale). The super-block scale is rounded up so the largest sub-scale
//! fits. Types whose signs are stored as 7 bits + parity (IQ2_XXS, IQ2_XS,
//! IQ3_XXS) flip the sign of the smallest-magnitude element of a group of 8
//! when the count of negatives is odd.

use super::bytes::put_f16;
use super::iq_grids::{
    IQ1S_DELTA, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
    KVALUES_IQ4NL,
};
use super::kquants_quantize::f16_ceil;

/// Row of `grid` closest to `target` after scaling by `scale`, and its error.
fn nearest_row<const N: usize>(grid: &[[u8; N]], target: &[f32], scale: f32) -> (usize, f32) {
    let mut best = (0, f32::INFINITY);
    for (index, row) in grid.iter().enumerate() {
        let mut err = 0.0f32;
        for (t, &g) in target.iter().zip(row) {
            let diff = t - scale * f32::from(g);
            err += diff * diff;
        }
        if err < best.1 {
            best = (index, err);
        }
    }
    best
}

/// Sign bits of a group of 8 (bit i set = element i negative). With
/// `even_parity`, an odd count is made even by flipping the element with
/// the smallest magnitude.
fn sign_bits(x: &[f32], even_parity: bool) -> u8 {
    let mut bits = 0u8;
    for (i, &v) in x.iter().enumerate() {
        if v < 0.0 {
            bits |= 1 << i;
        }
    }
    if even_parity && bits.count_ones() % 2 == 1 {
        let smallest = (0..x.len())
            .min_by(|&a, &b| x[a].abs().total_cmp(&x[b].abs()))
            .unwrap_or(0);
        bits ^= 1 << smallest;
    }
    bits
}

/// Magnitudes of `x` with the parity-adjusted signs applied, so a flipped
/// element is matched as it will be reconstructed.
fn magnitudes(x: &[f32], bits: u8) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| if (bits >> i) & 1 == 1 { -v } else { v })
        .collect()
}

struct GroupChoice {
    scale_code: u8,
    rows: Vec<usize>,
}

/// Tries every scale code for one scale group and keeps the best rows.
fn choose<const N: usize>(
    grid: &[[u8; N]],
    targets: &[f32],
    codes: impl Iterator<Item = (u8, f32)>,
) -> GroupChoice {
    // The first candidate is taken whatever its error: with NaN or
    // infinite input every error is non-finite, and a block must still get
    // a full set of rows.
    let mut best = GroupChoice {
        scale_code: 0,
        rows: vec![0; targets.len() / N],
    };
    let mut best_err: Option<f32> = None;
    for (code, scale) in codes {
        let mut err = 0.0;
        let mut rows = Vec::with_capacity(targets.len() / N);
        for group in targets.chunks_exact(N) {
            let (row, e) = nearest_row(grid, group, scale);
            rows.push(row);
            err += e;
        }
        if best_err.is_none_or(|best_err| err < best_err) {
            best_err = Some(err);
            best = GroupChoice {
                scale_code: code,
                rows,
            };
        }
    }
    best
}

fn max_abs(x: &[f32]) -> f32 {
    x.iter().fold(0.0f32, |m, v| m.max(v.abs()))
}

/// Super-scale such that the largest scale code reaches the largest group's
/// magnitude mapped onto the grid's top value.
fn super_scale(x: &[f32], group_len: usize, grid_max: f32, top_factor: f32) -> f32 {
    let largest = x
        .chunks_exact(group_len)
        .map(max_abs)
        .fold(0.0f32, f32::max);
    f16_ceil(largest / grid_max / top_factor)
}

/// Scale codes 0..16 mapping to `d * (0.5 + ls) * mul`.
fn half_step_codes(d: f32, mul: f32) -> impl Iterator<Item = (u8, f32)> {
    (0u8..16).map(move |ls| (ls, d * (0.5 + f32::from(ls)) * mul))
}

pub(super) fn quantize_iq2_xxs(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 32, 43.0, 15.5 * 0.25);
    put_f16(out, d);
    for sub in x.chunks_exact(32) {
        let signs: Vec<u8> = sub.chunks_exact(8).map(|g| sign_bits(g, true)).collect();
        let targets: Vec<f32> = sub
            .chunks_exact(8)
            .zip(&signs)
            .flat_map(|(g, &s)| magnitudes(g, s))
            .collect();
        let c = choose(&IQ2XXS_GRID, &targets, half_step_codes(d, 0.25));
        out.extend(c.rows.iter().map(|&r| r as u8));
        let mut aux = u32::from(c.scale_code) << 28;
        for (l, &s) in signs.iter().enumerate() {
            aux |= u32::from(s & 127) << (7 * l);
        }
        out.extend_from_slice(&aux.to_le_bytes());
    }
}

pub(super) fn quantize_iq2_xs(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 16, 43.0, 15.5 * 0.25);
    put_f16(out, d);
    let mut scales = [0u8; 8];
    for (i, sub) in x.chunks_exact(16).enumerate() {
        let signs: Vec<u8> = sub.chunks_exact(8).map(|g| sign_bits(g, true)).collect();
        let targets: Vec<f32> = sub
            .chunks_exact(8)
            .zip(&signs)
            .flat_map(|(g, &s)| magnitudes(g, s))
            .collect();
        let c = choose(&IQ2XS_GRID, &targets, half_step_codes(d, 0.25));
        for (&row, &s) in c.rows.iter().zip(&signs) {
            let packed = row as u16 | (u16::from(s & 127) << 9);
            out.extend_from_slice(&packed.to_le_bytes());
        }
        scales[i / 2] |= c.scale_code << (4 * (i % 2));
    }
    out.extend_from_slice(&scales);
}

pub(super) fn quantize_iq2_s(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 16, 43.0, 15.5 * 0.25);
    let (mut qs, mut signs, mut qh, mut scales) = ([0u8; 32], [0u8; 32], [0u8; 8], [0u8; 8]);
    for (i, sub) in x.chunks_exact(16).enumerate() {
        let targets: Vec<f32> = sub.iter().map(|v| v.abs()).collect();
        let c = choose(&IQ2S_GRID, &targets, half_step_codes(d, 0.25));
        for (k, &row) in c.rows.iter().enumerate() {
            let g = 2 * i + k;
            qs[g] = row as u8;
            qh[g / 4] |= ((row >> 8) as u8 & 3) << (2 * (g % 4));
            signs[g] = sign_bits(&sub[8 * k..8 * k + 8], false);
        }
        scales[i / 2] |= c.scale_code << (4 * (i % 2));
    }
    put_f16(out, d);
    for part in [&qs[..], &signs, &qh, &scales] {
        out.extend_from_slice(part);
    }
}

pub(super) fn quantize_iq3_xxs(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 32, 62.0, 15.5 * 0.5);
    put_f16(out, d);
    let mut aux_words = Vec::with_capacity(8);
    for sub in x.chunks_exact(32) {
        let signs: Vec<u8> = sub.chunks_exact(8).map(|g| sign_bits(g, true)).collect();
        let targets: Vec<f32> = sub
            .chunks_exact(8)
            .zip(&signs)
            .flat_map(|(g, &s)| magnitudes(g, s))
            .collect();
        let c = choose(&IQ3XXS_GRID, &targets, half_step_codes(d, 0.5));
        out.extend(c.rows.iter().map(|&r| r as u8));
        let mut aux = u32::from(c.scale_code) << 28;
        for (l, &s) in signs.iter().enumerate() {
            aux |= u32::from(s & 127) << (7 * l);
        }
        aux_words.push(aux);
    }
    for aux in aux_words {
        out.extend_from_slice(&aux.to_le_bytes());
    }
}

pub(super) fn quantize_iq3_s(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 32, 15.0, 31.0);
    let (mut qs, mut qh, mut signs, mut scales) = ([0u8; 64], [0u8; 8], [0u8; 32], [0u8; 4]);
    for (i, sub) in x.chunks_exact(32).enumerate() {
        let targets: Vec<f32> = sub.iter().map(|v| v.abs()).collect();
        let codes = (0u8..16).map(|ls| (ls, d * f32::from(1 + 2 * ls)));
        let c = choose(&IQ3S_GRID, &targets, codes);
        for (k, &row) in c.rows.iter().enumerate() {
            let g = 8 * i + k;
            qs[g] = row as u8;
            qh[g / 8] |= ((row >> 8) as u8 & 1) << (g % 8);
        }
        for k in 0..4 {
            signs[4 * i + k] = sign_bits(&sub[8 * k..8 * k + 8], false);
        }
        scales[i / 2] |= c.scale_code << (4 * (i % 2));
    }
    put_f16(out, d);
    for part in [&qs[..], &qh, &signs, &scales] {
        out.extend_from_slice(part);
    }
}

/// IQ1 rows hold -1, 0, 1; the best (row, delta sign) for a group at `dl`.
fn nearest_ternary_row(target: &[f32], dl: f32, delta: f32) -> (usize, f32) {
    let mut best = (0, f32::INFINITY);
    for (index, row) in IQ1S_GRID.iter().enumerate() {
        let mut err = 0.0f32;
        for (t, &g) in target.iter().zip(row) {
            let diff = t - dl * (f32::from(g) + delta);
            err += diff * diff;
        }
        if err < best.1 {
            best = (index, err);
        }
    }
    best
}

/// Best (scale code, delta negative?, rows) for one IQ1 scale group, where
/// the delta sign is shared by `delta_group` elements.
fn choose_ternary(x: &[f32], d: f32, delta_group: usize) -> (u8, Vec<bool>, Vec<usize>) {
    // As in `choose`, the first candidate is taken whatever its error, so
    // non-finite input still yields every row.
    let mut best = (0u8, Vec::new(), Vec::new());
    let mut best_err: Option<f32> = None;
    for ls in 0u8..8 {
        let dl = d * f32::from(2 * ls + 1);
        let (mut err, mut negs, mut rows) = (0.0, Vec::new(), Vec::new());
        for part in x.chunks_exact(delta_group) {
            let mut part_best = (f32::INFINITY, false, Vec::new());
            for neg in [false, true] {
                let delta = if neg { -IQ1S_DELTA } else { IQ1S_DELTA };
                let picks: Vec<(usize, f32)> = part
                    .chunks_exact(8)
                    .map(|g| nearest_ternary_row(g, dl, delta))
                    .collect();
                let e: f32 = picks.iter().map(|p| p.1).sum();
                if !neg || e < part_best.0 {
                    part_best = (e, neg, picks.iter().map(|p| p.0).collect());
                }
            }
            err += part_best.0;
            negs.push(part_best.1);
            rows.extend(part_best.2);
        }
        if best_err.is_none_or(|best_err| err < best_err) {
            best_err = Some(err);
            best = (ls, negs, rows);
        }
    }
    best
}

pub(super) fn quantize_iq1_s(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 32, 1.0 + IQ1S_DELTA, 15.0);
    let mut qs = [0u8; 32];
    let mut qh = [0u16; 8];
    for (ib, sub) in x.chunks_exact(32).enumerate() {
        let (ls, negs, rows) = choose_ternary(sub, d, 32);
        let mut word = u16::from(ls) << 12;
        if negs[0] {
            word |= 0x8000;
        }
        for (k, &row) in rows.iter().enumerate() {
            qs[4 * ib + k] = row as u8;
            word |= ((row >> 8) as u16 & 7) << (3 * k);
        }
        qh[ib] = word;
    }
    put_f16(out, d);
    out.extend_from_slice(&qs);
    for word in qh {
        out.extend_from_slice(&word.to_le_bytes());
    }
}

pub(super) fn quantize_iq1_m(x: &[f32], out: &mut Vec<u8>) {
    let d = super_scale(x, 16, 1.0 + IQ1S_DELTA, 15.0);
    let d_bits = half::f16::from_f32(d).to_bits();
    let (mut qs, mut qh, mut words) = ([0u8; 32], [0u8; 16], [0u16; 4]);
    for (s, sub) in x.chunks_exact(16).enumerate() {
        let (ls, negs, rows) = choose_ternary(sub, d, 8);
        words[s / 4] |= u16::from(ls) << (3 * (s % 4));
        for (k, (&row, &neg)) in rows.iter().zip(&negs).enumerate() {
            let g = 2 * s + k;
            qs[g] = row as u8;
            let nibble = ((row >> 8) as u8 & 7) | if neg { 8 } else { 0 };
            qh[g / 2] |= nibble << (4 * (g % 2));
        }
    }
    for (i, word) in words.iter_mut().enumerate() {
        *word |= ((d_bits >> (4 * i)) & 0xF) << 12;
    }
    out.extend_from_slice(&qs);
    out.extend_from_slice(&qh);
    for word in words {
        out.extend_from_slice(&word.to_le_bytes());
    }
}

fn nearest_level(v: f32, scale: f32) -> (u8, f32) {
    let mut best = (0u8, f32::INFINITY);
    for (i, &k) in KVALUES_IQ4NL.iter().enumerate() {
        let diff = v - scale * f32::from(k);
        if diff * diff < best.1 {
            best = (i as u8, diff * diff);
        }
    }
    best
}

fn levels_error(x: &[f32], scale: f32) -> f32 {
    x.iter().map(|&v| nearest_level(v, scale).1).sum()
}

/// Best unrounded scale for a 32-element group: the signed max mapped onto
/// a range of level targets near either end of the table.
fn iq4_group_scale(x: &[f32]) -> f32 {
    let mx = x
        .iter()
        .copied()
        .fold(0.0f32, |a, v| if v.abs() > a.abs() { v } else { a });
    if mx == 0.0 {
        return 0.0;
    }
    let targets = (0..10)
        .map(|i| -127.0 + 3.0 * i as f32)
        .chain((0..9).map(|i| 113.0 - 3.0 * i as f32));
    targets
        .map(|t| mx / t)
        .min_by(|&a, &b| levels_error(x, a).total_cmp(&levels_error(x, b)))
        .unwrap_or(0.0)
}

fn pack_iq4_group(x: &[f32], scale: f32, out: &mut Vec<u8>) {
    let levels: Vec<u8> = x.iter().map(|&v| nearest_level(v, scale).0).collect();
    for j in 0..16 {
        out.push(levels[j] | (levels[j + 16] << 4));
    }
}

pub(super) fn quantize_iq4_nl(x: &[f32], out: &mut Vec<u8>) {
    let d = half::f16::from_f32(iq4_group_scale(x)).to_f32();
    put_f16(out, d);
    pack_iq4_group(x, d, out);
}

pub(super) fn quantize_iq4_xs(x: &[f32], out: &mut Vec<u8>) {
    let scales: Vec<f32> = x.chunks_exact(32).map(iq4_group_scale).collect();
    let d = f16_ceil(scales.iter().fold(0.0f32, |m, s| m.max(s.abs())) / 31.0);
    let codes: Vec<i8> = scales
        .iter()
        .map(|&s| {
            if d == 0.0 {
                0
            } else {
                (s / d).round().clamp(-32.0, 31.0) as i8
            }
        })
        .collect();
    put_f16(out, d);
    let scales_h = codes.iter().enumerate().fold(0u16, |h, (i, &c)| {
        h | (u16::from(((c + 32) as u8 >> 4) & 3) << (2 * i))
    });
    out.extend_from_slice(&scales_h.to_le_bytes());
    for pair in codes.chunks_exact(2) {
        out.push(((pair[0] + 32) as u8 & 0x0F) | (((pair[1] + 32) as u8 & 0x0F) << 4));
    }
    for (sub, &c) in x.chunks_exact(32).zip(&codes) {
        pack_iq4_group(sub, d * f32::from(c), out);
    }
}
