#!/usr/bin/env python3
"""Checks every embedded PTX variant of the example kernels on a GPU
against the host back end (the oracle), and times the GEMMs against cuBLAS.

Prepare here (writes .device/: inputs, oracle outputs, tolerances, PTX and
manifest.json; see examples/examples/device_dump):
    cargo run -p phobos-examples --example device_dump -- .device sm_90
Run on the device machine (driver, PyTorch; no Rust):
    python3 scripts/device_check.py .device --out "$OUT"
Check the dump without a GPU (no torch or libcuda needed):
    python3 scripts/device_check.py .device --dry-run

Launch ABI (build-support/src/back/mlir/emit/mod.rs): every parameter in
order (tensor: u64 pointer; scalar by value), then each symbolic dim as
i32, then every tensor's strides in elements at the variant's index width;
grid from the kernel's @grid rule at the variant's config, block
(threads, 1, 1), static shared memory only.

A variant passes when every output element is finite and within its
tolerance of the oracle (manifest "tolerance"), or, for an output marked
"exact" (the SPEC edge-case table), equal to the oracle bit for bit (any
NaN matching any NaN), and no tensor was written
outside its extent (guard bands around every buffer). Launches run in a
worker process: a launch that kills the CUDA context (illegal address,
timeout) is recorded against that variant and a fresh worker carries on
with the next, so one broken variant hides no others.

Writes OUT/device_check.csv and OUT/device_bench.csv; exit 1 when any
variant fails or cannot be loaded or run.
"""
import argparse
import ast
import csv
import ctypes
import json
import os
import struct
import subprocess
import sys
import time

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u8": 1, "i8": 1,
               "i16": 2, "u16": 2, "bool": 1}
# Exponent and mantissa masks of each float type's bit pattern: a NaN has
# every exponent bit and some mantissa bit set.
NAN_MASKS = {"f16": (0x7C00, 0x03FF), "bf16": (0x7F80, 0x007F), "f32": (0x7F800000, 0x007FFFFF),
             "f64": (0x7FF0000000000000, 0x000FFFFFFFFFFFFF)}
# Guard band on each side of every device buffer, in bytes (a multiple of
# 256 keeps the tensor as aligned as the allocation).
GUARD_BYTES = 4096
CHECK_COLUMNS = ["kernel", "chip", "config", "max_abs_err", "max_rel_err", "tolerance", "pass",
                 "variant", "index_bits", "default", "worst_ratio", "note"]
BENCH_COLUMNS = ["kernel", "chip", "config", "role", "m", "n", "k", "time_ms", "gflops",
                 "torch_gflops", "vs_torch", "rel_err_vs_torch", "note"]


# ---------------------------------------------------------------- grid rule

