//! Metadata reading with llama.cpp's defaults for absent keys.
//!
//! Scalar keys are read with [`Meta::u32`] / [`Meta::u32_or`], which refuse
//! an array. Keys llama.cpp reads per layer (`head_count`,
//! `head_count_kv`, `feed_forward_length`, `sliding_window_pattern`,
//! `recurrent_layers`, ...) may be a scalar (every layer) or an array with
//! one entry per block; [`Meta::u32_per_layer`] and
//! [`Meta::flag_per_layer`] read them per layer.

use crate::engine::{EngineError, Result};
use crate::gguf::{Array, Gguf};

pub(crate) struct Meta<'a> {
    pub gguf: &'a Gguf,
    pub arch: &'a str,
}

impl Meta<'_> {
    fn key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.arch)
    }

    pub fn has(&self, suffix: &str) -> bool {
        self.gguf.contains_key(&self.key(suffix))
    }

    /// An error naming the key when it is absent.
    pub fn require(&self, suffix: &str) -> Result<()> {
        if self.has(suffix) {
            return Ok(());
        }
        Err(EngineError::Metadata {
            key: self.key(suffix),
            reason: "required key is missing".into(),
        })
    }

    /// [`Meta::u32_per_layer`] whose default differs per layer
    /// (`head_count_kv` defaults to each layer's `head_count`).
    pub fn u32_per_layer_or(&self, suffix: &str, defaults: &[u32]) -> Result<Vec<u32>> {
        if self.has(suffix) {
            self.u32_per_layer(suffix, defaults.len(), 0)
        } else {
            Ok(defaults.to_vec())
        }
    }

    pub fn u32(&self, suffix: &str) -> Result<u32> {
        let key = self.key(suffix);
        if !self.gguf.contains_key(&key) {
            return Err(EngineError::Metadata {
                key,
                reason: "required key is missing".into(),
            });
        }
        self.scalar_u32(key)
    }

    pub fn u32_or(&self, suffix: &str, default: u32) -> Result<u32> {
        let key = self.key(suffix);
        if !self.gguf.contains_key(&key) {
            return Ok(default);
        }
        self.scalar_u32(key)
    }

    fn scalar_u32(&self, key: String) -> Result<u32> {
        if self.gguf.get(&key).and_then(|v| v.as_array()).is_some() {
            return Err(EngineError::Metadata {
                key,
                reason: "expected a single value, found an array (a per-layer value where the architecture takes one for all layers)".into(),
            });
        }
        Ok(self.gguf.get_u32(&key)?)
    }

    /// A value per layer for `n_layer` blocks: a scalar stands for every
    /// layer; an array must have exactly `n_layer` entries (llama.cpp's
    /// `get_key_or_arr`); absent, `default` for every layer.
    pub fn u32_per_layer(&self, suffix: &str, n_layer: usize, default: u32) -> Result<Vec<u32>> {
        let key = self.key(suffix);
        let Some(value) = self.gguf.get(&key) else {
            return Ok(vec![default; n_layer]);
        };
        let Some(array) = value.as_array() else {
            return Ok(vec![self.scalar_u32(key)?; n_layer]);
        };
        let bad = |reason: String| EngineError::Metadata {
            key: key.clone(),
            reason,
        };
        if array.len() != n_layer {
            return Err(bad(format!(
                "per-layer array has {} entries for {n_layer} layers",
                array.len()
            )));
        }
        (0..n_layer)
            .map(|il| {
                element_u32(array, il).ok_or_else(|| {
                    bad(format!(
                        "entry {il} is not a non-negative 32-bit integer (array of {})",
                        array.element_type()
                    ))
                })
            })
            .collect()
    }

    /// A per-layer flag stored as an array of bools or integers (non-zero
    /// is set), `n_layer` long; `None` when the key is absent or a scalar
    /// (callers then derive the flags from a pattern).
    pub fn flag_per_layer(&self, suffix: &str, n_layer: usize) -> Result<Option<Vec<bool>>> {
        let key = self.key(suffix);
        let Some(array) = self.gguf.get(&key).and_then(|v| v.as_array()) else {
            return Ok(None);
        };
        if array.len() != n_layer {
            return Err(EngineError::Metadata {
                key,
                reason: format!(
                    "per-layer array has {} entries for {n_layer} layers",
                    array.len()
                ),
            });
        }
        if let Some(flags) = array.as_bool() {
            return Ok(Some(flags.to_vec()));
        }
        (0..n_layer)
            .map(|il| array.integer_at(il).map(|v| v != 0))
            .collect::<Option<Vec<bool>>>()
            .map(Some)
            .ok_or_else(|| EngineError::Metadata {
                key,
                reason: format!(
                    "expected an array of bools or integers, found an array of {}",
                    array.element_type()
                ),
            })
    }

    /// Integers of an array key (`rope.dimension_sections`), `None` when
    /// absent.
    pub fn i64_array(&self, suffix: &str) -> Result<Option<Vec<i64>>> {
        let key = self.key(suffix);
        let Some(value) = self.gguf.get(&key) else {
            return Ok(None);
        };
        let bad = || EngineError::Metadata {
            key: key.clone(),
            reason: format!(
                "expected an array of integers, found {}",
                value.type_description()
            ),
        };
        let array = value.as_array().ok_or_else(bad)?;
        (0..array.len())
            .map(|i| array.integer_at(i).and_then(|v| i64::try_from(v).ok()))
            .collect::<Option<Vec<i64>>>()
            .map(Some)
            .ok_or_else(bad)
    }

    pub fn f32_or(&self, suffix: &str, default: f32) -> Result<f32> {
        let key = self.key(suffix);
        if !self.gguf.contains_key(&key) {
            return Ok(default);
        }
        Ok(self.gguf.get_f32(&key)?)
    }

    pub fn f32(&self, suffix: &str) -> Result<f32> {
        let key = self.key(suffix);
        if !self.gguf.contains_key(&key) {
            return Err(EngineError::Metadata {
                key,
                reason: "required key is missing".into(),
            });
        }
        Ok(self.gguf.get_f32(&key)?)
    }
}

