#!/usr/bin/env python3
"""Checks the committed Gemma 3 270M token goldens against llama.cpp's own
llama-tokenize, built from the llama-cpp-python 0.3.36 sdist (VERIFY.md):

  cmake -S vendor/llama.cpp -B build -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  cmake --build build -j2 --target llama-tokenize
  python3 scripts/verify_gemma_llama_tokenize.py build/bin/llama-tokenize

Exits non-zero and prints each differing prompt when they disagree.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parent.parent
golden = json.loads((root / "tests/golden/tokenizer/gemma3_270m.json").read_text())
model = root / "models/gemma-3-270m-q4_k_m.gguf"
tool = sys.argv[1]

matched = 0
for case in golden["cases"]:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as prompt:
        prompt.write(case["text"])
    run = subprocess.run(
        [tool, "-m", str(model), "-f", prompt.name, "--ids", "--log-disable"],
        capture_output=True, text=True, check=True)
    ids = json.loads([l for l in run.stdout.splitlines() if l.startswith("[")][-1])
    if ids == case["ids"]:
        matched += 1
    else:
        print(f"differs: {case['text']!r}\n  llama-tokenize {ids}\n  golden         {case['ids']}")
print(f"{matched}/{len(golden['cases'])} prompts equal llama-tokenize")
sys.exit(0 if matched == len(golden["cases"]) else 1)
