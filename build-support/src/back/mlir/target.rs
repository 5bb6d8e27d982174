//! What a PTX variant is compiled for: the chip, the PTX ISA version that
//! chip needs, and the width of index arithmetic.

use super::MlirError;

/// The chips compiled for when `PHOBOS_CHIPS` is not set.
pub const DEFAULT_CHIPS: [&str; 3] = ["sm_75", "sm_80", "sm_90"];

/// The environment variable listing chips, comma separated (`sm_80,sm_90`).
pub const CHIPS_ENV: &str = "PHOBOS_CHIPS";

/// A validated compilation target.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// `sm_XY`.
    pub chip: String,
    /// Compute capability as a number (`80` for sm_80).
    pub sm: u32,
    /// PTX ISA version without the dot (`70` for PTX 7.0): the oldest that
    /// the chip accepts, so the PTX loads on the oldest driver possible.
    pub ptx_isa: u32,
    /// 32 or 64: the width of tensor offsets inside the kernel.
    pub index_bits: u32,
}

impl Target {
    pub fn new(chip: &str, index_bits: u32) -> Result<Target, MlirError> {
        if index_bits != 32 && index_bits != 64 {
            return Err(MlirError::BadIndexBits(index_bits));
        }
        let digits = chip
            .strip_prefix("sm_")
            .ok_or_else(|| MlirError::BadChip(chip.to_string()))?;
        let sm: u32 = digits
            .parse()
            .map_err(|_| MlirError::BadChip(chip.to_string()))?;
        let ptx_isa = match sm {
            0..=49 => {
                return Err(MlirError::BadChip(format!(
                    "{chip} (oldest supported is sm_50)"
                )));
            }
            50..=80 => 70,
            81..=86 => 71,
            87..=89 => 78,
            90 => 78,
            91..=100 => 86,
            _ => 87,
        };
        Ok(Target {
            chip: chip.to_string(),
            sm,
            ptx_isa,
            index_bits,
        })
    }

    /// Static shared memory one CTA may declare (larger needs the dynamic
    /// opt-in, which this back end does not use yet).
    pub fn max_static_shared_bytes(&self) -> u64 {
        48 * 1024
    }

    pub fn max_threads_per_block(&self) -> u64 {
        1024
    }
}

/// The chips to compile for: `PHOBOS_CHIPS` when set and non-empty, else
/// [`DEFAULT_CHIPS`]. Names are validated by [`Target::new`].
pub fn chips_from_env() -> Vec<String> {
    match std::env::var(CHIPS_ENV) {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect(),
        _ => DEFAULT_CHIPS.iter().map(|c| c.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_chips_and_picks_the_oldest_ptx_isa_each_accepts() {
        assert_eq!(Target::new("sm_75", 32).unwrap().ptx_isa, 70);
        assert_eq!(Target::new("sm_80", 64).unwrap().sm, 80);
        assert_eq!(Target::new("sm_90", 32).unwrap().ptx_isa, 78);
    }

    #[test]
    fn rejects_bad_chips_and_index_bits() {
        assert!(matches!(Target::new("80", 32), Err(MlirError::BadChip(_))));
        assert!(matches!(
            Target::new("sm_x", 32),
            Err(MlirError::BadChip(_))
        ));
        assert!(matches!(
            Target::new("sm_35", 32),
            Err(MlirError::BadChip(_))
        ));
        assert!(matches!(
            Target::new("sm_80", 16),
            Err(MlirError::BadIndexBits(16))
        ));
    }
}
