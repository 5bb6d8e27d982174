#!/usr/bin/env python3
"""Writes the small starting corpora of the dequant, tokenizer and chat fuzz
targets into fuzz/seeds/<target>/ (the input formats are described in
phobos-models/tests/fuzz_bodies/mod.rs). Standard library only:

    python3 scripts/gen_fuzz_text_seeds.py
"""
import pathlib
import random

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = ROOT / "fuzz/seeds"
rng = random.Random(8)


def write(target, name, data):
    out = SEEDS / target
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)


# dequant: a byte indexing quant::ALL_TYPES, then bytes (several blocks).
for index, name in [(2, "q4_0"), (6, "q8_0"), (10, "q4_k"), (12, "q6_k"),
                    (15, "iq2_xs"), (20, "iq2_s"), (29, "tq1_0"), (31, "mxfp4")]:
    write("dequant", name, bytes([index]) + rng.randbytes(600))

# tokenizer: an even byte, then a vocabulary pick, encode flags and text.
TEXTS = [
    "Hello world",
    " leading space and  double  spaces\n\ttabs",
    "<|im_start|>user\nhi<|im_end|></s><s><unk>",
    "numbers 1234567 and 3.14159, punctuation!?...",
    "emoji 🦙🚀 and CJK 你好世界 and Ünïcödé",
    "<start_of_turn>model\n<end_of_turn>\n\n\n",
]
for vocab in range(20):
    text = TEXTS[vocab % len(TEXTS)]
    write("tokenizer", f"text_{vocab:02}", bytes([0, vocab, 3]) + text.encode())
# ... and an odd byte, then a vocabulary description (random: every input
# decodes to some vocabulary).
for i in range(6):
    write("tokenizer", f"meta_{i}", bytes([1]) + rng.randbytes(400))

# chat: a real template, a 0 byte, a flags byte, messages split by 0x1E
# (a role byte, then the content).
MESSAGES = b"\x1e".join([
    b"\x00You are terse.",
    b"\x01What is 2+2?",
    b"\x42{\"name\": \"add\"}",
    b"\x83{\"result\": 4}",
    b"\x02It is 4.",
])
for template in ["google-gemma-2-2b-it", "microsoft-Phi-3.5-mini-instruct",
                 "Qwen-Qwen2.5-7B-Instruct", "meta-llama-Llama-3.2-3B-Instruct",
                 "llama-cpp-rwkv-world", "LFM2-8B-A1B"]:
    source = (ROOT / "tests/golden/chat/templates" / f"{template}.jinja").read_bytes()
    write("chat", template, source + b"\x00\x03" + MESSAGES)
