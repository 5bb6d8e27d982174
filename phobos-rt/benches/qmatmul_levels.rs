//! The 32-element quantized matmul (Q8_0, Q5_0, Q4_0, IQ4_NL weights x Q8_0
//! activations) at the AVX2, AVX-512 VNNI and AMX levels, one
//! thread, on Gemma 3 270M shapes (gate/up 2048x640, a 16384-row slice of
//! the 262144x640 output projection) over M = 1..512. Levels the CPU
//! lacks run the portable kernels (the bench says which level runs).
//! Criterion's throughput is multiply-adds (M*N*K elements).
//!
//! Run: `cargo bench -p phobos-rt --bench qmatmul_levels`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use phobos_quant::GgmlType;
use phobos_rt::host::qmatmul::{
    KernelLevel, QMatrixRef, kernel_level, matmul_quantized_at, quantize_activations,
};

fn floats(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn levels(c: &mut Criterion) {
    println!("detected qmatmul level: {:?}", kernel_level());
    let shapes = [
        ("gate", GgmlType::Q5_0, 2048, 640),
        ("output", GgmlType::Q8_0, 16384, 640),
        ("q4_0", GgmlType::Q4_0, 2048, 2048),
        ("iq4_nl", GgmlType::IQ4_NL, 2048, 640),
        ("q5_k", GgmlType::Q5_K, 640, 2048),
    ];
    for (name, ty, rows, cols) in shapes {
        let mut w = Vec::new();
        phobos_quant::quantize(ty, &floats(1, rows * cols), &mut w).expect("weights quantize");
        let matrix = QMatrixRef {
            ty,
            rows,
            cols,
            data: &w,
        };
        let mut group = c.benchmark_group(format!("qmatmul_{name}_{ty}_{rows}x{cols}"));
        group.sample_size(10);
        for m_rows in [1usize, 4, 8, 16, 64, 512] {
            if rows >= 16384 && m_rows > 64 {
                continue;
            }
            let x = floats(2, m_rows * cols);
            let acts = quantize_activations(ty, &x, m_rows, cols).expect("activations quantize");
            let mut out = vec![0.0f32; m_rows * rows];
            group.throughput(Throughput::Elements((m_rows * rows * cols) as u64));
            for level in [KernelLevel::Avx2, KernelLevel::Avx512Vnni, KernelLevel::Amx] {
                group.bench_with_input(
                    BenchmarkId::new(format!("{level:?}"), m_rows),
                    &m_rows,
                    |b, _| {
                        b.iter(|| {
                            matmul_quantized_at(level, &matrix, &acts, &mut out)
                                .expect("shapes match")
                        })
                    },
                );
            }
        }
        group.finish();
    }
}

criterion_group!(benches, levels);
criterion_main!(benches);
