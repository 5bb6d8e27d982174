//! The runnable examples carry each kernel inline in `phobos::kernel!`;
//! the tests compile the same kernels from `kernels/*.ph`. This keeps the
//! two texts the same, ignoring comments and whitespace.

use std::path::Path;

const KERNELS: &[&str] = &[
    "saxpy",
    "gemm_f32",
    "gemm_f16",
    "gemm_f16_tc",
    "gemm_f16_tc_pipe",
    "softmax",
    "layernorm",
    "rmsnorm",
    "flash_attn_f32",
    "flash_attn_f16",
    "flash_attn_f16_tc",
    "gla_chunk",
];

/// The text without `//` comments and whitespace.
fn normalized(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect()
}

/// The body of the `phobos::kernel! { ... }` call in an example's source.
fn inline_kernel(source: &str) -> Option<&str> {
    let start = source.find("phobos::kernel! {")? + "phobos::kernel! {".len();
    let mut depth = 1usize;
    for (offset, c) in source[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&source[start..start + offset]);
                }
            }
            _ => {}
        }
    }
    None
}

#[test]
fn every_example_inlines_its_kernel_file_verbatim() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in KERNELS {
        let file = std::fs::read_to_string(root.join(format!("kernels/{name}.ph"))).unwrap();
        let example = std::fs::read_to_string(root.join(format!("examples/{name}.rs"))).unwrap();
        let inline = inline_kernel(&example)
            .unwrap_or_else(|| panic!("examples/{name}.rs has no phobos::kernel! {{ ... }}"));
        assert_eq!(
            normalized(inline),
            normalized(&file),
            "examples/{name}.rs differs from kernels/{name}.ph"
        );
    }
}
