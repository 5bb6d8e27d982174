//! One launch of a kernel with concrete data: what the device check feeds
//! every variant and what it compares the outputs with.

use anyhow::{Result, ensure};
use phobos::artifact::{ConfigValues, KernelArtifact};
use phobos::{Element, Tensor, bf16, f16};
use phobos_examples::check::to_f64;

/// The raw contents of one tensor, little-endian, row-major.
pub struct Buffer {
    pub dtype: &'static str,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

/// Element types a buffer can hold.
pub trait RawElement: Copy {
    const DTYPE: &'static str;
    fn put(self, bytes: &mut Vec<u8>);
}

impl RawElement for f32 {
    const DTYPE: &'static str = "f32";
    fn put(self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.to_le_bytes());
    }
}

impl RawElement for f16 {
    const DTYPE: &'static str = "f16";
    fn put(self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.to_bits().to_le_bytes());
    }
}

impl RawElement for bf16 {
    const DTYPE: &'static str = "bf16";
    fn put(self, bytes: &mut Vec<u8>) {
        bytes.extend_from_slice(&self.to_bits().to_le_bytes());
    }
}

macro_rules! raw_le {
    ($($t:ty => $name:literal),*) => {$(
        impl RawElement for $t {
            const DTYPE: &'static str = $name;
            fn put(self, bytes: &mut Vec<u8>) {
                bytes.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

raw_le!(f64 => "f64", i8 => "i8", u8 => "u8", i16 => "i16", u16 => "u16", i32 => "i32", u32 => "u32", i64 => "i64");

impl Buffer {
    pub fn new<T: RawElement>(values: &[T], shape: &[usize]) -> Result<Buffer> {
        ensure!(
            values.len() == shape.iter().product::<usize>(),
            "{} values for shape {shape:?}",
            values.len()
        );
        let mut bytes = Vec::with_capacity(size_of_val(values));
        for &value in values {
            value.put(&mut bytes);
        }
        Ok(Buffer {
            dtype: T::DTYPE,
            shape: shape.to_vec(),
            bytes,
        })
    }

    /// A host tensor's current contents.
    pub fn of<T: RawElement + Element>(tensor: &Tensor<T>) -> Result<Buffer> {
        Buffer::new(&tensor.to_vec()?, tensor.shape())
    }
}

/// A tensor the kernel writes: the oracle's result and, per element, how
/// far a correct device result may be from it.
pub struct Output {
    pub name: &'static str,
    pub oracle: Buffer,
    /// `|device - oracle|` allowed per element: twice the proptest's bound
    /// on `|result - exact|`, since the oracle and the device are each
    /// within it (whatever config either ran).
    pub tolerance: Vec<f32>,
    /// Where the bound comes from, for the manifest's reader.
    pub rule: &'static str,
    /// Compared bit for bit (any NaN matching any NaN) instead of within
    /// `tolerance` (then all zeros).
    pub exact: bool,
}

/// One kernel launch: inputs for every tensor parameter (written ones
/// included: their initial contents), scalars, symbolic dims and the
/// expected outputs.
pub struct Case {
    pub dims: Vec<(&'static str, i64)>,
    pub scalars: Vec<(&'static str, f64)>,
    pub tensors: Vec<(&'static str, Buffer)>,
    pub outputs: Vec<Output>,
}

impl Output {
    /// Checks the oracle against the exact reference within `bounds` (the
    /// host back end must pass its own proptest bound here, or the
    /// comparison says nothing), then keeps twice the bound as tolerance.
    pub fn checked(
        name: &'static str,
        oracle: Buffer,
        oracle_values: &[f64],
        exact: &[f64],
        bounds: &[f64],
        rule: &'static str,
    ) -> Result<Output> {
        ensure!(
            oracle_values.len() == exact.len() && exact.len() == bounds.len(),
            "{name}: {} oracle values, {} reference values, {} bounds",
            oracle_values.len(),
            exact.len(),
            bounds.len()
        );
        let mismatch = phobos_examples::check::first_mismatch(oracle_values, exact, |i| bounds[i]);
        ensure!(
            mismatch.is_none(),
            "the host oracle misses its own bound on {name}: {}",
            mismatch.unwrap_or_default()
        );
        let tolerance = bounds.iter().map(|&b| round_up_to_f32(2.0 * b)).collect();
        Ok(Output {
            name,
            oracle,
            tolerance,
            rule,
            exact: false,
        })
    }

    /// The host back end's output `tensor` as an oracle the device must
    /// match bit for bit (the edge-case table; `rule` says what the host
    /// was checked against).
    pub fn exact<T: RawElement + Element>(
        name: &'static str,
        tensor: &Tensor<T>,
        rule: &'static str,
    ) -> Result<Output> {
        let oracle = Buffer::of(tensor)?;
        Ok(Output {
            name,
            tolerance: vec![0.0; tensor.len()],
            oracle,
            rule,
            exact: true,
        })
    }

    /// [`Output::checked`] with the host back end's output `tensor` as the
    /// oracle.
    pub fn of_tensor<T: RawElement + Element + Into<f64>>(
        name: &'static str,
        tensor: &Tensor<T>,
        exact: &[f64],
        bounds: &[f64],
        rule: &'static str,
    ) -> Result<Output> {
        let values = tensor.to_vec()?;
        let oracle = Buffer::new(&values, tensor.shape())?;
        Output::checked(name, oracle, &to_f64(&values), exact, bounds, rule)
    }
}

/// The smallest f32 at or above `value` (non-negative), so a stored
/// tolerance is never tighter than the derived one.
fn round_up_to_f32(value: f64) -> f32 {
    let nearest = value as f32;
    if f64::from(nearest) >= value {
        nearest
    } else {
        f32::from_bits(nearest.to_bits() + 1)
    }
}

/// Every config of the tune space: compiled ones and pruned ones, over all
/// chips, without repeats. Bounds that depend on the config take the
/// largest over these, so they hold for the oracle's config and every
/// variant's.
pub fn tune_space(artifact: &KernelArtifact) -> Vec<ConfigValues> {
    let mut configs: Vec<ConfigValues> = Vec::new();
    let all = artifact
        .variants
        .iter()
        .map(|v| v.config)
        .chain(artifact.pruned.iter().map(|p| p.config));
    for config in all {
        if !configs.contains(&config) {
            configs.push(config);
        }
    }
    configs
}

/// The largest value tune parameter `name` takes, or the smallest.
pub fn tune_extreme(artifact: &KernelArtifact, name: &str, largest: bool) -> Result<i64> {
    let values: Vec<i64> = tune_space(artifact)
        .iter()
        .filter_map(|config| config.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
        .collect();
    let extreme = if largest {
        values.iter().max()
    } else {
        values.iter().min()
    };
    extreme.copied().ok_or_else(|| {
        anyhow::anyhow!(
            "{}: no compiled or pruned config sets {name} (built without PTX?)",
            artifact.name
        )
    })
}

#[cfg(test)]
mod tests {
    use super::round_up_to_f32;

    #[test]
    fn tolerances_round_up() {
        let value = 0.1f64;
        assert!(f64::from(round_up_to_f32(value)) >= value);
        assert_eq!(round_up_to_f32(0.5), 0.5);
    }
}
