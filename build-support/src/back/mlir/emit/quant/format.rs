//! How each quantized format decodes, written once as small expression
//! trees ([`Q`]) over the bytes of one block.
//!
//! The same trees are lowered to MLIR ([`super::lower`]) and evaluated on
//! the host by the tests ([`super::interp`]), which compare them bit for
//! bit with phobos-quant's dequantizers and with the ggml block terms, so
//! the decoding is verified without a GPU; only the one-op-at-a-time
//! lowering of a tree is left to the device check.
//!
//! A tree reads the block's bytes at offsets, the element index `e` within
//! the block and, for scales, the group index `g`. Integer nodes are `i32`
//! with wrapping arithmetic; float nodes are `f32`, each operation rounded
//! on its own.

use crate::ir::QuantType;

/// An integer or float expression over one block.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Q {
    /// An `i32` constant.
    Int(i64),
    /// The element index within the block.
    Elem,
    /// The group index (for per-group scales and mins).
    Group,
    /// The byte at this offset within the block, zero-extended.
    Byte(Box<Q>),
    /// The byte at this offset within the block, sign-extended.
    SByte(Box<Q>),
    /// Integer arithmetic.
    Bin(IOp, Box<Q>, Box<Q>),
    /// `if a < b (signed) { then } else { otherwise }`: both arms are
    /// computed, so both must read inside the block.
    SelectLt(Box<Q>, Box<Q>, Box<Q>, Box<Q>),
    /// Entry `index` (0..16) of a table of sixteen `i8` levels.
    Table16(&'static [i8; 16], Box<Q>),
    /// The `f16` at this constant offset, as `f32`.
    Half(usize),
    /// `i32` to `f32` (exact for the small values that occur).
    ToF(Box<Q>),
    /// `f32` arithmetic, one rounding per node.
    FBin(FOp, Box<Q>, Box<Q>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IOp {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Shl,
    /// Logical shift right.
    Shr,
    /// Unsigned division by a positive constant.
    Div,
    /// Unsigned remainder by a positive constant.
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FOp {
    Add,
    Sub,
    Mul,
}

// Small constructors keep the format table readable.
pub(crate) fn int(v: i64) -> Q {
    Q::Int(v)
}
fn bin(op: IOp, a: Q, b: Q) -> Q {
    Q::Bin(op, Box::new(a), Box::new(b))
}
fn add(a: Q, b: Q) -> Q {
    bin(IOp::Add, a, b)
}
fn sub(a: Q, b: Q) -> Q {
    bin(IOp::Sub, a, b)
}
fn mul(a: Q, b: Q) -> Q {
    bin(IOp::Mul, a, b)
}
fn and(a: Q, m: i64) -> Q {
    bin(IOp::And, a, int(m))
}
fn or(a: Q, b: Q) -> Q {
    bin(IOp::Or, a, b)
}
fn shl(a: Q, b: Q) -> Q {
    bin(IOp::Shl, a, b)
}
fn shr(a: Q, b: Q) -> Q {
    bin(IOp::Shr, a, b)
}
fn div(a: Q, b: i64) -> Q {
    bin(IOp::Div, a, int(b))
}
fn rem(a: Q, b: i64) -> Q {
    bin(IOp::Rem, a, int(b))
}
fn byte(offset: Q) -> Q {
    Q::Byte(Box::new(offset))
}
fn sbyte(offset: Q) -> Q {
    Q::SByte(Box::new(offset))
}
fn half(offset: usize) -> Q {
    Q::Half(offset)
}
fn to_f(a: Q) -> Q {
    Q::ToF(Box::new(a))
}
fn fmul(a: Q, b: Q) -> Q {
    Q::FBin(FOp::Mul, Box::new(a), Box::new(b))
}
fn fadd(a: Q, b: Q) -> Q {
    Q::FBin(FOp::Add, Box::new(a), Box::new(b))
}
fn fsub(a: Q, b: Q) -> Q {
    Q::FBin(FOp::Sub, Box::new(a), Box::new(b))
}
fn e() -> Q {
    Q::Elem
}
fn g() -> Q {
    Q::Group
}

/// IQ4_NL's (and IQ4_XS's) sixteen levels, part of the format.
pub(crate) const IQ4NL_LEVELS: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// The partner type ggml quantizes the float operand to (SPEC §14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Partner {
    Q8_0,
    Q8_1,
    Q8K,
}

impl Partner {
    /// Elements per partner block.
    pub(crate) fn block_len(self) -> i64 {
        match self {
            Partner::Q8_0 | Partner::Q8_1 => 32,
            Partner::Q8K => 256,
        }
    }
}

/// How a block's ggml term combines its integer sums (SPEC §14's table).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Term {
    /// `f32(sumi) * (d * dx)`.
    Signed,
    /// `(d * dx) * f32(sumi) + m * sx`, `m` the block's min.
    Offset { m: Q },
    /// `(d * dx) * f32(sum_g sc_g * dot_g) - (dmin * dx) * f32(sum_16 bsum * mn)`;
    /// `scale` and `min` are in terms of the group; `dmin` is a float tree.
    KMin { scale: Q, min: Q, dmin: Q },
    /// `(d * dx) * f32(sum_g sc_g * dot_g)`.
    KScaled { scale: Q },
}

/// One format: its block, how an element dequantizes, and (when it has an
/// integer form) its ggml term.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Format {
    pub quant: QuantType,
    pub block_len: i64,
    pub block_bytes: i64,
    /// The f32 value of element `e`, in phobos-quant's operation order.
    pub value: Q,
    /// The integer level of element `e` (ggml form only).
    pub level: Q,
    /// The block scale `d` as f32 (ggml form only).
    pub d: Q,
    /// Elements per scale group (ggml form; the whole block for legacy).
    pub group_len: i64,
    /// `None`: the exact form only.
    pub ggml: Option<(Partner, Term)>,
}

