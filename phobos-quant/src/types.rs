//! The ggml tensor type id table. Ids are part of the GGUF file format, so
//! removed ids stay reserved and are never reused for something else.

use std::fmt;

use super::QuantError;

/// Elements per super-block of the k-quants and most i-quants.
pub const QK_K: usize = 256;

/// A ggml tensor element type that this crate knows the layout of.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
}

/// Layout facts of one type: a tensor row is a whole number of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    pub ty: GgmlType,
    pub name: &'static str,
    /// Elements per block.
    pub block_len: usize,
    /// Bytes per block.
    pub block_bytes: usize,
}

const fn info(ty: GgmlType, name: &'static str, block_len: usize, block_bytes: usize) -> TypeInfo {
    TypeInfo {
        ty,
        name,
        block_len,
        block_bytes,
    }
}

/// Every known type, in id order.
pub const ALL_TYPES: [TypeInfo; 34] = [
    info(GgmlType::F32, "F32", 1, 4),
    info(GgmlType::F16, "F16", 1, 2),
    info(GgmlType::Q4_0, "Q4_0", 32, 2 + 16),
    info(GgmlType::Q4_1, "Q4_1", 32, 2 + 2 + 16),
    info(GgmlType::Q5_0, "Q5_0", 32, 2 + 4 + 16),
    info(GgmlType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16),
    info(GgmlType::Q8_0, "Q8_0", 32, 2 + 32),
    info(GgmlType::Q8_1, "Q8_1", 32, 4 + 32),
    info(GgmlType::Q2_K, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4),
    info(GgmlType::Q3_K, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12),
    info(GgmlType::Q4_K, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12),
    info(
        GgmlType::Q5_K,
        "Q5_K",
        QK_K,
        2 + 2 + QK_K / 2 + QK_K / 8 + 12,
    ),
    info(
        GgmlType::Q6_K,
        "Q6_K",
        QK_K,
        2 + QK_K / 2 + QK_K / 4 + QK_K / 16,
    ),
    info(GgmlType::Q8_K, "Q8_K", QK_K, 4 + QK_K + QK_K / 8),
    info(GgmlType::IQ2_XXS, "IQ2_XXS", QK_K, 2 + QK_K / 4),
    info(GgmlType::IQ2_XS, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32),
    info(GgmlType::IQ3_XXS, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8),
    info(GgmlType::IQ1_S, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16),
    info(GgmlType::IQ4_NL, "IQ4_NL", 32, 2 + 16),
    info(
        GgmlType::IQ3_S,
        "IQ3_S",
        QK_K,
        2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4,
    ),
    info(GgmlType::IQ2_S, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16),
    info(
        GgmlType::IQ4_XS,
        "IQ4_XS",
        QK_K,
        2 + 2 + QK_K / 2 + QK_K / 64,
    ),
    info(GgmlType::I8, "I8", 1, 1),
    info(GgmlType::I16, "I16", 1, 2),
    info(GgmlType::I32, "I32", 1, 4),
    info(GgmlType::I64, "I64", 1, 8),
    info(GgmlType::F64, "F64", 1, 8),
    info(
        GgmlType::IQ1_M,
        "IQ1_M",
        QK_K,
        QK_K / 8 + QK_K / 16 + QK_K / 32,
    ),
    info(GgmlType::BF16, "BF16", 1, 2),
    info(GgmlType::TQ1_0, "TQ1_0", QK_K, 2 + 4 * 13),
    info(GgmlType::TQ2_0, "TQ2_0", QK_K, 2 + 64),
    info(GgmlType::MXFP4, "MXFP4", 32, 1 + 16),
    info(GgmlType::NVFP4, "NVFP4", 64, 4 + 32),
    info(GgmlType::Q1_0, "Q1_0", 128, 2 + 16),
];

/// Ids that ggml once used and removed; a file carrying one is rejected by
/// name rather than as an unknown id.
const RESERVED_IDS: [(u32, &str); 8] = [
    (4, "Q4_2"),
    (5, "Q4_3"),
    (31, "Q4_0_4_4"),
    (32, "Q4_0_4_8"),
    (33, "Q4_0_8_8"),
    (36, "IQ4_NL_4_4"),
    (37, "IQ4_NL_4_8"),
    (38, "IQ4_NL_8_8"),
];

impl GgmlType {
    /// Maps a file's type id to a type, naming removed ids in the error.
    pub fn from_id(id: u32) -> Result<Self, QuantError> {
        if let Some(found) = ALL_TYPES.iter().find(|t| t.ty as u32 == id) {
            return Ok(found.ty);
        }
        match RESERVED_IDS.iter().find(|(reserved, _)| *reserved == id) {
            Some((_, name)) => Err(QuantError::RemovedType { id, name }),
            None => Err(QuantError::UnknownTypeId { id }),
        }
    }

    pub fn id(self) -> u32 {
        self as u32
    }

    pub fn info(self) -> &'static TypeInfo {
        type_info(self)
    }

    pub fn name(self) -> &'static str {
        type_info(self).name
    }

    /// Looks a type up by its ggml name ("Q4_K", case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        ALL_TYPES
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
            .map(|t| t.ty)
    }

    /// Bytes needed for `n_elements` elements, or None when the count is not
    /// a whole number of blocks or the size overflows.
    pub fn bytes_for(self, n_elements: u64) -> Option<u64> {
        let info = type_info(self);
        let block_len = info.block_len as u64;
        if !n_elements.is_multiple_of(block_len) {
            return None;
        }
        (n_elements / block_len).checked_mul(info.block_bytes as u64)
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The layout facts of `ty`.
pub fn type_info(ty: GgmlType) -> &'static TypeInfo {
    // The table is in id order with one entry per variant, so the search
    // always succeeds; a linear scan over 34 entries is cheaper than a map.
    let mut index = 0;
    while index + 1 < ALL_TYPES.len() && ALL_TYPES[index].ty != ty {
        index += 1;
    }
    &ALL_TYPES[index]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_id_order_and_round_trips() {
        for pair in ALL_TYPES.windows(2) {
            assert!(pair[0].ty.id() < pair[1].ty.id());
        }
        for entry in &ALL_TYPES {
            assert_eq!(GgmlType::from_id(entry.ty.id()).unwrap(), entry.ty);
            assert_eq!(type_info(entry.ty), entry);
            assert_eq!(GgmlType::from_name(entry.name), Some(entry.ty));
        }
    }

    #[test]
    fn removed_ids_are_named() {
        let err = GgmlType::from_id(4).unwrap_err();
        assert!(err.to_string().contains("Q4_2"), "{err}");
        let err = GgmlType::from_id(37).unwrap_err();
        assert!(err.to_string().contains("IQ4_NL_4_8"), "{err}");
        assert!(matches!(
            GgmlType::from_id(143),
            Err(QuantError::UnknownTypeId { id: 143 })
        ));
    }

    #[test]
    fn bytes_for_checks_block_multiple() {
        assert_eq!(GgmlType::Q4_K.bytes_for(512), Some(288));
        assert_eq!(GgmlType::Q4_K.bytes_for(100), None);
        assert_eq!(GgmlType::F32.bytes_for(u64::MAX), None);
    }
}
