//! The example kernels of `kernels/*.ph`, compiled from the files (the
//! runnable examples carry the same text inline; a test keeps them equal).

phobos::kernel_file!("kernels/saxpy.ph");
phobos::kernel_file!("kernels/gemm_f32.ph");
phobos::kernel_file!("kernels/gemm_f16.ph");
phobos::kernel_file!("kernels/gemm_f16_tc.ph");
phobos::kernel_file!("kernels/gemm_f16_tc_pipe.ph");
phobos::kernel_file!("kernels/gemm_f32_pipe.ph");
phobos::kernel_file!("kernels/gemm_f16_pipe.ph");
phobos::kernel_file!("kernels/softmax.ph");
phobos::kernel_file!("kernels/layernorm.ph");
phobos::kernel_file!("kernels/rmsnorm.ph");
phobos::kernel_file!("kernels/flash_attn_f32.ph");
phobos::kernel_file!("kernels/flash_attn_f16.ph");
phobos::kernel_file!("kernels/flash_attn_f16_tc.ph");
phobos::kernel_file!("kernels/gla_chunk.ph");
// SPEC.md §10 edge cases (not an example: tests and the device check).
phobos::kernel_file!("kernels/edge/edge_cases.ph");
// Quantized matmuls, every format with an integer form (the device check).
phobos::kernel_file!("kernels/quant/qmatmul.ph");
