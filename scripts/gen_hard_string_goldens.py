#!/usr/bin/env python3
"""Golden token ids for the hard strings, from llama.cpp's own llama-tokenize.

    python3 scripts/gen_hard_string_goldens.py [--llama-tokenize PATH] [--sdist PATH]

Builds llama-tokenize from the pinned llama-cpp-python 0.3.36 sdist (the
llama.cpp that VERIFY.md pins) unless --llama-tokenize names a built one:

    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/lcp
    tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp
    cmake -S vendor/llama.cpp -B build -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF  (+ -mno-amx-* C/CXX flags)
    cmake --build build -j2 --target llama-tokenize

Every string of tests/golden/tokenizer/hard_strings/strings.json is tokenized
on every models/llama-vocabs/*.gguf and on models/gemma-3-270m-q4_k_m.gguf,
one llama-tokenize process per string (the text goes through a file, -f, so
bytes are kept exactly, with --no-escape so backslashes stay literal), in two
modes that tests/tokenizer_hard_strings.rs calls Phobos in the same way:

  special: llama-tokenize's defaults: special tokens parsed, add_special as
           the model asks for BOS (Tokenizer::encode(text, adds_bos(), true)).
  plain:   --no-parse-special --no-bos (Tokenizer::encode(text, false, false)).

The special-token ids and the end-of-generation set that llama.cpp's vocab
loader settles on (its print_info log lines) are recorded per vocabulary too.
A vocabulary llama.cpp cannot load is recorded with its error. Output:
tests/golden/tokenizer/hard_strings/<vocab>.json, ids as space-separated text.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests/golden/tokenizer/hard_strings"
SDIST = "llama-cpp-python==0.3.36"
AMX_OFF = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

INFO_KEYS = {
    "BOS token": "bos", "EOS token": "eos", "EOT token": "eot", "EOM token": "eom",
    "UNK token": "unk", "SEP token": "sep", "PAD token": "pad", "MASK token": "mask",
    "FIM PRE token": "fim_pre", "FIM SUF token": "fim_suf", "FIM MID token": "fim_mid",
    "FIM PAD token": "fim_pad", "FIM REP token": "fim_rep", "FIM SEP token": "fim_sep",
}


def build_llama_tokenize(sdist):
    work = Path(tempfile.mkdtemp(prefix="lcp-"))
    if sdist is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                        ":all:", SDIST, "-d", str(work)], check=True)
        sdist = next(work.glob("llama_cpp_python-*.tar.gz"))
    subprocess.run(["tar", "xzf", str(sdist), "-C", str(work)], check=True)
    src = next(work.glob("llama_cpp_python-*/vendor/llama.cpp"))
    build = work / "build"
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-DLLAMA_CURL=OFF",
                    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF",
                    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                    "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                    f"-DCMAKE_C_FLAGS={AMX_OFF}", f"-DCMAKE_CXX_FLAGS={AMX_OFF}"], check=True)
    subprocess.run(["cmake", "--build", str(build), "-j2", "--target", "llama-tokenize"],
                   check=True)
    return str(build / "bin" / "llama-tokenize"), sdist


def vocab_info(tool, model):
    """What llama.cpp's loader decided: special ids and the EOG set."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as prompt:
        prompt.write("x")
        prompt.flush()
        run = subprocess.run([tool, "-m", model, "-f", prompt.name, "--ids", "--no-escape"],
                             capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        lines = [l for l in run.stderr.splitlines() if "error" in l.lower()]
        return {"load_error": lines[-1] if lines else f"exit status {run.returncode}"}
    info = {"eog": []}
    for line in run.stderr.splitlines():
        m = re.match(r"print_info: (.+?)\s+= (-?\d+) '", line)
        if not m:
            continue
        key, value = m.group(1).strip(), int(m.group(2))
        if key == "EOG token":
            info["eog"].append(value)
        elif key in INFO_KEYS:
            info[INFO_KEYS[key]] = value
    info["eog"].sort()
    return info


def tokenize(tool, model, text, extra):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt") as prompt:
        prompt.write(text.encode("utf-8"))
        prompt.flush()
        run = subprocess.run([tool, "-m", model, "-f", prompt.name, "--ids", "--no-escape",
                              "--log-disable", *extra], capture_output=True, check=True)
    lines = [l for l in run.stdout.decode().splitlines() if l.startswith("[")]
    return " ".join(str(i) for i in json.loads(lines[-1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-tokenize")
    parser.add_argument("--sdist", help="a downloaded llama_cpp_python-0.3.36.tar.gz")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    tool, sdist = args.llama_tokenize, args.sdist
    if tool is None:
        tool, sdist = build_llama_tokenize(sdist)
    provenance = SDIST
    if sdist is not None:
        provenance += " sdist sha256 " + hashlib.sha256(Path(sdist).read_bytes()).hexdigest()

    strings = json.loads((GOLDEN / "strings.json").read_text(encoding="utf-8"))["strings"]
    models = sorted(glob.glob(str(ROOT / "models/llama-vocabs/*.gguf")))
    models.append(str(ROOT / "models/gemma-3-270m-q4_k_m.gguf"))
    command = ("python3 scripts/gen_hard_string_goldens.py  (llama-tokenize from "
               f"{provenance}; -f FILE --ids --no-escape; special: defaults, plain: "
               "--no-parse-special --no-bos)")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for model in models:
            name = Path(model).name.removesuffix(".gguf").removeprefix("ggml-vocab-")
            info = vocab_info(tool, model)
            out = {"_command": command, "model_file": Path(model).name,
                   "model_bytes": os.path.getsize(model), "llama_cpp": info}
            if "load_error" not in info:
                for mode, extra in (("special", []), ("plain", ["--no-parse-special", "--no-bos"])):
                    out[mode] = list(pool.map(lambda s: tokenize(tool, model, s, extra), strings))
            path = GOLDEN / f"{name}.json"
            with open(path, "w", encoding="utf-8") as f:
                json.dump(out, f, ensure_ascii=False, indent=0)
                f.write("\n")
            print(f"{name}: {info}", flush=True)


if __name__ == "__main__":
    main()
