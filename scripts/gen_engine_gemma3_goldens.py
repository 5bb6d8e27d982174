#!/usr/bin/env python3
"""Greedy continuations of Gemma 3 270M Q4_K_M by llama.cpp, with its top-2
probabilities per position: the golden for phobos-models' engine test.

Made with:
    python3 scripts/gen_engine_gemma3_goldens.py \
        --server /tmp/lcp/build/bin/llama-server \
        --model models/gemma-3-270m-q4_k_m.gguf \
        --out tests/golden/engine/gemma3_270m_greedy.json

It starts llama-server, sends each prompt to /completion (temperature 0,
64 tokens, n_probs 2, no prompt cache) and writes one JSON file: per prompt
the prompt text (verbatim), llama.cpp's prompt token ids (BOS included),
the generated ids, and per generated position the top-2 (id, prob) pairs
from the model's distribution before sampling.
"""

import argparse
import json
import math
import subprocess
import time
import urllib.request

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n",
    "The three primary colors are",
    "Water boils at a temperature of",
    "Q: What is 12 times 7?\nA:",
    "The quick brown fox",
    "In 1969, the first humans to walk on the Moon were",
    "Here is a list of fruits:\n1.",
    "Photosynthesis is the process by which",
]

N_PREDICT = 64


def post(port, path, body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def wait_ready(port, proc):
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit("llama-server exited early")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.5)
    raise SystemExit("llama-server did not become ready")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=18431)
    args = ap.parse_args()
    proc = subprocess.Popen(
        [args.server, "-m", args.model, "--port", str(args.port), "-t", "2",
         "-c", "2048", "-np", "1"],
        stdout=subprocess.DEVNULL, stderr=open("/tmp/engine-golden-server.log", "w"),
    )
    try:
        wait_ready(args.port, proc)
        cases = []
        for prompt in PROMPTS:
            prompt_ids = post(args.port, "/tokenize", {"content": prompt, "add_special": True})["tokens"]
            res = post(args.port, "/completion", {
                "prompt": prompt, "n_predict": N_PREDICT, "temperature": 0.0,
                "top_k": 1, "n_probs": 2, "cache_prompt": False,
                "return_tokens": True, "ignore_eos": False,
            })
            positions = []
            for p in res["completion_probabilities"]:
                top = [[t["id"], math.exp(t["logprob"])] for t in p["top_logprobs"]]
                positions.append({"id": p["id"], "top2": top})
            cases.append({
                "prompt": prompt,
                "prompt_ids": prompt_ids,
                "generated_ids": res["tokens"],
                "text": res["content"],
                "positions": positions,
            })
        header = ("made by scripts/gen_engine_gemma3_goldens.py --server /tmp/lcp/build/bin/llama-server "
                  "--model models/gemma-3-270m-q4_k_m.gguf --out tests/golden/engine/gemma3_270m_greedy.json")
        with open(args.out, "w") as f:
            json.dump({"command": header, "n_predict": N_PREDICT, "cases": cases}, f, indent=1)
            f.write("\n")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
