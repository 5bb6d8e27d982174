// The path is relative to the crate's Cargo.toml.
phobos::kernel_file!("kernels/does_not_exist.ph");

fn main() {}