fn element_u32(array: &Array, index: usize) -> Option<u32> {
    if let Some(flags) = array.as_bool() {
        return flags.get(index).map(|&b| u32::from(b));
    }
    array.integer_at(index).and_then(|v| u32::try_from(v).ok())
}

/// Every entry equal: the one value, or an error naming the key.
pub(crate) fn uniform(values: &[u32], key: &str) -> Result<u32> {
    match values.split_first() {
        Some((&first, rest)) if rest.iter().all(|&v| v == first) => Ok(first),
        Some(_) => Err(EngineError::Metadata {
            key: key.to_owned(),
            reason: format!(
                "per-layer values {values:?} differ, and this architecture takes one value for every layer"
            ),
        }),
        None => Err(EngineError::Metadata {
            key: key.to_owned(),
            reason: "no layers".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::{GgufWriter, Value};

    fn gguf(entries: &[(&str, Value)]) -> Gguf {
        let mut w = GgufWriter::new();
        w.add("general.architecture", Value::String("test".into()))
            .unwrap();
        for (key, value) in entries {
            w.add(&format!("test.{key}"), value.clone()).unwrap();
        }
        Gguf::from_vec(w.to_bytes()).unwrap()
    }

    #[test]
    fn per_layer_arrays_are_read_per_layer() {
        let g = gguf(&[
            ("head_count", Value::Array(Array::U32(vec![8, 4, 2]))),
            ("head_count_kv", Value::U32(2)),
            (
                "pattern",
                Value::Array(Array::Bool(vec![true, false, true])),
            ),
            ("ints", Value::Array(Array::I32(vec![1, 0, 0]))),
        ]);
        let meta = Meta {
            gguf: &g,
            arch: "test",
        };
        assert_eq!(meta.u32_per_layer("head_count", 3, 1).unwrap(), [8, 4, 2]);
        assert_eq!(
            meta.u32_per_layer("head_count_kv", 3, 1).unwrap(),
            [2, 2, 2]
        );
        assert_eq!(meta.u32_per_layer("absent", 3, 7).unwrap(), [7, 7, 7]);
        assert_eq!(meta.u32_per_layer("pattern", 3, 0).unwrap(), [1, 0, 1]);
        assert_eq!(
            meta.flag_per_layer("pattern", 3).unwrap(),
            Some(vec![true, false, true])
        );
        assert_eq!(
            meta.flag_per_layer("ints", 3).unwrap(),
            Some(vec![true, false, false])
        );
        assert_eq!(meta.flag_per_layer("head_count_kv", 3).unwrap(), None);
    }

    #[test]
    fn an_array_where_one_value_is_taken_is_an_error() {
        let g = gguf(&[("head_count", Value::Array(Array::U32(vec![8, 4])))]);
        let meta = Meta {
            gguf: &g,
            arch: "test",
        };
        // The first entry must not stand for every layer.
        let err = meta.u32_or("head_count", 1).unwrap_err().to_string();
        assert!(
            err.contains("test.head_count") && err.contains("array"),
            "{err}"
        );
        let err = meta
            .u32_per_layer("head_count", 3, 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 entries for 3 layers"), "{err}");
        let values = meta.u32_per_layer("head_count", 2, 1).unwrap();
        let err = uniform(&values, "test.head_count").unwrap_err().to_string();
        assert!(err.contains("[8, 4]"), "{err}");
    }

    #[test]
    fn negative_entries_are_refused() {
        let g = gguf(&[("head_count", Value::Array(Array::I32(vec![8, -1])))]);
        let meta = Meta {
            gguf: &g,
            arch: "test",
        };
        let err = meta
            .u32_per_layer("head_count", 2, 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("entry 1"), "{err}");
    }
}