def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def eval_grid_entry(expr, values):
    """The @grid entry `expr` (literals, names, + - * / %, cdiv/min/max) on
    integers; `/` truncates, as in the kernel language."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise ValueError(f"grid entry {expr!r}: unknown name {node.id}")
            return int(values[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.Div, ast.Mod)):
                if b == 0:
                    raise ValueError(f"grid entry {expr!r} divides by zero")
                q = _trunc_div(a, b)
                return q if isinstance(node.op, ast.Div) else a - q * b
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
            a, b = ev(node.args[0]), ev(node.args[1])
            if node.func.id == "cdiv":
                if b <= 0:
                    raise ValueError(f"grid entry {expr!r}: cdiv by {b}")
                return -(-a // b)
            if node.func.id == "min":
                return min(a, b)
            if node.func.id == "max":
                return max(a, b)
        raise ValueError(f"grid entry {expr!r}: unsupported {ast.dump(node)}")
    return ev(ast.parse(expr, mode="eval"))


def grid_for(kernel, config, dims):
    values = dict(dims)
    values.update(config)
    grid = [eval_grid_entry(e, values) for e in kernel["grid_rule"]]
    return (grid + [1, 1, 1])[:3]


# ------------------------------------------------------- manifest and files

def tensor_params(kernel):
    return [p for p in kernel["params"] if p["kind"] == "tensor"]


def row_major_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return list(reversed(strides))


def shape_of(param, dims):
    return [int(d) if d.isdigit() else int(dims[d]) for d in param["dims"]]


def pack_args(kernel, variant, pointers, scalars, dims, shapes):
    """The cuLaunchKernel argument values, in ABI order, as ctypes objects.
    `pointers`/`shapes`: per tensor parameter; `scalars`: per scalar."""
    index_type = {32: ctypes.c_int32, 64: ctypes.c_int64}[variant["index_bits"]]
    args = []
    for p in kernel["params"]:
        if p["kind"] == "tensor":
            args.append(ctypes.c_uint64(pointers[p["name"]]))
        else:
            args.append(scalar_arg(p["dtype"], scalars[p["name"]]))
    for d in kernel["dims"]:
        args.append(ctypes.c_int32(int(dims[d])))
    for p in tensor_params(kernel):
        for stride in row_major_strides(shapes[p["name"]]):
            args.append(index_type(stride))
    return args


def scalar_arg(dtype, value):
    if dtype == "f32":
        return ctypes.c_float(value)
    if dtype == "f64":
        return ctypes.c_double(value)
    if dtype == "f16":
        return ctypes.c_uint16(struct.unpack("<H", struct.pack("<e", value))[0])
    if dtype == "bf16":
        return ctypes.c_uint16(struct.unpack("<I", struct.pack("<f", value))[0] >> 16)
    if dtype in ("i32",):
        return ctypes.c_int32(int(value))
    if dtype in ("u32",):
        return ctypes.c_uint32(int(value))
    if dtype == "i64":
        return ctypes.c_int64(int(value))
    if dtype == "bool":
        return ctypes.c_uint8(1 if value else 0)
    raise ValueError(f"no scalar ABI for {dtype}")


def expect_file(root, entry, count, what):
    path = os.path.join(root, entry)
    size = os.path.getsize(path)
    if size != count:
        raise ValueError(f"{what}: {path} is {size} bytes, expected {count}")
    return path


def validate(root, manifest):
    """Every check short of the GPU: files and their sizes, the ABI against
    the case, grids (recomputed here) and argument packing. Returns the
    list of jobs (kernel index, variant index)."""
    jobs = []
    for ki, kernel in enumerate(manifest["kernels"]):
        name, case = kernel["name"], kernel["case"]
        dims = case["dims"]
        for d in kernel["dims"]:
            if d not in dims:
                raise ValueError(f"{name}: the case has no value for dim {d}")
        shapes = {}
        for p in tensor_params(kernel):
            t = case["tensors"].get(p["name"])
            if t is None:
                raise ValueError(f"{name}: no input for tensor {p['name']}")
            shape = shape_of(p, dims)
            if t["shape"] != shape or t["dtype"] != p["dtype"]:
                raise ValueError(f"{name}.{p['name']}: {t['dtype']}{t['shape']} but the ABI says {p['dtype']}{shape}")
            if t["strides"] != row_major_strides(shape):
                raise ValueError(f"{name}.{p['name']}: strides {t['strides']} are not row-major")
            count = 1
            for extent in shape:
                count *= extent
            expect_file(root, t["file"], count * DTYPE_BYTES[p["dtype"]], f"{name}.{p['name']}")
            shapes[p["name"]] = shape
        for p in kernel["params"]:
            if p["kind"] == "scalar" and p["name"] not in case["scalars"]:
                raise ValueError(f"{name}: no value for scalar {p['name']}")
        if not case["outputs"]:
            raise ValueError(f"{name}: nothing to compare")
        for out_name, out in case["outputs"].items():
            param = next((p for p in tensor_params(kernel) if p["name"] == out_name), None)
            if param is None or not param["written"]:
                raise ValueError(f"{name}: output {out_name} is not a written tensor parameter")
            count = 1
            for extent in out["shape"]:
                count *= extent
            expect_file(root, out["file"], count * DTYPE_BYTES[out["dtype"]], f"{name}.{out_name} oracle")
            expect_file(root, out["tolerance_file"], count * 4, f"{name}.{out_name} tolerance")
            if out.get("exact") and out["tolerance_max"] != 0:
                raise ValueError(f"{name}.{out_name}: exact, but with a tolerance of {out['tolerance_max']}")
        if not kernel["variants"]:
            raise ValueError(f"{name}: no variants for {manifest['chip']}")
        defaults = [v for v in kernel["variants"] if v["default"]]
        if len(defaults) != 1:
            raise ValueError(f"{name}: {len(defaults)} default variants")
        for vi, variant in enumerate(kernel["variants"]):
            grid = grid_for(kernel, variant["config"], dims)
            if grid != variant["grid"]:
                raise ValueError(f"{name} {variant['config']}: grid {grid} here, {variant['grid']} in the manifest")
            if not 1 <= variant["threads"] <= 1024 or variant["shared_bytes"] > 48 * 1024:
                raise ValueError(f"{name} {variant['config']}: {variant['threads']} threads, {variant['shared_bytes']} shared bytes")
            with open(os.path.join(root, variant["ptx"]), encoding="utf-8") as f:
                ptx = f.read()
            if f".entry {name}" not in ptx or f".target {manifest['chip']}" not in ptx:
                raise ValueError(f"{variant['ptx']}: no .entry {name} for .target {manifest['chip']}")
            fake = {p["name"]: 0x7000_0000 + 0x100 * i for i, p in enumerate(tensor_params(kernel))}
            args = pack_args(kernel, variant, fake, case["scalars"], dims, shapes)
            expected = len(kernel["params"]) + len(kernel["dims"]) + sum(len(s) for s in shapes.values())
            if len(args) != expected:
                raise ValueError(f"{name}: {len(args)} arguments packed, {expected} expected")
            jobs.append((ki, vi))
        bench = kernel.get("bench")
        if bench:
            if bench["kind"] != "matmul" or [p["name"] for p in tensor_params(kernel)] != ["A", "B", "C"]:
                raise ValueError(f"{name}: a matmul bench needs tensors A, B, C")
            for variant in kernel["variants"]:
                grid_for(kernel, variant["config"], bench["dims"])
    return jobs


def config_text(config):
    return " ".join(f"{k}={v}" for k, v in sorted(config.items()))


# ------------------------------------------------------------ GPU (worker)

class Gpu:
    """The driver API through ctypes, on PyTorch's primary context."""

    def __init__(self):
        import torch
        self.torch = torch
        self.cu = ctypes.CDLL("libcuda.so.1")
        torch.zeros(1, device="cuda")  # makes the primary context current
        torch.cuda.synchronize()

    def error(self, code):
        name = ctypes.c_char_p()
        self.cu.cuGetErrorName(code, ctypes.byref(name))
        return f"{name.value.decode() if name.value else 'CUresult'} ({code})"

    def check(self, code, what):
        if code != 0:
            raise RuntimeError(f"{what}: {self.error(code)}")

    def load(self, ptx_path, entry):
        with open(ptx_path, "rb") as f:
            data = f.read() + b"\0"
        log = ctypes.create_string_buffer(16384)
        options = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, its size
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, ctypes.c_void_p(len(log)).value)
        module = ctypes.c_void_p()
        code = self.cu.cuModuleLoadDataEx(ctypes.byref(module), ctypes.c_char_p(data), 2, options, values)
        if code != 0:
            raise RuntimeError(f"cuModuleLoadDataEx: {self.error(code)}: {log.value.decode(errors='replace').strip()}")
        fn = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), module, entry.encode()), f"cuModuleGetFunction {entry}")
        return module, fn

    def unload(self, module):
        self.cu.cuModuleUnload(module)

    def launch(self, fn, grid, threads, args):
        pointers = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        self.check(self.cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], threads, 1, 1, 0, stream, pointers, None),
                   "cuLaunchKernel")

    def context_alive(self):
        return self.cu.cuCtxSynchronize() == 0


