#!/usr/bin/env python3
"""Writes tests/golden/gguf/reference.gguf with gguf-py's writer (every
metadata value type, nested arrays, alignment 64, tensors of several quant
types) and tests/golden/gguf/reference.json: what gguf-py's own reader sees
in it (keys, value types, values, tensor names, dims, types, offsets, and
the dequantized values of each tensor as f32 hex).

    pip install gguf==0.19.0 numpy
    python3 scripts/gen_gguf_goldens.py
"""
import importlib.metadata
import json
import pathlib

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V, quants

DIR = pathlib.Path(__file__).resolve().parent.parent / "tests/golden/gguf"
DIR.mkdir(parents=True, exist_ok=True)
path = DIR / "reference.gguf"
rng = np.random.default_rng(99)

w = gguf.GGUFWriter(str(path), "llama")
w.add_custom_alignment(64)
w.add_block_count(18)
w.add_uint8("v.u8", 250)
w.add_int8("v.i8", -120)
w.add_uint16("v.u16", 65000)
w.add_int16("v.i16", -32000)
w.add_uint32("v.u32", 4000000000)
w.add_int32("v.i32", -2000000000)
w.add_uint64("v.u64", 2**63 + 5)
w.add_int64("v.i64", -(2**62))
w.add_float32("v.f32", 3.14159)
w.add_float64("v.f64", -2.718281828459045)
w.add_bool("v.bool", False)
w.add_string("v.str", "Grüße, 世界 🦀")
w.add_string("v.empty", "")
w.add_array("v.arr_i32", [1, -2, 3])
w.add_key_value("v.arr_f32", [0.5, -0.25, 1e-3], V.ARRAY, sub_type=V.FLOAT32)
w.add_array("v.arr_str", ["<s>", "</s>", "▁the", ""])
w.add_key_value("v.arr_bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
w.add_key_value("v.arr_u8", [0, 255], V.ARRAY, sub_type=V.UINT8)
w.add_array("v.nested", [[1, 2, 3], ["x", "y"], [[4], [5, 6]]])  # = NESTED_INPUT below
w.add_array("v.empty_arr", [])

tensors = {
    "f32.weight": (rng.standard_normal((3, 64)).astype(np.float32), None),
    "f16.weight": (rng.standard_normal((2, 32)).astype(np.float16), None),
    "q8_0.weight": (quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), T.Q8_0), T.Q8_0),
    "q4_0.weight": (quants.quantize(rng.standard_normal((1, 96)).astype(np.float32), T.Q4_0), T.Q4_0),
    "q4_k.weight": (rng.integers(0, 256, size=(2, 144), dtype=np.uint8), T.Q4_K),
    "bf16.weight": (quants.quantize(rng.standard_normal((1, 40)).astype(np.float32), T.BF16), T.BF16),
}
# Keep q4_k's f16 scales finite: bytes 0..4 of each block are d and dmin.
tensors["q4_k.weight"][0][:, 0:4] = np.array([0x00, 0x2c, 0x00, 0x28], np.uint8)
for name, (data, raw) in tensors.items():
    w.add_tensor(name, data, raw_dtype=raw)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

r = gguf.GGUFReader(str(path))


def field_value(field):
    types = field.types
    if types[0] == V.ARRAY:
        return decode_array(field)
    return scalar(field.parts[field.data[0]], types[0])


def scalar(part, vtype):
    if vtype == V.STRING:
        return bytes(part).decode("utf-8")
    v = part[0]
    if vtype == V.BOOL:
        return bool(v)
    if vtype in (V.FLOAT32, V.FLOAT64):
        return float(v)
    return int(v)


def decode_array(field):
    # gguf-py's ReaderField.contents() understands nested arrays.
    return field.contents()


# gguf-py's reader flattens arrays of arrays (contents() returns the leaves
# in one list), so for that one key the expected value is the writer's input.
NESTED_INPUT = [[1, 2, 3], ["x", "y"], [[4], [5, 6]]]
keys = []
for name, field in r.fields.items():
    if name.startswith("GGUF."):
        continue
    types = [t.name for t in field.types]
    entry = {"key": name, "types": types, "value": field.contents()}
    if name == "v.nested":
        entry["value"] = NESTED_INPUT
        entry["value_source"] = "writer input; gguf-py's reader flattens nested arrays"
    keys.append(entry)

tensor_docs = []
for t in r.tensors:
    values = quants.dequantize(t.data, t.tensor_type).astype("<f4")
    tensor_docs.append({
        "name": t.name,
        "dims": [int(d) for d in t.shape],
        "type": t.tensor_type.name,
        "offset": int(t.data_offset - r.data_offset),
        "n_bytes": int(t.n_bytes),
        "dequant_f32": values.tobytes().hex(),
    })

doc = {
    "generated_by": "python3 scripts/gen_gguf_goldens.py",
    "gguf_version": importlib.metadata.version("gguf"),
    "file": "reference.gguf",
    "version": int(r.fields["GGUF.version"].parts[-1][0]),
    "alignment": int(r.alignment),
    "data_offset": int(r.data_offset),
    "metadata": keys,
    "tensors": tensor_docs,
}
(DIR / "reference.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
print("wrote", path, path.stat().st_size, "bytes;", len(keys), "keys,", len(tensor_docs), "tensors")
