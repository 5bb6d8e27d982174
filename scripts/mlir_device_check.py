#!/usr/bin/env python3
"""Runs the MLIR back end's PTX on a GPU and compares it with PyTorch.

Prepare (here, with LLVM 22; writes PTX + launch metadata, sm_90 for H200):
    PHOBOS_DUMP_PTX_DIR=.device/mlir PHOBOS_CHIPS=sm_90 \
      cargo test -p phobos-build --features ptx --test mlir_ptx example_kernels_at_default_config
Run (on the device machine; needs only the driver, PyTorch and this file):
    python3 scripts/mlir_device_check.py .device/mlir "$OUT/mlir_device_check.csv"

Each kernel runs at its default config on ragged shapes (no extent is a
multiple of a tile) through the ABI of build-support/src/back/mlir/emit:
params in order, then symbolic dims (i32), then every tensor's strides
(elements, index width of the variant). The reference is PyTorch in f64.
Exit status 1 when any kernel is wrong or fails to load.
"""
import csv
import ctypes
import glob
import json
import os
import sys

import torch

cu = ctypes.CDLL("libcuda.so.1")


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


CTYPES = {
    "f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32, "i64": ctypes.c_int64, "bool": ctypes.c_uint8,
}
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def load_function(ptx_path, name):
    module = ctypes.c_void_p()
    data = open(ptx_path, "rb").read() + b"\0"
    check(cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(data)), f"cuModuleLoadData {ptx_path}")
    fn = ctypes.c_void_p()
    check(cu.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), f"cuModuleGetFunction {name}")
    return fn


def launch(fn, meta, tensors, scalars, dims, grid):
    index_type = ctypes.c_int32 if meta["index_bits"] == 32 else ctypes.c_int64
    args = []
    for p in meta["params"]:
        if p["kind"] == "tensor":
            args.append(ctypes.c_uint64(tensors[p["name"]].data_ptr()))
        else:
            args.append(CTYPES[p["dtype"]](scalars[p["name"]]))
    for d in meta["dims"]:
        args.append(ctypes.c_int32(dims[d]))
    for p in meta["params"]:
        if p["kind"] == "tensor":
            for s in tensors[p["name"]].stride():
                args.append(index_type(s))
    pointers = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    gx, gy, gz = (list(grid) + [1, 1, 1])[:3]
    check(cu.cuLaunchKernel(fn, gx, gy, gz, meta["threads"], 1, 1, 0, None, pointers, None), "cuLaunchKernel")
    torch.cuda.synchronize()


def cdiv(a, b):
    return (a + b - 1) // b


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=torch.float64).to(dtype)


