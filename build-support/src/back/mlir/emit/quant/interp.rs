//! A host evaluator of [`Q`] trees, for the tests: the same trees the
//! emitter lowers, run on real blocks and compared with phobos-quant.

use super::format::{FOp, IOp, Q};

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum V {
    I(i32),
    F(f32),
}

impl V {
    pub(crate) fn int(self) -> i32 {
        match self {
            V::I(v) => v,
            V::F(f) => panic!("expected an integer node, got f32 {f}"),
        }
    }
    pub(crate) fn float(self) -> f32 {
        match self {
            V::F(v) => v,
            V::I(i) => panic!("expected a float node, got i32 {i}"),
        }
    }
}

/// Evaluates `q` on `block` at element `elem` and group `group`. Reading
/// outside the block panics (a wrong tree), as a test failure should.
pub(crate) fn eval(q: &Q, block: &[u8], elem: i32, group: i32) -> V {
    let go = |x: &Q| eval(x, block, elem, group);
    match q {
        Q::Int(v) => V::I(*v as i32),
        Q::Elem => V::I(elem),
        Q::Group => V::I(group),
        Q::Byte(o) => V::I(i32::from(block[go(o).int() as usize])),
        Q::SByte(o) => V::I(i32::from(block[go(o).int() as usize] as i8)),
        Q::Bin(op, a, b) => {
            let (a, b) = (go(a).int(), go(b).int());
            V::I(match op {
                IOp::Add => a.wrapping_add(b),
                IOp::Sub => a.wrapping_sub(b),
                IOp::Mul => a.wrapping_mul(b),
                IOp::And => a & b,
                IOp::Or => a | b,
                IOp::Shl => a.wrapping_shl(b as u32),
                IOp::Shr => ((a as u32) >> (b as u32)) as i32,
                IOp::Div => ((a as u32) / (b as u32)) as i32,
                IOp::Rem => ((a as u32) % (b as u32)) as i32,
            })
        }
        Q::SelectLt(a, b, then, otherwise) => {
            // Both arms are computed, as in the lowering.
            let (t, o) = (go(then), go(otherwise));
            if go(a).int() < go(b).int() { t } else { o }
        }
        Q::Table16(table, index) => V::I(i32::from(table[go(index).int() as usize])),
        Q::Half(o) => V::F(half::f16::from_le_bytes([block[*o], block[*o + 1]]).to_f32()),
        Q::ToF(a) => V::F(go(a).int() as f32),
        Q::FBin(op, a, b) => {
            let (a, b) = (go(a).float(), go(b).float());
            V::F(match op {
                FOp::Add => a + b,
                FOp::Sub => a - b,
                FOp::Mul => a * b,
            })
        }
    }
}
