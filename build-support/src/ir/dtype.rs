//! Element types: the scalar dtypes and GGUF's quantized block formats.

use std::fmt;

/// The scalar dtypes are defined once, in `phobos-dtype`, shared with the
/// runtime.
pub use phobos_dtype::DType;

/// GGUF's quantized block formats; allowed as tensor element types only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantType {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Iq1S,
    Iq1M,
    Iq2Xxs,
    Iq2Xs,
    Iq2S,
    Iq3Xxs,
    Iq3S,
    Iq4Nl,
    Iq4Xs,
    Tq1_0,
    Tq2_0,
}

impl QuantType {
    /// Every quantized type, in the order of LANGUAGE.md.
    pub const ALL: [QuantType; 21] = [
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q5_0,
        QuantType::Q5_1,
        QuantType::Q8_0,
        QuantType::Q2K,
        QuantType::Q3K,
        QuantType::Q4K,
        QuantType::Q5K,
        QuantType::Q6K,
        QuantType::Iq1S,
        QuantType::Iq1M,
        QuantType::Iq2Xxs,
        QuantType::Iq2Xs,
        QuantType::Iq2S,
        QuantType::Iq3Xxs,
        QuantType::Iq3S,
        QuantType::Iq4Nl,
        QuantType::Iq4Xs,
        QuantType::Tq1_0,
        QuantType::Tq2_0,
    ];

    /// The source-language spelling (`q4_0`, `q4_k`, `iq2_xxs`, ...).
    pub fn name(self) -> &'static str {
        match self {
            QuantType::Q4_0 => "q4_0",
            QuantType::Q4_1 => "q4_1",
            QuantType::Q5_0 => "q5_0",
            QuantType::Q5_1 => "q5_1",
            QuantType::Q8_0 => "q8_0",
            QuantType::Q2K => "q2_k",
            QuantType::Q3K => "q3_k",
            QuantType::Q4K => "q4_k",
            QuantType::Q5K => "q5_k",
            QuantType::Q6K => "q6_k",
            QuantType::Iq1S => "iq1_s",
            QuantType::Iq1M => "iq1_m",
            QuantType::Iq2Xxs => "iq2_xxs",
            QuantType::Iq2Xs => "iq2_xs",
            QuantType::Iq2S => "iq2_s",
            QuantType::Iq3Xxs => "iq3_xxs",
            QuantType::Iq3S => "iq3_s",
            QuantType::Iq4Nl => "iq4_nl",
            QuantType::Iq4Xs => "iq4_xs",
            QuantType::Tq1_0 => "tq1_0",
            QuantType::Tq2_0 => "tq2_0",
        }
    }

    /// Parses a source-language spelling.
    pub fn from_name(name: &str) -> Option<QuantType> {
        QuantType::ALL.into_iter().find(|q| q.name() == name)
    }

    /// Elements per block along the last (blocked) dim, as GGUF lays them out.
    /// Slices along that dim must start and end on a multiple of this.
    pub fn block_len(self) -> i64 {
        match self {
            QuantType::Q4_0
            | QuantType::Q4_1
            | QuantType::Q5_0
            | QuantType::Q5_1
            | QuantType::Q8_0
            | QuantType::Iq4Nl => 32,
            _ => 256,
        }
    }
}

impl fmt::Display for QuantType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The element type of a tensor parameter or of a tile value: a scalar dtype,
/// or (tensors and the tiles sliced from them only) a quantized block format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    Scalar(DType),
    Quant(QuantType),
}

impl Elem {
    /// True for a quantized block format.
    pub fn is_quant(self) -> bool {
        matches!(self, Elem::Quant(_))
    }

    /// The scalar dtype, or `None` for a quantized element type.
    pub fn scalar(self) -> Option<DType> {
        match self {
            Elem::Scalar(d) => Some(d),
            Elem::Quant(_) => None,
        }
    }

    pub fn from_name(name: &str) -> Option<Elem> {
        DType::from_name(name)
            .map(Elem::Scalar)
            .or_else(|| QuantType::from_name(name).map(Elem::Quant))
    }
}

impl From<DType> for Elem {
    fn from(d: DType) -> Elem {
        Elem::Scalar(d)
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Scalar(d) => d.fmt(f),
            Elem::Quant(q) => q.fmt(f),
        }
    }
}
