#!/usr/bin/env python3
"""f32 gemm GFLOP/s of numpy (OpenBLAS) on a fixed thread count: the outside
reference for the host gemm kernel (BENCHMARKS.md, host back end).

Run with the workaround variables unset (VERIFY.md):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 scripts/bench_numpy_gemm.py 1024 2
"""
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    rng = np.random.default_rng(9)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    with threadpool_limits(limits=threads, user_api="blas"):
        info = [(p["internal_api"], p.get("architecture"), p["num_threads"]) for p in threadpool_info()]
        a @ b
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
    print(f"numpy {size}^3 f32, {threads} threads, best of 5: "
          f"{2 * size**3 / best / 1e9:.2f} GFLOP/s  blas={info}")


if __name__ == "__main__":
    main()
