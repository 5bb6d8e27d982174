//! One marker type per quantized element type of the kernel language
//! (`q4_0` ... `tq2_0`), naming its ggml type.

use phobos_quant::GgmlType;

/// A quantized block format usable as a kernel tensor's element type.
pub trait QuantFormat: Copy + Send + Sync + 'static {
    /// The ggml type of the blocks.
    const GGML: GgmlType;
    /// The name in the kernel language (`q4_k`).
    const NAME: &'static str;
}

macro_rules! formats {
    ($($(#[$doc:meta])* $marker:ident = $ggml:ident, $name:literal;)*) => {$(
        $(#[$doc])*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $marker;

        impl QuantFormat for $marker {
            const GGML: GgmlType = GgmlType::$ggml;
            const NAME: &'static str = $name;
        }
    )*};
}

formats! {
    /// `q4_0`: 32 elements, f16 scale, 4-bit levels minus 8.
    Q4_0 = Q4_0, "q4_0";
    /// `q4_1`: 32 elements, f16 scale and min, 4-bit levels.
    Q4_1 = Q4_1, "q4_1";
    /// `q5_0`: 32 elements, f16 scale, 5-bit levels minus 16.
    Q5_0 = Q5_0, "q5_0";
    /// `q5_1`: 32 elements, f16 scale and min, 5-bit levels.
    Q5_1 = Q5_1, "q5_1";
    /// `q8_0`: 32 elements, f16 scale, i8 levels.
    Q8_0 = Q8_0, "q8_0";
    /// `q2_k`: 256-element super-blocks of 2-bit levels.
    Q2K = Q2_K, "q2_k";
    /// `q3_k`: 256-element super-blocks of 3-bit levels.
    Q3K = Q3_K, "q3_k";
    /// `q4_k`: 256-element super-blocks of 4-bit levels, 6-bit scales and mins.
    Q4K = Q4_K, "q4_k";
    /// `q5_k`: 256-element super-blocks of 5-bit levels.
    Q5K = Q5_K, "q5_k";
    /// `q6_k`: 256-element super-blocks of 6-bit levels, i8 scales.
    Q6K = Q6_K, "q6_k";
    /// `iq1_s`.
    Iq1S = IQ1_S, "iq1_s";
    /// `iq1_m`.
    Iq1M = IQ1_M, "iq1_m";
    /// `iq2_xxs`.
    Iq2Xxs = IQ2_XXS, "iq2_xxs";
    /// `iq2_xs`.
    Iq2Xs = IQ2_XS, "iq2_xs";
    /// `iq2_s`.
    Iq2S = IQ2_S, "iq2_s";
    /// `iq3_xxs`.
    Iq3Xxs = IQ3_XXS, "iq3_xxs";
    /// `iq3_s`.
    Iq3S = IQ3_S, "iq3_s";
    /// `iq4_nl`: 32 elements, f16 scale, a 16-entry non-linear level table.
    Iq4Nl = IQ4_NL, "iq4_nl";
    /// `iq4_xs`.
    Iq4Xs = IQ4_XS, "iq4_xs";
    /// `tq1_0`: ternary, 256 elements.
    Tq1_0 = TQ1_0, "tq1_0";
    /// `tq2_0`: ternary, 256 elements.
    Tq2_0 = TQ2_0, "tq2_0";
}
