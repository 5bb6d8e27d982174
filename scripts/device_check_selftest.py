#!/usr/bin/env python3
"""Tests scripts/device_check.py without a GPU or torch: a numpy stand-in
for the torch calls it makes and a fake GPU whose "kernel" writes the
oracle's output, except for planted faults (a NaN, an element off by 0.5,
a write past the end, a crashed worker, a hung kernel), which the check
must report against exactly those variants, and nothing else.

    cargo run -p phobos-examples --example device_dump -- .device sm_90
    python3 scripts/device_check_selftest.py .device

Needs numpy. The bench part runs at 128^3 instead of the manifest's size.
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device_check as dc  # noqa: E402

BENCH_SIZE = 128


# ------------------------------------------------------- numpy "torch"

def fake_torch():
    torch = types.ModuleType("torch")
    torch.__version__ = "numpy stand-in"
    for name in ("float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8"):
        setattr(torch, name, np.dtype(name))
    # numpy has no bfloat16: its bits stand in (only copied and compared).
    torch.bfloat16 = np.dtype("int16")

    def raw(x):
        return x.a if isinstance(x, Tensor) else x

    class Tensor:
        def __init__(self, a):
            self.a = np.asarray(a)

        dtype = property(lambda self: self.a.dtype)

        def reshape(self, *shape):
            return Tensor(self.a.reshape(shape[0] if len(shape) == 1 else shape))

        def numel(self):
            return self.a.size

        def to(self, x):
            return Tensor(self.a.astype(x)) if isinstance(x, np.dtype) else self

        def double(self):
            return Tensor(self.a.astype(np.float64))

        def item(self):
            return self.a.item()

        def __bool__(self):
            return bool(self.a)

        def __int__(self):
            return int(self.a)

        def __getitem__(self, i):
            return Tensor(self.a[i])

        def view(self, dtype):
            return Tensor(self.a.view(dtype))

        def fill_(self, v):
            self.a.fill(v)
            return self

        def clone(self):
            return Tensor(self.a.copy())

        def copy_(self, other):
            self.a[...] = raw(other)
            return self

        def data_ptr(self):
            return self.a.ctypes.data

        def clamp_min(self, v):
            return Tensor(np.maximum(self.a, v))

        def __truediv__(self, other):
            with np.errstate(all="ignore"):
                return Tensor(self.a / raw(other))

    for method, fn in {"abs": np.abs, "max": np.max, "sum": np.sum, "any": np.any, "all": np.all,
                       "norm": np.linalg.norm}.items():
        setattr(Tensor, method, lambda self, fn=fn: Tensor(fn(self.a)))
    for method, fn in {"__sub__": np.subtract, "__mul__": np.multiply, "__gt__": np.greater,
                       "__eq__": np.equal, "__ne__": np.not_equal, "__and__": np.bitwise_and,
                       "__or__": np.bitwise_or}.items():
        setattr(Tensor, method, lambda self, other, fn=fn: Tensor(fn(self.a, raw(other))))
    Tensor.__invert__ = lambda self: Tensor(~self.a)

    torch.frombuffer = lambda data, dtype: Tensor(np.frombuffer(data, dtype=dtype).copy())
    torch.empty = lambda n, dtype, device=None: Tensor(np.empty(n, dtype=dtype))
    torch.zeros = lambda *shape, device=None, dtype=np.dtype("float32"): Tensor(np.zeros(shape, dtype=dtype))
    torch.isfinite = lambda t: Tensor(np.isfinite(t.a))
    torch.where = lambda c, a, b: Tensor(np.where(c.a, raw(a), raw(b)))
    torch.full_like = lambda t, v: Tensor(np.full_like(t.a, v))
    torch.ones_like = lambda t: Tensor(np.ones_like(t.a))
    torch.argmax = lambda t: Tensor(np.argmax(t.a))
    torch.equal = lambda a, b: bool(np.array_equal(a.a, b.a))
    torch.matmul = lambda a, b: Tensor(a.a.astype(np.float32) @ b.a.astype(np.float32))

    class Generator:
        def __init__(self, device=None):
            self.rng = np.random.default_rng(0)

        def manual_seed(self, seed):
            self.rng = np.random.default_rng(seed)
            return self

    torch.Generator = Generator
    torch.randn = lambda *shape, device=None, generator=None: Tensor(
        generator.rng.standard_normal(shape).astype(np.float32))

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = time.perf_counter()

        def elapsed_time(self, other):
            return (other.t - self.t) * 1000

    stream = types.SimpleNamespace(cuda_stream=0)
    torch.cuda = types.SimpleNamespace(synchronize=lambda: None, Event=Event, current_stream=lambda: stream)
    namespace = types.SimpleNamespace
    torch.backends = namespace(cuda=namespace(matmul=namespace()), cudnn=namespace())
    return torch


# ---------------------------------------------------------- fake GPU

class FakeGpu:
    """Loads PTX by name and "runs" a kernel by copying its oracle output
    into the output pointer (or C = A @ B for a bench launch)."""

    def __init__(self, root, manifest):
        self.torch = sys.modules["torch"]
        self.cu = types.SimpleNamespace(cuCtxSynchronize=lambda: 0)
        self.root, self.kernels = root, {k["name"]: k for k in manifest["kernels"]}
        self.faults = json.loads(os.environ.get("SELFTEST_FAULTS", "{}"))

    def check(self, code, what):
        if code != 0:
            raise RuntimeError(what)

    def load(self, path, entry):
        with open(path) as f:
            assert f".entry {entry}" in f.read(), path
        return None, (entry, os.path.relpath(path, self.root))

    def unload(self, module):
        pass

    def context_alive(self):
        return True

    def launch(self, fn, grid, threads, args):
        name, ptx = fn
        kernel = self.kernels[name]
        assert all(g >= 1 for g in grid) and 1 <= threads <= 1024
        fault = self.faults.get(ptx)
        if fault == "crash":
            os._exit(9)
        if fault == "hang":
            time.sleep(600)
        pointers = {p["name"]: args[i].value for i, p in enumerate(kernel["params"]) if p["kind"] == "tensor"}
        dims = {d: args[len(kernel["params"]) + i].value for i, d in enumerate(kernel["dims"])}
        if dims != kernel["case"]["dims"]:
            self.matmul(kernel, pointers, dims["M"])
            return
        for out_name, out in kernel["case"]["outputs"].items():
            with open(os.path.join(self.root, out["file"]), "rb") as f:
                data = bytearray(f.read())
            if fault == "nan":
                data[0:4] = np.float32(np.nan).tobytes()
            if fault == "flip":
                data[1] ^= 0x10
            if fault == "off":
                data[8:12] = (np.frombuffer(bytes(data[8:12]), np.float32) + np.float32(0.5)).tobytes()
            source = (ctypes.c_char * len(data)).from_buffer(data)
            ctypes.memmove(pointers[out_name], source, len(data))
            if fault == "overrun":
                ctypes.memmove(pointers[out_name] + len(data), source, 4)

    def matmul(self, kernel, pointers, n):
        def view(name, dtype):
            size = n * n * np.dtype(dtype).itemsize
            return np.frombuffer((ctypes.c_char * size).from_address(pointers[name]), dtype=dtype).reshape(n, n)
        dtypes = {p["name"]: np.dtype({"f32": "float32", "f16": "float16"}[p["dtype"]]) for p in dc.tensor_params(kernel)}
        c = view("C", dtypes["C"])
        c[...] = view("A", dtypes["A"]).astype(np.float32) @ view("B", dtypes["B"]).astype(np.float32)


def run_as_device_check():
    root = sys.argv[1]
    with open(os.path.join(root, "manifest.json")) as f:
        manifest = json.load(f)
    sys.modules["torch"] = fake_torch()
    dc.Gpu = lambda: FakeGpu(root, manifest)
    dc.main()


# ------------------------------------------------------------ the test

def main():
    if "SELFTEST_FAULTS" in os.environ:
        # device_check.py itself (its parent or a worker), on the fakes.
        run_as_device_check()
        return
    source = sys.argv[1] if len(sys.argv) > 1 else ".device"
    work = tempfile.mkdtemp(prefix="device-check-selftest-")
    try:
        dump, out = os.path.join(work, "dump"), os.path.join(work, "out")
        shutil.copytree(source, dump)
        with open(os.path.join(dump, "manifest.json")) as f:
            manifest = json.load(f)
        for kernel in manifest["kernels"]:
            if kernel.get("bench"):
                kernel["bench"]["dims"] = {"M": BENCH_SIZE, "N": BENCH_SIZE, "K": BENCH_SIZE}
        with open(os.path.join(dump, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        kernels = {k["name"]: k for k in manifest["kernels"]}
        planted = {}
        for name, fault in [("saxpy", "overrun"), ("softmax", "nan"), ("rmsnorm", "off"),
                            ("layernorm", "crash"), ("gla_chunk", "hang"), ("edge_int_i16", "flip"),
                            ("edge_float_bf16", "flip")]:
            variants = kernels[name]["variants"]
            planted[variants[len(variants) // 2]["ptx"]] = fault
        env = dict(os.environ, SELFTEST_FAULTS=json.dumps(planted))
        started = time.time()
        result = subprocess.run([sys.executable, os.path.abspath(__file__), dump, "--out", out,
                                 "--variant-timeout-s", "3", "--screen-size", "64", "--top", "2"],
                                env=env, capture_output=True, text=True)
        elapsed = time.time() - started
        assert result.returncode == 1, (result.returncode, result.stdout[-3000:], result.stderr[-3000:])
        rows = dc_csv(os.path.join(out, "device_check.csv"))
        variant_count = sum(len(k["variants"]) for k in manifest["kernels"])
        assert len(rows) == variant_count, (len(rows), variant_count)
        failed = {(r["kernel"], int(r["variant"])): r["note"] for r in rows if r["pass"] != "yes"}
        want = {}
        for ptx, fault in planted.items():
            kernel = ptx.split("/")[0]
            index = next(v["index"] for v in kernels[kernel]["variants"] if v["ptx"] == ptx)
            want[(kernel, index)] = fault
        assert set(failed) == set(want), (failed, want)
        expected_note = {"overrun": "outside its extent", "nan": "non-finite", "off": "over tolerance",
                         "flip": "not equal bit for bit",
                         "crash": "worker ended (9)", "hang": "worker ended (timeout)"}
        for key, fault in want.items():
            assert expected_note[fault] in failed[key], (key, fault, failed[key])
        bench = dc_csv(os.path.join(out, "device_bench.csv"))
        benched = [k["name"] for k in manifest["kernels"] if k.get("bench")]
        for name in benched:
            roles = {r["role"] for r in bench if r["kernel"] == name}
            assert {"screen", "default"} <= roles, (name, roles)
            assert all(float(r["rel_err_vs_torch"]) < 1e-2 for r in bench if r["kernel"] == name and r["role"] != "screen")
        print(f"{len(rows)} variants checked, the {len(planted)} planted faults caught and nothing else; "
              f"bench rows for {', '.join(benched)} ({elapsed:.1f} s)")
        print("2 passed, 0 failed")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def dc_csv(path):
    import csv
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


if __name__ == "__main__":
    main()
