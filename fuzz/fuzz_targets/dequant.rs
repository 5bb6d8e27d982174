//! A ggml type and arbitrary bytes into dequantize, arbitrary floats into
//! quantize: whole blocks in, one value per element out, never a panic.
#![no_main]

#[path = "../../phobos-models/tests/fuzz_bodies/mod.rs"]
mod fuzz_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_bodies::dequant(data));
