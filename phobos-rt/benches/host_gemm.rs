//! 1024^3 f32 gemm as tile programs (64x64 tiles, K-step 32,
//! `acc += dot(a, b)`) through `run_grid` + `load` + `dot_acc` + `store`,
//! next to `matrixmultiply::sgemm`. Criterion's `Gelem/s` throughput is
//! GFLOP/s (2*M*N*K elements per iteration); a plain GFLOP/s line is printed
//! too. `matrixmultiply` runs on one thread here; the tile gemm runs on the
//! host pool's `PHOBOS_THREADS` threads (set it to 1 to compare per thread).
//!
//! Run: `cargo bench -p phobos-rt --bench host_gemm`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use phobos_rt::host::{self, Slice, TensorRead, TensorWrite, Tile};
use phobos_rt::{Device, Tensor};
use std::time::Instant;

const M: usize = 1024;
const N: usize = 1024;
const K: usize = 1024;
const TILE_M: usize = 64;
const TILE_N: usize = 64;
const TILE_K: usize = 32;

fn tile_gemm(a: &Tensor<f32>, b: &Tensor<f32>, c: &mut Tensor<f32>) -> phobos_rt::Result<()> {
    let (a, b, c) = (
        TensorRead::new(a)?,
        TensorRead::new(b)?,
        TensorWrite::new(c)?,
    );
    let grid = [M.div_ceil(TILE_M), N.div_ceil(TILE_N), 1];
    host::try_run_grid(grid, |pid| {
        let row = i64::from(pid[0]) * TILE_M as i64;
        let col = i64::from(pid[1]) * TILE_N as i64;
        let mut acc = Tile::<f32>::zeros(&[TILE_M, TILE_N])?;
        for kt in (0..K as i64).step_by(TILE_K) {
            let a_tile = host::load(
                &a,
                &[
                    Slice::Span {
                        start: row,
                        len: TILE_M,
                    },
                    Slice::Span {
                        start: kt,
                        len: TILE_K,
                    },
                ],
                0.0,
            )?;
            let b_tile = host::load(
                &b,
                &[
                    Slice::Span {
                        start: kt,
                        len: TILE_K,
                    },
                    Slice::Span {
                        start: col,
                        len: TILE_N,
                    },
                ],
                0.0,
            )?;
            host::dot_acc(&mut acc, &a_tile, &b_tile)?;
        }
        host::store(
            &c,
            &[
                Slice::Span {
                    start: row,
                    len: TILE_M,
                },
                Slice::Span {
                    start: col,
                    len: TILE_N,
                },
            ],
            &acc,
        )
    })
}

fn reference_sgemm(a: &[f32], b: &[f32], c: &mut [f32]) {
    // SAFETY: the slices hold M*K, K*N and M*N elements with the row-major
    // strides passed.
    unsafe {
        matrixmultiply::sgemm(
            M,
            K,
            N,
            1.0,
            a.as_ptr(),
            K as isize,
            1,
            b.as_ptr(),
            N as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            N as isize,
            1,
        );
    }
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    // Small integers keep every partial sum exact, so both results must agree
    // up to summation order only.
    let a = (0..M * K)
        .map(|i| ((i * 7 + 3) % 11) as f32 - 5.0)
        .collect();
    let b = (0..K * N)
        .map(|i| ((i * 5 + 1) % 13) as f32 - 6.0)
        .collect();
    (a, b)
}

fn gflops(seconds: f64) -> f64 {
    2.0 * (M * N * K) as f64 / seconds / 1e9
}

fn time_best(mut f: impl FnMut()) -> f64 {
    f();
    (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn bench(c: &mut Criterion) {
    let dev = Device::host();
    let (a_host, b_host) = inputs();
    let a = dev.tensor_from(&a_host, [M, K]).expect("alloc a");
    let b = dev.tensor_from(&b_host, [K, N]).expect("alloc b");
    let mut out = dev.zeros::<f32>([M, N]).expect("alloc c");
    let mut reference = vec![0.0f32; M * N];

    reference_sgemm(&a_host, &b_host, &mut reference);
    tile_gemm(&a, &b, &mut out).expect("tile gemm");
    assert_eq!(
        out.to_vec().expect("read c"),
        reference,
        "tile gemm disagrees with sgemm"
    );

    let threads = phobos_rt::HostDevice.threads();
    let tile_all = time_best(|| tile_gemm(&a, &b, &mut out).expect("gemm"));
    let mm = time_best(|| reference_sgemm(&a_host, &b_host, &mut reference));
    println!(
        "host_gemm 1024^3 f32: tile programs, {threads} threads: {:.1} GFLOP/s",
        gflops(tile_all)
    );
    println!(
        "host_gemm 1024^3 f32: matrixmultiply::sgemm, 1 thread: {:.1} GFLOP/s",
        gflops(mm)
    );

    let mut group = c.benchmark_group("gemm_1024_f32");
    group.throughput(Throughput::Elements(2 * (M * N * K) as u64));
    group.sample_size(10);
    group.bench_function("tile_programs_pool_threads", |bench| {
        bench.iter(|| tile_gemm(&a, &b, &mut out).expect("gemm"))
    });
    group.bench_function("matrixmultiply_sgemm", |bench| {
        bench.iter(|| reference_sgemm(&a_host, &b_host, &mut reference))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
