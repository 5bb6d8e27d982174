//! `dot` on tiles of each contraction type at a kernel-sized tile
//! (64 x 256 @ 256 x 64), one thread: `i8` (the VNNI byte kernel where the
//! CPU has it) next to the same values as `i32` tiles (the widened loop the
//! `i8` path ran before), and `f16`/`bf16` (widened on the arena, then the
//! f32 micro-kernel) next to `f32`. Criterion's `Gelem/s` is GOP/s
//! (2*M*N*K per iteration).
//!
//! Run: `cargo bench -p phobos-rt --bench dot_tiles`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::{bf16, f16};
use phobos_rt::host::{Tile, dot_acc};
use phobos_rt::{DotElement, Element};
use std::hint::black_box;

const M: usize = 64;
const K: usize = 256;
const N: usize = 64;

fn values<T: Element>(len: usize, seed: usize, of: impl Fn(i32) -> T) -> Vec<T> {
    (0..len)
        .map(|i| of(((i * 37 + seed * 101) % 255) as i32 - 127))
        .collect()
}

fn bench_type<T: DotElement>(c: &mut Criterion, name: &str, of: impl Fn(i32) -> T + Copy) {
    let (Ok(a), Ok(b), Ok(mut acc)) = (
        Tile::from_vec(&[M, K], values(M * K, 1, of)),
        Tile::from_vec(&[K, N], values(K * N, 2, of)),
        Tile::<T::Acc>::zeros(&[M, N]),
    ) else {
        return;
    };
    let mut group = c.benchmark_group("dot_tiles");
    group.throughput(Throughput::Elements((2 * M * N * K) as u64));
    group.bench_function(name, |bench| {
        bench.iter(|| dot_acc(&mut acc, black_box(&a), black_box(&b)))
    });
    group.finish();
}

fn dot_tiles(c: &mut Criterion) {
    bench_type(c, "i8", |v| v as i8);
    bench_type(c, "i32 (widened i8)", |v| v);
    bench_type(c, "f32", |v| v as f32 / 64.0);
    bench_type(c, "f16", |v| f16::from_f32(v as f32 / 64.0));
    bench_type(c, "bf16", |v| bf16::from_f32(v as f32 / 64.0));
}

criterion_group!(benches, dot_tiles);
criterion_main!(benches);