/// Element `e` (0..32) of a 32-element nibble block whose 16 packed bytes
/// start at `at`: low nibbles are elements 0..16, high nibbles 16..32.
fn nibble32(at: i64, e: Q) -> Q {
    and(
        shr(
            byte(add(int(at), rem(e.clone(), 16))),
            mul(int(4), div(e, 16)),
        ),
        15,
    )
}

/// The fifth bit of element `e` from the 32-bit `qh` at `at`.
fn fifth_bit(at: i64) -> Q {
    shl(
        and(shr(byte(add(int(at), div(e(), 8))), rem(e(), 8)), 1),
        int(4),
    )
}

/// Q4_K / Q5_K: the 6-bit scale (`min = false`) or min of sub-block `j`
/// from the 12 packed bytes at offset 4.
fn k4_scale_min(min: bool) -> Q {
    let s = |offset: Q| byte(add(int(4), offset));
    let j = g();
    let low = if min {
        and(s(add(j.clone(), int(4))), 63)
    } else {
        and(s(j.clone()), 63)
    };
    let high = if min {
        or(
            shr(s(add(j.clone(), int(4))), int(4)),
            and(shr(s(j.clone()), int(2)), 0x30),
        )
    } else {
        or(
            and(s(add(j.clone(), int(4))), 0x0F),
            and(shr(s(sub(j.clone(), int(4))), int(2)), 0x30),
        )
    };
    Q::SelectLt(Box::new(j), Box::new(int(4)), Box::new(low), Box::new(high))
}

