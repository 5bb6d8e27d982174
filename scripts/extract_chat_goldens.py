#!/usr/bin/env python3
"""Extracts llama.cpp's reference chat-template renderings into a golden file.

    python3 scripts/extract_chat_goldens.py \
        models/llama-vocabs/test-chat-template.cpp tests/golden/chat/reference_renderings.json

Reads the test cases of llama.cpp's tests/test-chat-template.cpp (from the
llama-cpp-python 0.3.36 sdist; scripts/fetch_llama_vocabs.sh puts it in
models/llama-vocabs/): each case's template, BOS/EOS strings, conversation and
the expected Jinja rendering (expected_output_jinja, else expected_output),
for the cases marked supported_with_jinja.
"""
import json
import re
import sys

FIELDS = ["name", "template_str", "expected_output", "expected_output_jinja",
          "bos_token", "eos_token", "supported_with_jinja", "extra_conversation"]


def read_string_literal(src, i):
    """Parses one C++ string literal at src[i] (after any prefix); returns (text, end)."""
    assert src[i] == '"', src[i:i + 20]
    out = []
    i += 1
    while src[i] != '"':
        c = src[i]
        if c == "\\":
            n = src[i + 1]
            simple = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
            if n in simple:
                out.append(simple[n])
                i += 2
            elif n == "u":
                out.append(chr(int(src[i + 2:i + 6], 16)))
                i += 6
            elif n == "U":
                out.append(chr(int(src[i + 2:i + 10], 16)))
                i += 10
            elif n == "x":
                m = re.match(r"[0-9a-fA-F]+", src[i + 2:])
                out.append(chr(int(m.group(0), 16)))
                i += 2 + len(m.group(0))
            else:
                raise ValueError("unknown escape \\" + n)
        else:
            out.append(c)
            i += 1
    return "".join(out), i + 1


def skip_space(src, i):
    while True:
        while src[i].isspace():
            i += 1
        if src.startswith("//", i):
            i = src.index("\n", i)
        elif src.startswith("/*", i) and not re.match(r"/\* \.\w+=? \*/", src[i:]):
            i = src.index("*/", i) + 2
        else:
            return i


def read_value(src, i):
    """A field value: concatenated string literals (u8/U8C allowed), a bool, or a brace list."""
    i = skip_space(src, i)
    if src.startswith("true", i):
        return True, i + 4
    if src.startswith("false", i):
        return False, i + 5
    if src[i] == "{":
        depth, j = 0, i
        while True:
            if src[j] == '"':
                _, j = read_string_literal(src, j)
                continue
            if src[j] == "{":
                depth += 1
            elif src[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        body = src[i:j + 1]
        pairs = []
        for m in re.finditer(r'\{\s*"((?:[^"\\]|\\.)*)"\s*,\s*', body):
            role = m.group(1)
            content, _ = read_string_literal(body, m.end())
            pairs.append({"role": role, "content": content})
        return pairs, j + 1
    parts = []
    while True:
        i = skip_space(src, i)
        wrapped = False
        if src.startswith("U8C(", i):
            i += 4
            wrapped = True
            i = skip_space(src, i)
        if src.startswith("u8", i):
            i += 2
        if src[i] != '"':
            break
        text, i = read_string_literal(src, i)
        parts.append(text)
        if wrapped:
            i = skip_space(src, i)
            assert src[i] == ")"
            i += 1
    if not parts:
        raise ValueError("unparsed value at: " + src[i:i + 60])
    return "".join(parts), i


def main():
    cpp_path, out_path = sys.argv[1], sys.argv[2]
    src = open(cpp_path, encoding="utf-8").read()
    conv_start = src.index("std::vector<llama_chat_message> conversation {")
    conv_value, _ = read_value(src, conv_start + len("std::vector<llama_chat_message> conversation "))
    base = conv_value
    start = src.index("std::vector<TestCase> test_cases {")
    end = src.index("std::vector<char> formatted_chat", start)
    block = src[start:end]
    cases = []
    for m in re.finditer(r"/\* \.name= \*/", block):
        case, i = {}, m.start()
        for field in FIELDS:
            found = re.compile(r"/\* \.%s=? \*/" % field).search(block, i)
            nxt = block.find("/* .name= */", m.end())
            if not found or (nxt >= 0 and found.start() > nxt):
                continue
            value, i = read_value(block, found.end())
            case[field] = value
        if not case.get("supported_with_jinja", True):
            continue
        expected = case.get("expected_output_jinja") or case.get("expected_output")
        cases.append({
            "name": case["name"],
            "template": case["template_str"],
            "bos_token": case.get("bos_token", ""),
            "eos_token": case.get("eos_token", ""),
            "messages": base + case.get("extra_conversation", []),
            "add_generation_prompt": True,
            "expected": expected,
        })
    header = ("generated by: python3 scripts/extract_chat_goldens.py "
              "models/llama-vocabs/test-chat-template.cpp tests/golden/chat/reference_renderings.json "
              "(llama.cpp tests/test-chat-template.cpp from llama-cpp-python 0.3.36)")
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"_command": header, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote %d cases to %s" % (len(cases), out_path))


if __name__ == "__main__":
    main()
