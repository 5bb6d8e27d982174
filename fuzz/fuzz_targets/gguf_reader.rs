//! Arbitrary bytes into the GGUF reader: it must return an error or a file
//! whose every metadata value and tensor can be walked, never panic.
#![no_main]

// The reader's own sources, compiled into this target; they refer to each
// other as `crate::gguf` and `crate::quant`, which these modules provide.
#[allow(dead_code, unused_imports)]
#[path = "../../phobos-models/src/gguf/mod.rs"]
mod gguf;
#[allow(dead_code, unused_imports)]
#[path = "../../phobos-models/src/quant/mod.rs"]
mod quant;

use gguf::{Array, Gguf, Value, dequantize_view};
use libfuzzer_sys::fuzz_target;

/// Touches every element so lazily wrong lengths would surface.
fn walk_array(array: &Array) -> usize {
    match array {
        Array::Array(items) => items.iter().map(walk_array).sum::<usize>() + 1,
        Array::String(items) => items.iter().map(String::len).sum(),
        other => (0..other.len()).filter_map(|i| other.integer_at(i)).count() + other.len(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(gguf) = Gguf::from_bytes(data) else {
        return;
    };
    let mut touched = 0usize;
    for (key, value) in gguf.metadata() {
        touched += key.len() + value.to_string().len();
        if let Value::Array(array) = value {
            touched += walk_array(array);
        }
        let _ = gguf.get_u32(key);
        let _ = gguf.get_str(key);
        let _ = gguf.get_f32(key);
    }
    let _ = gguf.arch();
    for view in gguf.tensor_views() {
        assert_eq!(view.data.len() as u64, view.info.n_bytes, "{}", view.name());
        // Bound the work per input; the directory was validated either way.
        if view.n_elements() <= 1 << 16 {
            let values = dequantize_view(&view);
            if let Ok(values) = values {
                assert_eq!(values.len() as u64, view.n_elements());
            }
        }
    }
    std::hint::black_box(touched);
});
