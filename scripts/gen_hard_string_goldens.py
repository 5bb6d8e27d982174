#!/usr/bin/env python3
"""Golden token ids for the hard strings, from llama.cpp's own llama-tokenize.

    python3 scripts/gen_hard_string_goldens.py [--sdist TARBALL | --llama-cpp DIR]

Builds llama-tokenize from the pinned llama-cpp-python 0.3.36 sdist (the
llama.cpp that VERIFY.md pins), unless --llama-cpp names an unpacked sdist
whose build/ already has it:

    pip download --no-deps --no-binary :all: --no-build-isolation \
        llama-cpp-python==0.3.36 -d /tmp/lcp   (scikit-build-core, cmake installed)
    tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp
    cmake -S vendor/llama.cpp -B build -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF  (+ -mno-amx-* C/CXX flags)
    cmake --build build -j2 --target llama-tokenize

Every string of tests/golden/tokenizer/hard_strings/strings.json is tokenized
on every models/llama-vocabs/*.gguf and on models/gemma-3-270m-q4_k_m.gguf in
two modes, which tests/tokenizer_hard_strings.rs calls Phobos in the same way:

  special: llama-tokenize's defaults: special tokens parsed, add_special as
           the model asks for BOS (Tokenizer::encode(text, adds_bos(), true)).
  plain:   --no-parse-special --no-bos (Tokenizer::encode(text, false, false)).

The special-token ids and the end-of-generation set that llama.cpp's vocab
loader settles on (its print_info log lines) are recorded per vocabulary too.
A vocabulary llama.cpp cannot load is recorded with its error. Output:
tests/golden/tokenizer/hard_strings/<vocab>.json, ids as space-separated text.

One llama-tokenize process per string would take hours (each loads the
vocabulary), so scripts/hard_strings_driver.cpp, linked against the same
libllama, makes llama-tokenize's exact calls for all strings in one process per
vocabulary; on every vocabulary the SPOT strings are also run through
llama-tokenize itself (text through a file, -f, so bytes are exact, with
--no-escape so backslashes stay literal) and must give the same ids, else the
script stops.
"""
import argparse
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
SPOT = ["</s>", "<|im_start|>user\nhi<|im_end|>\n", "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
        "mixed \t \n \r\n whitespace\t\t", "don't", ""]

INFO_KEYS = {
    "BOS token": "bos", "EOS token": "eos", "EOT token": "eot", "EOM token": "eom",
    "UNK token": "unk", "SEP token": "sep", "PAD token": "pad", "MASK token": "mask",
    "FIM PRE token": "fim_pre", "FIM SUF token": "fim_suf", "FIM MID token": "fim_mid",
    "FIM PAD token": "fim_pad", "FIM REP token": "fim_rep", "FIM SEP token": "fim_sep",
}


