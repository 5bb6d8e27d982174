//! Arbitrary chat template source and messages through `ChatTemplate`:
//! parsing and rendering answer `Ok` or `Err`, never panic.
#![no_main]

#[path = "../../phobos-models/tests/fuzz_bodies/mod.rs"]
mod fuzz_bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_bodies::chat(data));