# u16 and u32 travel as the signed type of their width: their tensors are
# only copied and compared bit for bit ("exact" outputs), never converted.
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i32": "int32", "i64": "int64",
                "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "int16", "u32": "int32"}
BITS_DTYPES = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def load_raw(torch, root, entry, dtype, shape):
    with open(os.path.join(root, entry), "rb") as f:
        data = bytearray(f.read())
    return torch.frombuffer(data, dtype=getattr(torch, TORCH_DTYPES[dtype])).reshape(shape)


class Guarded:
    """A device copy of a tensor with guard bands of a sentinel pattern on
    both sides, to catch writes outside the tensor."""

    def __init__(self, torch, host, dtype):
        self.torch = torch
        elem = DTYPE_BYTES[dtype]
        self.guard = GUARD_BYTES // elem
        self.count = host.numel()
        bits = getattr(torch, BITS_DTYPES[elem])
        self.base = torch.empty(self.count + 2 * self.guard, dtype=host.dtype, device="cuda")
        self.base.view(bits).fill_(0x5A)
        self.tensor = self.base[self.guard:self.guard + self.count]
        self.tensor.copy_(host.reshape(-1))
        self.bits = bits
        self.sentinel = self.base[:self.guard].view(bits).clone()

    def guards_intact(self):
        bits = self.base.view(self.bits)
        head, tail = bits[:self.guard], bits[self.guard + self.count:]
        return bool(self.torch.equal(head, self.sentinel)) and bool(self.torch.equal(tail, self.sentinel))