/// Replaces [`Q::Group`] with `e / group_len` (a dequant value reads the
/// scale of its own element's group).
fn at_elements_group(q: &Q, group_len: i64) -> Q {
    let go = |x: &Q| Box::new(at_elements_group(x, group_len));
    match q {
        Q::Group => div(e(), group_len),
        Q::Int(_) | Q::Elem | Q::Half(_) => q.clone(),
        Q::Byte(a) => Q::Byte(go(a)),
        Q::SByte(a) => Q::SByte(go(a)),
        Q::Bin(op, a, b) => Q::Bin(*op, go(a), go(b)),
        Q::SelectLt(a, b, c, d) => Q::SelectLt(go(a), go(b), go(c), go(d)),
        Q::Table16(t, a) => Q::Table16(t, go(a)),
        Q::ToF(a) => Q::ToF(go(a)),
        Q::FBin(op, a, b) => Q::FBin(*op, go(a), go(b)),
    }
}

/// The lowering of `quant`, or `None` for a format the PTX back end does not
/// lower (the emitter turns that into an error naming it).
pub(crate) fn format(quant: QuantType) -> Option<Format> {
    use QuantType::*;
    let legacy = |block_bytes: i64, level: Q, value: Q, ggml| Format {
        quant,
        block_len: 32,
        block_bytes,
        value,
        level,
        d: half(0),
        group_len: 32,
        ggml,
    };
    // The legacy symmetric formats: `d * level`, ggml's signed term.
    let signed = |block_bytes: i64, level: Q| {
        let value = fmul(half(0), to_f(level.clone()));
        legacy(
            block_bytes,
            level,
            value,
            Some((Partner::Q8_0, Term::Signed)),
        )
    };
    // The legacy formats with a min `m` at byte 2: `d * level + m`.
    let offset = |block_bytes: i64, level: Q| {
        let value = fadd(fmul(half(0), to_f(level.clone())), half(2));
        let term = Term::Offset { m: half(2) };
        legacy(block_bytes, level, value, Some((Partner::Q8_1, term)))
    };
    Some(match quant {
        Q4_0 => signed(18, sub(nibble32(2, e()), int(8))),
        Q4_1 => offset(20, nibble32(4, e())),
        Q5_0 => signed(22, sub(or(nibble32(6, e()), fifth_bit(2)), int(16))),
        Q5_1 => offset(24, or(nibble32(8, e()), fifth_bit(4))),
        Q8_0 => {
            let level = sbyte(add(int(2), e()));
            // phobos-quant multiplies in this order for q8_0.
            let value = fmul(to_f(level.clone()), half(0));
            legacy(34, level, value, Some((Partner::Q8_0, Term::Signed)))
        }
        Iq4Nl => signed(18, Q::Table16(&IQ4NL_LEVELS, Box::new(nibble32(2, e())))),
        Q2K => {
            // qs at 16: byte (e/128)*32 + e%32, 2 bits at (e/32)%4.
            let level = and(
                shr(
                    byte(add(int(16), add(mul(div(e(), 128), int(32)), rem(e(), 32)))),
                    mul(int(2), rem(div(e(), 32), 4)),
                ),
                3,
            );
            let scale = and(byte(g()), 0x0F);
            let min = shr(byte(g()), int(4));
            k_format(quant, 84, level, 16, half(80), Some((min, half(82))), scale)
        }
        Q3K => {
            let low = and(
                shr(
                    byte(add(int(32), add(mul(div(e(), 128), int(32)), rem(e(), 32)))),
                    mul(int(2), rem(div(e(), 32), 4)),
                ),
                3,
            );
            // A clear high bit subtracts 4.
            let high_clear = bin(
                IOp::Sub,
                int(1),
                and(shr(byte(rem(e(), 32)), div(e(), 32)), 1),
            );
            let level = sub(low, mul(high_clear, int(4)));
            let scale = sub(
                or(
                    and(
                        shr(byte(add(int(96), rem(g(), 8))), mul(int(4), div(g(), 8))),
                        0x0F,
                    ),
                    shl(
                        and(
                            shr(byte(add(int(104), rem(g(), 4))), mul(int(2), div(g(), 4))),
                            3,
                        ),
                        int(4),
                    ),
                ),
                int(32),
            );
            k_format(quant, 110, level, 16, half(108), None, scale)
        }
        Q4K | Q5K => {
            let five = quant == Q5K;
            let qs = if five { 48 } else { 16 };
            let low = and(
                shr(
                    byte(add(int(qs), add(mul(div(e(), 64), int(32)), rem(e(), 32)))),
                    mul(int(4), rem(div(e(), 32), 2)),
                ),
                15,
            );
            let level = if five {
                or(
                    low,
                    shl(
                        and(shr(byte(add(int(16), rem(e(), 32))), div(e(), 32)), 1),
                        int(4),
                    ),
                )
            } else {
                low
            };
            let bytes = if five { 176 } else { 144 };
            let min = (k4_scale_min(true), half(2));
            k_format(
                quant,
                bytes,
                level,
                32,
                half(0),
                Some(min),
                k4_scale_min(false),
            )
        }
        Q6K => {
            let within = || rem(e(), 128);
            let low = and(
                shr(
                    byte(add(mul(div(e(), 128), int(64)), rem(within(), 64))),
                    mul(int(4), div(within(), 64)),
                ),
                15,
            );
            let high = and(
                shr(
                    byte(add(
                        int(128),
                        add(mul(div(e(), 128), int(32)), rem(within(), 32)),
                    )),
                    mul(int(2), div(within(), 32)),
                ),
                3,
            );
            let level = sub(or(low, shl(high, int(4))), int(32));
            let scale = sbyte(add(int(192), g()));
            k_format(quant, 210, level, 16, half(208), None, scale)
        }
        Iq4Xs => {
            // Sub-block ib = e/32 of 32; its 6-bit scale minus 32.
            let ib = || div(e(), 32);
            let low = and(
                shr(byte(add(int(4), div(ib(), 2))), mul(int(4), rem(ib(), 2))),
                15,
            );
            let scales_h = or(byte(int(2)), shl(byte(int(3)), int(8)));
            let high = and(shr(scales_h, mul(int(2), ib())), 3);
            let scale = sub(or(low, shl(high, int(4))), int(32));
            let j = rem(e(), 32);
            let nib = and(
                shr(
                    byte(add(int(8), add(mul(ib(), int(16)), rem(j.clone(), 16)))),
                    mul(int(4), div(j, 16)),
                ),
                15,
            );
            let level = Q::Table16(&IQ4NL_LEVELS, Box::new(nib));
            let value = fmul(fmul(half(0), to_f(scale)), to_f(level.clone()));
            Format {
                quant,
                block_len: 256,
                block_bytes: 136,
                value,
                level,
                d: half(0),
                group_len: 32,
                ggml: None,
            }
        }
        Iq1S | Iq1M | Iq2Xxs | Iq2Xs | Iq2S | Iq3Xxs | Iq3S | Tq1_0 | Tq2_0 => return None,
    })
}

/// A k-quant: `value = (d * f32(sc)) * f32(level) [- dmin * f32(mn)]`, the
/// order of phobos-quant's dequantizers.
fn k_format(
    quant: QuantType,
    block_bytes: i64,
    level: Q,
    group_len: i64,
    d: Q,
    min: Option<(Q, Q)>,
    scale: Q,
) -> Format {
    let scaled = fmul(
        fmul(d.clone(), to_f(at_elements_group(&scale, group_len))),
        to_f(level.clone()),
    );
    let (value, term) = match min {
        Some((min, dmin)) => {
            let offset = fmul(dmin.clone(), to_f(at_elements_group(&min, group_len)));
            (fsub(scaled, offset), Term::KMin { scale, min, dmin })
        }
        None => (scaled, Term::KScaled { scale }),
    };
    Format {
        quant,
        block_len: 256,
        block_bytes,
        value,
        level,
        d,
        group_len,
        ggml: Some((Partner::Q8K, term)),
    }
}
