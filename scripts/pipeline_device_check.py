#!/usr/bin/env python3
"""Runs the gemm kernels' PTX (plain and `@pipeline`) on a GPU against
PyTorch in f64, on ragged shapes and on layouts that take every copy path
of `@pipeline`: contiguous, transposed (innermost stride != 1), padded rows
(odd row stride: f16 rows start misaligned) and a base pointer one element
off (misaligned for 4-byte copies). sm_75 PTX runs too (register prefetch).

Prepare (here): PHOBOS_DUMP_PTX_DIR=.device/mlir PHOBOS_CHIPS=sm_75,sm_80,sm_90 \
  cargo test -p phobos-build --features ptx --test mlir_ptx example_kernels_at_default_config
Run (device): python3 scripts/pipeline_device_check.py .device/mlir
Exit status 1 when any run is wrong.
"""
import ctypes, glob, json, os, sys
import torch
cu = ctypes.CDLL("libcuda.so.1")
def check(r, what):
    if r != 0: raise RuntimeError(f"{what}: CUresult {r}")
def load(path, name):
    mod = ctypes.c_void_p(); data = open(path, "rb").read() + b"\0"
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(data)), "load " + path)
    fn = ctypes.c_void_p(); check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "getfn")
    return fn
def launch(fn, meta, tensors, scalars, dims, grid):
    it = ctypes.c_int32 if meta["index_bits"] == 32 else ctypes.c_int64
    args = []
    for p in meta["params"]:
        if p["kind"] == "tensor": args.append(ctypes.c_uint64(tensors[p["name"]].data_ptr()))
        else: args.append(ctypes.c_float(scalars[p["name"]]))
    for d in meta["dims"]: args.append(ctypes.c_int32(dims[d]))
    for p in meta["params"]:
        if p["kind"] == "tensor":
            for s in tensors[p["name"]].stride(): args.append(it(s))
    ptrs = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    check(cu.cuLaunchKernel(fn, grid[0], grid[1], 1, meta["threads"], 1, 1, 0, None, ptrs, None), "launch")
    torch.cuda.synchronize()
def cdiv(a, b): return (a + b - 1) // b
def make(shape, dtype, layout):
    m, k = shape
    if layout == "contig":
        return torch.randn(m, k, device="cuda").to(dtype)
    if layout == "transposed":   # innermost stride != 1
        return torch.randn(k, m, device="cuda").to(dtype).t()
    if layout == "padded":       # odd row stride: rows start misaligned for f16
        return torch.randn(m, k + 3, device="cuda").to(dtype)[:, :k]
    if layout == "offset":       # base pointer misaligned by one element
        flat = torch.randn(m * k + 1, device="cuda").to(dtype)
        return flat[1:].view(m, k)
torch.manual_seed(0); torch.zeros(1, device="cuda")
fails = 0; rows = 0
src = sys.argv[1] if len(sys.argv) > 1 else ".device/mlir"
for mp in sorted(glob.glob(os.path.join(src, "gemm_*.json"))):
    meta = json.load(open(mp)); c = meta["config"]
    f16 = "f16" in meta["kernel"]
    dt = torch.float16 if f16 else torch.float32
    try:
        fn = load(mp[:-5] + ".ptx", meta["kernel"])
    except Exception as e:
        print("ERROR", os.path.basename(mp), e); fails += 1; continue
    for (m, k, n) in [(123, 77, 150), (40, 5, 33), (17, 1, 9), (70, 130, 66)]:
        for la, lb in [("contig", "contig"), ("transposed", "padded"), ("offset", "offset"), ("padded", "transposed")]:
            a = make((m, k), dt, la); b = make((k, n), dt, lb)
            cc = torch.randn(m, n, device="cuda")
            ref = a.double() @ b.double()
            if f16:
                scal = {}; cc.zero_()
            else:
                scal = {"alpha": 0.5, "beta": 2.0}; ref = 0.5 * ref + 2.0 * cc.double()
            grid = [cdiv(m, c["TILE_M"]), cdiv(n, c["TILE_N"])]
            try:
                launch(fn, meta, {"A": a, "B": b, "C": cc}, scal, {"M": m, "K": k, "N": n}, grid)
                err = (cc.double() - ref).abs().max().item()
                ok = err <= 1e-3 * max(1.0, ref.abs().max().item()) and torch.isfinite(cc).all().item()
            except Exception as e:
                ok = False; err = str(e)
            rows += 1
            if not ok:
                fails += 1
                print("WRONG", os.path.basename(mp), (m, k, n), la, lb, err, flush=True)
    # timing: contiguous 2048^3-ish for info
    m = k = n = 1024
    a = torch.randn(m, k, device="cuda").to(dt); b = torch.randn(k, n, device="cuda").to(dt); cc = torch.zeros(m, n, device="cuda")
    grid = [cdiv(m, c["TILE_M"]), cdiv(n, c["TILE_N"])]
    launch(fn, meta, {"A": a, "B": b, "C": cc}, {"alpha": 1.0, "beta": 0.0}, {"M": m, "K": k, "N": n}, grid)
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True); s.record()
    for _ in range(3): launch(fn, meta, {"A": a, "B": b, "C": cc}, {"alpha": 1.0, "beta": 0.0}, {"M": m, "K": k, "N": n}, grid)
    e.record(); torch.cuda.synchronize()
    print("time", os.path.basename(mp)[:-5], f"{s.elapsed_time(e)/3:.3f} ms", flush=True)
print(f"{rows} runs, {fails} failures")
sys.exit(1 if fails else 0)
