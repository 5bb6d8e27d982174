//! Arbitrary bytes into the GGUF reader: it must return an error or a file
//! whose every metadata value and tensor can be walked, never panic.
#![no_main]

#[path = "../../phobos-models/tests/fuzz_bodies/mod.rs"]
mod fuzz_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_bodies::gguf_reader(data));
