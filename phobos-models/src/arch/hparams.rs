//! Metadata reading with llama.cpp's defaults for absent keys.

use crate::engine::{EngineError, Result};
use crate::gguf::Gguf;

pub(crate) struct Meta<'a> {
    pub gguf: &'a Gguf,
    pub arch: &'a str,
}

impl Meta<'_> {
    fn key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.arch)
    }

    pub fn u32(&self, suffix: &str) -> Result<u32> {
        let key = self.key(suffix);
        if !self.gguf.contains_key(&key) {
            return Err(EngineError::Metadata {
                key,
                reason: "required key is missing".into(),
            });
        }
        Ok(self.gguf.get_u32(&key)?)
    }

    pub fn u32_or(&self, suffix: &str, default: u32) -> Result<u32> {
        let key = self.key(suffix);
        if !self.gguf.contains_key(&key) {
            return Ok(default);
        }
        // Some writers store per-layer arrays; the first entry stands for all.
        if let Some(array) = self.gguf.get(&key).and_then(|v| v.as_array()) {
            return array
                .integer_at(0)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| EngineError::Metadata {
                    key,
                    reason: "expected a non-negative integer".into(),
                });
        }
        Ok(self.gguf.get_u32(&key)?)
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