def exact_mismatches(torch, root, out, got):
    """How many elements of `got` differ from the oracle's bit pattern
    (a NaN matches any NaN of the same type)."""
    bits = getattr(torch, BITS_DTYPES[DTYPE_BYTES[out["dtype"]]])
    got = got.reshape(-1).view(bits)
    want = load_raw(torch, root, out["file"], out["dtype"], [-1]).to("cuda").view(bits)
    same = got == want
    masks = NAN_MASKS.get(out["dtype"])
    if masks:
        exp, mant = masks

        def nan(b):
            return ((b & exp) == exp) & ((b & mant) != 0)
        same = same | (nan(got) & nan(want))
    return int((~same).sum())


def check_variant(gpu, root, manifest, kernel, variant, host_inputs):
    torch = gpu.torch
    case = kernel["case"]
    buffers = {name: Guarded(torch, host, case["tensors"][name]["dtype"]) for name, host in host_inputs.items()}
    shapes = {name: case["tensors"][name]["shape"] for name in buffers}
    module, fn = gpu.load(os.path.join(root, variant["ptx"]), kernel["name"])
    try:
        pointers = {name: b.tensor.data_ptr() for name, b in buffers.items()}
        args = pack_args(kernel, variant, pointers, case["scalars"], case["dims"], shapes)
        gpu.launch(fn, variant["grid"], variant["threads"], args)
        gpu.check(gpu.cu.cuCtxSynchronize(), "kernel")
    finally:
        gpu.unload(module)
    notes, ok = [], True
    for name, b in buffers.items():
        if not b.guards_intact():
            ok = False
            notes.append(f"{name} written outside its extent")
    max_abs = max_rel = worst = tol_max = 0.0
    for out_name, out in case["outputs"].items():
        if out.get("exact"):
            differ = exact_mismatches(torch, root, out, buffers[out_name].tensor)
            if differ:
                ok = False
                worst = float("inf")
                notes.append(f"{out_name}: {differ} elements not equal bit for bit")
            continue
        got = buffers[out_name].tensor.double()
        want = load_raw(torch, root, out["file"], out["dtype"], [-1]).to("cuda").double()
        tol = load_raw(torch, root, out["tolerance_file"], "f32", [-1]).to("cuda").double()
        err = (got - want).abs()
        finite = bool(torch.isfinite(got).all())
        if not finite:
            ok = False
            notes.append(f"{out_name}: {int((~torch.isfinite(got)).sum())} non-finite")
        err = torch.where(torch.isfinite(err), err, torch.full_like(err, float("inf")))
        over = err > tol
        if bool(over.any()):
            ok = False
            i = int(torch.argmax((err / tol.clamp_min(1e-300)) * over))
            notes.append(f"{out_name}: {int(over.sum())} over tolerance, e.g. [{i}] got {got[i].item():.7g} want {want[i].item():.7g}")
        rel = err / torch.where(want == 0, torch.ones_like(want), want.abs())
        max_abs = max(max_abs, err.max().item())
        max_rel = max(max_rel, rel.max().item())
        worst = max(worst, (err / tol.clamp_min(1e-300)).max().item())
        tol_max = max(tol_max, out["tolerance_max"])
    return ok, max_abs, max_rel, tol_max, worst, "; ".join(notes)