def case(meta):
    """(tensors, scalars, dims, grid, output name, reference f64 tensor, rtol, atol)."""
    k, c = meta["kernel"], meta["config"]
    if k == "saxpy":
        n = 1_000_003
        x, y, out = rand(n), rand(n), torch.zeros(n, device="cuda")
        ref = 1.5 * x.double() + y.double()
        return {"x": x, "y": y, "out": out}, {"alpha": 1.5}, {"N": n}, [cdiv(n, c["BLOCK"])], "out", ref, 1e-6, 1e-6
    if k == "softmax":
        r, cols = 37, 1000
        x, y = rand(r, cols) * 3, torch.zeros(r, cols, device="cuda")
        ref = torch.softmax(x.double(), dim=1)
        return {"X": x, "Y": y}, {}, {"R": r, "C": cols}, [cdiv(r, c["ROWS"])], "Y", ref, 1e-4, 1e-6
    if k in ("rmsnorm", "layernorm"):
        r, cols = 19, 777
        x, w, b, y = rand(r, cols), rand(cols), rand(cols), torch.zeros(r, cols, device="cuda")
        xd = x.double()
        if k == "rmsnorm":
            ref = xd / torch.sqrt((xd * xd).mean(dim=1, keepdim=True) + 1e-5) * w.double()
            tensors = {"X": x, "W": w, "Y": y}
        else:
            ref = torch.nn.functional.layer_norm(xd, (cols,), w.double(), b.double(), 1e-5)
            tensors = {"X": x, "W": w, "B": b, "Y": y}
        return tensors, {"eps": 1e-5}, {"R": r, "C": cols}, [r], "Y", ref, 1e-4, 1e-5
    if k == "gemm_f32":
        m, kk, n = 123, 77, 150
        a, b, cc = rand(m, kk), rand(kk, n), rand(m, n)
        ref = 0.5 * (a.double() @ b.double()) + 2.0 * cc.double()
        grid = [cdiv(m, c["TILE_M"]), cdiv(n, c["TILE_N"])]
        return {"A": a, "B": b, "C": cc}, {"alpha": 0.5, "beta": 2.0}, {"M": m, "K": kk, "N": n}, grid, "C", ref, 1e-4, 1e-4
    if k in ("gemm_f16", "gemm_f16_tc"):
        m, kk, n = 100, 70, 90
        a, b, cc = rand(m, kk, dtype=torch.float16), rand(kk, n, dtype=torch.float16), torch.zeros(m, n, device="cuda")
        ref = a.double() @ b.double()
        grid = [cdiv(m, c["TILE_M"]), cdiv(n, c["TILE_N"])]
        return {"A": a, "B": b, "C": cc}, {}, {"M": m, "K": kk, "N": n}, grid, "C", ref, 1e-3, 1e-3
    if k == "flash_attn_f32":
        h, s, t = 3, 70, 90
        q, kt, v, o = rand(h, s, 64), rand(h, t, 64), rand(h, t, 64), torch.zeros(h, s, 64, device="cuda")
        scale = 0.125
        p = torch.softmax(scale * q.double() @ kt.double().transpose(1, 2), dim=2)
        ref = p @ v.double()
        grid = [cdiv(s, c["BLOCK_M"]), h]
        return {"Q": q, "K": kt, "V": v, "O": o}, {"scale": scale}, {"H": h, "S": s, "T": t}, grid, "O", ref, 1e-3, 1e-4
    if k in ("flash_attn_f16", "flash_attn_f16_tc"):
        # p is rounded to f16 before P @ V and O is f16: ~2^-11 relative each.
        h, s, t = 3, 70, 90
        f16 = torch.float16
        q, kt, v = rand(h, s, 64, dtype=f16), rand(h, t, 64, dtype=f16), rand(h, t, 64, dtype=f16)
        o = torch.zeros(h, s, 64, device="cuda", dtype=f16)
        scale = 0.125
        p = torch.softmax(scale * q.double() @ kt.double().transpose(1, 2), dim=2)
        ref = p @ v.double()
        grid = [cdiv(s, c["BLOCK_M"]), h]
        return {"Q": q, "K": kt, "V": v, "O": o}, {"scale": scale}, {"H": h, "S": s, "T": t}, grid, "O", ref, 1e-2, 1e-2
    if k == "gla_chunk":
        h, t = 2, 50
        q, kt, v = rand(h, t, 64), rand(h, t, 64), rand(h, t, 64)
        g = -torch.rand(h, t, 1, device="cuda") * 0.1
        o = torch.zeros(h, t, 64, device="cuda")
        scale = 0.125
        ref = torch.zeros(h, t, 64, dtype=torch.float64, device="cuda")
        for hh in range(h):
            state = torch.zeros(64, 64, dtype=torch.float64, device="cuda")
            for i in range(t):
                state = torch.exp(g[hh, i, 0].double()) * state + kt[hh, i].double()[:, None] @ v[hh, i].double()[None, :]
                ref[hh, i] = scale * q[hh, i].double() @ state
        tensors = {"Q": q, "K": kt, "V": v, "G": g, "O": o}
        return tensors, {"scale": scale}, {"H": h, "T": t}, [h], "O", ref, 1e-3, 1e-3
    return None


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else ".device/mlir"
    out_csv = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.environ.get("OUT", "."), "mlir_device_check.csv")
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # makes the primary context current for the driver API
    rows, failed = [], 0
    for meta_path in sorted(glob.glob(os.path.join(src, "*.json"))):
        meta = json.load(open(meta_path))
        built = case(meta)
        name = f'{meta["kernel"]}.{meta["chip"]}.i{meta["index_bits"]}'
        if built is None:
            rows.append([name, meta["config"], "skipped", "", ""])
            continue
        tensors, scalars, dims, grid, output, ref, rtol, atol = built
        try:
            fn = load_function(meta_path[:-5] + ".ptx", meta["kernel"])
            launch(fn, meta, tensors, scalars, dims, grid)
            got = tensors[output].double()
            err = (got - ref).abs()
            bound = atol + rtol * ref.abs()
            ok = bool((err <= bound).all()) and bool(torch.isfinite(got).all())
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                launch(fn, meta, tensors, scalars, dims, grid)
            end.record()
            torch.cuda.synchronize()
            time_ms = start.elapsed_time(end) / 10
            rows.append([name, meta["config"], "ok" if ok else "WRONG", f"{err.max().item():.3e}", f"{time_ms:.4f}"])
            failed += 0 if ok else 1
        except Exception as e:  # one kernel's failure must not hide the others
            rows.append([name, meta["config"], f"ERROR {e}", "", ""])
            failed += 1
        print(*rows[-1], flush=True)
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "config", "result", "max_abs_err", "time_ms"])
        w.writerows(rows)
    print(f"{len(rows)} variants, {failed} failed; CSV at {out_csv}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