def build_llama_cpp(sdist):
    """Unpacks the sdist and builds llama-tokenize; returns the unpacked dir."""
    work = Path(tempfile.mkdtemp(prefix="lcp-"))
    if sdist is None:
        # pip prepares an sdist's metadata even to download it; with the build
        # backend installed as wheels in a throwaway venv nothing is compiled
        # (as scripts/fetch_llama_vocabs.sh does).
        venv = work / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = str(venv / "bin/pip")
        subprocess.run([pip, "install", "-q", "scikit-build-core", "cmake"], check=True)
        subprocess.run([pip, "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "--no-build-isolation", SDIST, "-d", str(work)], check=True)
        sdist = next(work.glob("llama_cpp_python-*.tar.gz"))
    subprocess.run(["tar", "xzf", str(sdist), "-C", str(work)], check=True)
    top = next(work.glob("llama_cpp_python-*/"))
    src = top / "vendor/llama.cpp"
    build = top / "build"
    subprocess.run(["cmake", "-S", str(src), "-B", str(build), "-DLLAMA_CURL=OFF",
                    "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF",
                    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                    "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                    f"-DCMAKE_C_FLAGS={AMX_OFF}", f"-DCMAKE_CXX_FLAGS={AMX_OFF}"], check=True)
    subprocess.run(["cmake", "--build", str(build), "-j2", "--target", "llama-tokenize"],
                   check=True)
    return top


def build_driver(top):
    src, lib = top / "vendor/llama.cpp", top / "build/bin"
    out = top / "build/hard_strings_driver"
    subprocess.run(["g++", "-O1", "-std=c++17", "-I", str(src / "include"),
                    "-I", str(src / "ggml/include"), str(ROOT / "scripts/hard_strings_driver.cpp"),
                    "-L", str(lib), "-lllama", f"-Wl,-rpath,{lib}", "-o", str(out)], check=True)
    return str(out)


def run_driver(driver, model, strings):
    with tempfile.NamedTemporaryFile("wb", suffix=".bin") as inp:
        for text in strings:
            data = text.encode("utf-8")
            inp.write(len(data).to_bytes(4, "little") + data)
        inp.flush()
        run = subprocess.run([driver, model, inp.name], capture_output=True, check=True)
    lines = run.stdout.decode().split("\n")[:-1]
    assert len(lines) == 2 * len(strings), (model, len(lines))
    return lines[0::2], lines[1::2]


def vocab_info(tool, model):
    """What llama.cpp's loader decided: special ids and the EOG set."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as prompt:
        prompt.write("x")
        prompt.flush()
        run = subprocess.run([tool, "-m", model, "-f", prompt.name, "--ids", "--no-escape", "-v"],
                             capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        lines = [l for l in run.stderr.splitlines() if "error" in l.lower()]
        return {"load_error": lines[-1] if lines else f"exit status {run.returncode}"}
    info = {"eog": []}
    for line in run.stderr.splitlines():
        m = re.search(r"print_info: (.+?)\s+= (-?\d+) '", line)
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
    parser.add_argument("--sdist", help="a downloaded llama_cpp_python-0.3.36.tar.gz")
    parser.add_argument("--llama-cpp", help="an unpacked sdist with build/bin/llama-tokenize")
    args = parser.parse_args()
    top = Path(args.llama_cpp) if args.llama_cpp else build_llama_cpp(args.sdist)
    tool = str(top / "build/bin/llama-tokenize")
    driver = build_driver(top)
    provenance = SDIST
    if args.sdist is not None:
        provenance += " sdist sha256 " + hashlib.sha256(Path(args.sdist).read_bytes()).hexdigest()

    strings = json.loads((GOLDEN / "strings.json").read_text(encoding="utf-8"))["strings"]
    assert all(s in strings for s in SPOT)
    models = sorted(glob.glob(str(ROOT / "models/llama-vocabs/*.gguf")))
    models.append(str(ROOT / "models/gemma-3-270m-q4_k_m.gguf"))
    command = ("python3 scripts/gen_hard_string_goldens.py  (llama.cpp of "
               f"{provenance}; llama-tokenize's calls; special: its defaults, plain: "
               "--no-parse-special --no-bos)")
    for model in models:
        name = Path(model).name.removesuffix(".gguf").removeprefix("ggml-vocab-")
        info = vocab_info(tool, model)
        out = {"_command": command, "model_file": Path(model).name,
               "model_bytes": os.path.getsize(model), "llama_cpp": info}
        if "load_error" not in info:
            special, plain = run_driver(driver, model, strings)
            for text in SPOT:
                i = strings.index(text)
                for mode, got, extra in (("special", special[i], []),
                                         ("plain", plain[i], ["--no-parse-special", "--no-bos"])):
                    want = tokenize(tool, model, text, extra)
                    if want != got:
                        sys.exit(f"{name} {mode} {text!r}: llama-tokenize {want} driver {got}")
            out["special"], out["plain"] = special, plain
        path = GOLDEN / f"{name}.json"
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False, indent=0)
            f.write("\n")
        print(f"{name}: {info}", flush=True)


if __name__ == "__main__":
    main()