def run_checks(root, manifest, jobs, start, jsonl):
    gpu = Gpu()
    torch = gpu.torch
    inputs_cache = {}
    with open(jsonl, "a") as log:
        for job in range(start, len(jobs)):
            ki, vi = jobs[job]
            kernel = manifest["kernels"][ki]
            variant = kernel["variants"][vi]
            log.write(json.dumps({"type": "start", "job": job}) + "\n")
            log.flush()
            if ki not in inputs_cache:
                inputs_cache.clear()
                inputs_cache[ki] = {name: load_raw(torch, root, t["file"], t["dtype"], t["shape"])
                                    for name, t in kernel["case"]["tensors"].items()}
            try:
                ok, max_abs, max_rel, tol, worst, note = check_variant(gpu, root, manifest, kernel, variant, inputs_cache[ki])
            except Exception as e:  # recorded against this variant; the others still run
                ok, max_abs, max_rel, tol, worst, note = False, "", "", "", "", f"ERROR {e}"
            row = {"type": "result", "job": job, "pass": ok, "max_abs_err": max_abs, "max_rel_err": max_rel,
                   "tolerance": tol, "worst_ratio": worst, "note": note}
            log.write(json.dumps(row) + "\n")
            log.flush()
            print(f"{'ok  ' if ok else 'FAIL'} {kernel['name']} [{config_text(variant['config'])}] "
                  f"max_abs={max_abs} worst/tol={worst} {note}", flush=True)
            if not ok and not gpu.context_alive():
                print("CUDA context lost; a fresh worker continues", flush=True)
                sys.exit(3)


# -------------------------------------------------------------- throughput

def time_ms(torch, run, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def reps_for(first_ms, target_ms=600.0, most=10):
    return max(1, min(most, int(target_ms / max(first_ms, 1e-3))))


def run_bench(root, manifest, out_dir, screen_size, top):
    gpu = Gpu()
    torch = gpu.torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    rows = []
    torch_cache = {}
    for kernel in manifest["kernels"]:
        bench = kernel.get("bench")
        if not bench:
            continue
        name = kernel["name"]
        dtypes = {p["name"]: p["dtype"] for p in tensor_params(kernel)}
        scalars = {}
        for p in kernel["params"]:
            if p["kind"] == "scalar":
                if p["name"] not in ("alpha", "beta"):
                    raise ValueError(f"{name}: no bench value for scalar {p['name']}")
                scalars[p["name"]] = 1.0 if p["name"] == "alpha" else 0.0

        def make(size):
            g = torch.Generator(device="cuda").manual_seed(0)
            a = torch.randn(size, size, device="cuda", generator=g).to(getattr(torch, TORCH_DTYPES[dtypes["A"]]))
            b = torch.randn(size, size, device="cuda", generator=g).to(getattr(torch, TORCH_DTYPES[dtypes["B"]]))
            c = torch.zeros(size, size, device="cuda", dtype=getattr(torch, TORCH_DTYPES[dtypes["C"]]))
            return a, b, c

        def runner(variant, size, tensors):
            dims = {"M": size, "N": size, "K": size}
            a, b, c = tensors
            module, fn = gpu.load(os.path.join(root, variant["ptx"]), name)
            shapes = {"A": [size, size], "B": [size, size], "C": [size, size]}
            args = pack_args(kernel, variant, {"A": a.data_ptr(), "B": b.data_ptr(), "C": c.data_ptr()},
                             scalars, dims, shapes)
            grid = grid_for(kernel, variant["config"], dims)
            return module, lambda: gpu.launch(fn, grid, variant["threads"], args)

        # Screen every variant on a small problem, then time the fastest few
        # and the default one at full size.
        small = make(screen_size)
        screened = []
        for variant in kernel["variants"]:
            try:
                module, run = runner(variant, screen_size, small)
                run()
                torch.cuda.synchronize()
                ms = time_ms(torch, run, 3)
                gpu.unload(module)
                screened.append((ms, variant))
                flops = 2.0 * screen_size ** 3
                rows.append([name, manifest["chip"], config_text(variant["config"]), "screen", screen_size, screen_size,
                             screen_size, f"{ms:.4f}", f"{flops / ms / 1e6:.1f}", "", "", "", ""])
            except Exception as e:
                rows.append([name, manifest["chip"], config_text(variant["config"]), "screen", screen_size, screen_size,
                             screen_size, "", "", "", "", "", f"ERROR {e}"])
                if not gpu.context_alive():
                    raise
        screened.sort(key=lambda s: s[0])
        chosen = [v for _, v in screened[:top]]
        default = next(v for v in kernel["variants"] if v["default"])
        if default not in chosen:
            chosen.append(default)
        del small
        size = bench["dims"]["M"]
        flops = 2.0 * size ** 3
        a, b, c = make(size)
        key = (dtypes["A"], size)
        if key not in torch_cache:
            reference = lambda: torch.matmul(a, b)
            reference()
            torch.cuda.synchronize()
            torch_ms = time_ms(torch, reference, 10)
            torch_cache[key] = (torch_ms, torch.matmul(a, b).double())
        torch_ms, want = torch_cache[key]
        torch_gflops = flops / torch_ms / 1e6
        how = "cuBLAS, TF32 off" if dtypes["A"] == "f32" else "cuBLAS, f32 accumulate"
        rows.append([f"torch.matmul {dtypes['A']}", manifest["chip"], how, "reference", size, size, size,
                     f"{torch_ms:.4f}", f"{torch_gflops:.1f}", f"{torch_gflops:.1f}", "1.00", "", ""])
        measured = []
        for variant in chosen:
            module, run = runner(variant, size, (a, b, c))
            start = time.time()
            run()
            torch.cuda.synchronize()
            first_ms = (time.time() - start) * 1000
            ms = time_ms(torch, run, reps_for(first_ms))
            gpu.unload(module)
            rel = ((c.double() - want).norm() / want.norm()).item()
            gflops = flops / ms / 1e6
            measured.append((ms, variant))
            role = "default" if variant is default else "top"
            rows.append([name, manifest["chip"], config_text(variant["config"]), role, size, size, size, f"{ms:.4f}",
                         f"{gflops:.1f}", f"{torch_gflops:.1f}", f"{gflops / torch_gflops:.3f}", f"{rel:.2e}",
                         "" if rel < 1e-2 else "result far from torch"])
        best_ms, best = min(measured, key=lambda m: m[0])
        default_ms = next(ms for ms, v in measured if v is default)
        print(f"{name} {size}^3: best [{config_text(best['config'])}] {flops / best_ms / 1e6:.0f} GFLOP/s, "
              f"default {flops / default_ms / 1e6:.0f} GFLOP/s, torch.matmul {torch_gflops:.0f} GFLOP/s "
              f"(best/torch {torch_ms / best_ms:.3f})", flush=True)
        del a, b, c
        write_csv(os.path.join(out_dir, "device_bench.csv"), BENCH_COLUMNS, rows)


def write_csv(path, columns, rows):
    """Rewritten whole after each kernel, so a run cut short keeps what it measured."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        w.writerows(rows)


# ------------------------------------------------------------------ driver

def read_results(jsonl):
    started, results = [], {}
    if os.path.exists(jsonl):
        with open(jsonl) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if row["type"] == "start":
                    started.append(row["job"])
                else:
                    results[row["job"]] = row
    return started, results


def run_worker(args, extra, timeout_s, jsonl=None, variant_timeout_s=None):
    """Runs this script as a worker; returns its exit code, or "timeout"
    once `timeout_s` pass or, with `jsonl`, one variant runs longer than
    `variant_timeout_s` (a hung kernel)."""
    # sys.argv[0], not __file__: a wrapper that patches this module (a test
    # double of the GPU) runs its workers too.
    command = [sys.executable, os.path.abspath(sys.argv[0]), args.dump, "--out", args.out] + extra
    worker = subprocess.Popen(command)
    deadline = time.time() + timeout_s
    watched, watched_since = None, time.time()
    while True:
        try:
            return worker.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        now = time.time()
        if jsonl is not None:
            started, results = read_results(jsonl)
            current = started[-1] if started and started[-1] not in results else None
            if current != watched:
                watched, watched_since = current, now
            hung = current is not None and now - watched_since > variant_timeout_s
        else:
            hung = False
        if now > deadline or hung:
            worker.kill()
            worker.wait()
            return "timeout"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump", nargs="?", default=".device")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--dry-run", action="store_true", help="validate the dump; no GPU")
    parser.add_argument("--no-bench", action="store_true")
    parser.add_argument("--only", help="comma-separated kernel names")
    parser.add_argument("--check-budget-s", type=float, default=110.0)
    parser.add_argument("--bench-budget-s", type=float, default=60.0)
    parser.add_argument("--variant-timeout-s", type=float, default=20.0,
                        help="a variant still running after this is taken as hung")
    parser.add_argument("--screen-size", type=int, default=1024)
    parser.add_argument("--top", type=int, default=3, help="variants timed at full size, besides the default")
    parser.add_argument("--worker-checks", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-bench", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jsonl", help=argparse.SUPPRESS)
    args = parser.parse_args()

    with open(os.path.join(args.dump, "manifest.json")) as f:
        manifest = json.load(f)
    if args.only:
        wanted = set(args.only.split(","))
        manifest["kernels"] = [k for k in manifest["kernels"] if k["name"] in wanted]
    jobs = validate(args.dump, manifest)

    if args.worker_checks is not None:
        run_checks(args.dump, manifest, jobs, args.worker_checks, args.jsonl)
        return
    if args.worker_bench:
        run_bench(args.dump, manifest, args.out, args.screen_size, args.top)
        return
    if args.dry_run:
        for skipped in manifest.get("skipped", []):
            print(f"{skipped['name']}: NOT IN THE DUMP: {skipped['reason']}")
        for kernel in manifest["kernels"]:
            v = kernel["variants"]
            print(f"{kernel['name']}: {len(v)} variants, grids {sorted({tuple(x['grid']) for x in v})[:3]}..., "
                  f"{len(kernel['params'])} params + {len(kernel['dims'])} dims + strides"
                  + (f", bench {kernel['bench']['dims']}" if kernel.get("bench") else ""))
        print(f"dry run: {len(jobs)} variants for {manifest['chip']} validated (files, ABI, grids, packing)")
        sys.exit(1 if manifest.get("skipped") else 0)

    os.makedirs(args.out, exist_ok=True)
    jsonl = os.path.join(args.out, "device_check.jsonl.tmp")
    if os.path.exists(jsonl):
        os.remove(jsonl)
    deadline = time.time() + args.check_budget_s
    results, notes = {}, {}
    stop_reason = "not run (time budget)"
    next_job = 0
    while next_job < len(jobs):
        left = deadline - time.time()
        if left <= 5:
            break
        extra = ["--worker-checks", str(next_job), "--jsonl", jsonl] + (["--only", args.only] if args.only else [])
        code = run_worker(args, extra, left, jsonl, args.variant_timeout_s)
        started, results = read_results(jsonl)
        if code == 0:
            break
        unfinished = [j for j in started if j not in results]
        if unfinished:
            notes[unfinished[-1]] = f"ERROR worker ended ({code}) during this variant"
            ki, vi = jobs[unfinished[-1]]
            print(f"FAIL {manifest['kernels'][ki]['name']} [{config_text(manifest['kernels'][ki]['variants'][vi]['config'])}] "
                  f"worker ended ({code}); a fresh one continues", flush=True)
            next_job = unfinished[-1] + 1
        elif results:
            next_job = max(results) + 1
        else:
            stop_reason = f"not run: the worker failed before any variant ({code})"
            print(stop_reason, flush=True)
            break
    rows, failed = [], 0
    for skipped in manifest.get("skipped", []):
        failed += 1
        rows.append([skipped["name"], manifest["chip"], "", "", "", "", "NO", "", "", "", "",
                     f"not in the dump: {skipped['reason']}"])
    for job, (ki, vi) in enumerate(jobs):
        kernel = manifest["kernels"][ki]
        variant = kernel["variants"][vi]
        r = results.get(job) or {"pass": False, "max_abs_err": "", "max_rel_err": "", "tolerance": "",
                                 "worst_ratio": "", "note": notes.get(job, stop_reason)}
        failed += 0 if r["pass"] else 1
        rows.append([kernel["name"], manifest["chip"], config_text(variant["config"]), r["max_abs_err"],
                     r["max_rel_err"], r["tolerance"], "yes" if r["pass"] else "NO", variant["index"],
                     variant["index_bits"], "yes" if variant["default"] else "", r["worst_ratio"], r["note"]])
    write_csv(os.path.join(args.out, "device_check.csv"), CHECK_COLUMNS, rows)
    os.remove(jsonl) if os.path.exists(jsonl) else None
    by_kernel = {}
    for row in rows:
        total, bad = by_kernel.get(row[0], (0, 0))
        by_kernel[row[0]] = (total + 1, bad + (row[6] != "yes"))
    for name, (total, bad) in by_kernel.items():
        print(f"  {name}: {total - bad}/{total} variants pass")
    print(f"correctness: {len(rows) - failed}/{len(rows)} variants pass against the host oracle", flush=True)

    bench_failed = False
    if not args.no_bench and any(k.get("bench") for k in manifest["kernels"]):
        extra = ["--worker-bench", "--screen-size", str(args.screen_size), "--top", str(args.top)]
        extra += ["--only", args.only] if args.only else []
        code = run_worker(args, extra, args.bench_budget_s)
        if code != 0:
            print(f"throughput: worker ended ({code})", flush=True)
            bench_failed = True
    sys.exit(1 if failed or bench_failed else 0)


if __name__ == "__main__":
    main()
