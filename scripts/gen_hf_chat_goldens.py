#!/usr/bin/env python3
"""Renders every real chat template in tests/golden/chat/templates/ with
Python's jinja2 under Hugging Face's chat-template environment, on a few
conversations, into tests/golden/chat/hf_renderings.json.

    pip install jinja2==3.1.6
    python3 scripts/gen_hf_chat_goldens.py

The environment is the one transformers' `apply_chat_template` builds
(src/transformers/utils/chat_template_utils.py, transformers 5.24.0), written
here from reading it: an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and the loopcontrols extension; globals `raise_exception`
(raises TemplateError), `strftime_now` (pinned to NOW below so the goldens
are reproducible; the Rust test pins Phobos' clock the same way), `dict` and
a `namespace` that refuses underscore names; the filter `tojson` as
`json.dumps(x, ensure_ascii=False, indent=None, separators=None,
sort_keys=False)` with those keyword options; `{% generation %}` blocks
render their body. The render context is what `apply_chat_template` passes:
`messages`, `tools` (None without tools), `documents` (None),
`add_generation_prompt=True`, `bos_token`/`eos_token`, plus the two
variables Phobos (like llama.cpp) always provides, `functions` and
`datetime`, given as the extra keyword arguments apply_chat_template
forwards to the template.

Messages are given in the shape Phobos' `ChatMessage::to_json` produces
(the Rust test checks that round trip), with tool-call arguments as an
object, as Hugging Face documents them. A template that raises (e.g. for a
role it does not support) is recorded as an error, and Phobos must fail on
it too.
"""
import datetime
import json
import pathlib

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests/golden/chat/templates"
OUT = ROOT / "tests/golden/chat/hf_renderings.json"
# 2024-07-26 12:34:56 UTC, unix 1721997296.
NOW = datetime.datetime(2024, 7, 26, 12, 34, 56)
NOW_UNIX = 1721997296

# BOS/EOS as the models' tokenizers define them, by template family (the
# first prefix that matches the file name); the rest use <s> and </s>.
SPECIAL_TOKENS = [
    ("meta-llama-Llama-3", "<|begin_of_text|>", "<|eot_id|>"),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("deepseek-ai-DeepSeek-V", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("llama-cpp-deepseek-r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("fireworks-ai-llama-3-firefunction-v2", "<|begin_of_text|>", "<|eot_id|>"),
    ("NousResearch-Hermes-2-Pro-Llama-3", "<|begin_of_text|>", "<|im_end|>"),
    ("NousResearch-Hermes-3-Llama-3.1", "<|begin_of_text|>", "<|im_end|>"),
    ("meetkai-functionary", "<|begin_of_text|>", "<|eot_id|>"),
    ("google-gemma", "<bos>", "<eos>"),
    ("Qwen", "", "<|im_end|>"),
    ("microsoft-Phi-3.5", "<s>", "<|endoftext|>"),
    ("openai-gpt-oss", "<|startoftext|>", "<|return|>"),
    ("CohereForAI", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("Cohere2MoE", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("ibm-granite", "<|start_of_role|>", "<|end_of_text|>"),
    ("HuggingFaceTB-SmolLM3", "", "<|im_end|>"),
    ("LFM2", "<|startoftext|>", "<|im_end|>"),
]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city, in °C",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. Zürich"},
                "days": {"type": "integer", "description": "Forecast days"},
            },
            "required": ["location"],
        },
    },
}
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What is the weather in Paris?"}
CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{
        "id": "call12345",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Paris", "days": 1}},
    }],
}
RESULT = {"role": "tool", "content": "{\"temperature\": 21, \"sky\": \"clear\"}",
          "tool_call_id": "call12345", "name": "get_weather"}
ANSWER = {"role": "assistant", "content": "It is 21 °C and clear in Paris."}
FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}

CONVERSATIONS = [
    ("user", [], [USER]),
    ("multi_turn", [], [SYSTEM, USER, ANSWER, FOLLOW_UP]),
    ("tools", [WEATHER_TOOL], [SYSTEM, USER]),
    ("tool_call", [WEATHER_TOOL], [USER, CALL, RESULT]),
    ("tool_round", [WEATHER_TOOL], [SYSTEM, USER, CALL, RESULT, ANSWER, FOLLOW_UP]),
]


class Generation(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` renders its body (Hugging
    Face uses it only to record assistant-token spans)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class Namespace(jinja2.utils.Namespace):
    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError("namespace attribute %r" % name)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = NOW.strftime
    env.globals["dict"] = dict
    env.globals["namespace"] = Namespace
    return env


def special_tokens(name):
    for prefix, bos, eos in SPECIAL_TOKENS:
        if name.startswith(prefix):
            return bos, eos
    return "<s>", "</s>"


def render(env, source, tools, messages, bos, eos):
    template = env.from_string(source)
    return template.render(
        messages=json.loads(json.dumps(messages)),
        tools=json.loads(json.dumps(tools)) if tools else None,
        documents=None,
        add_generation_prompt=True,
        bos_token=bos,
        eos_token=eos,
        functions=json.dumps(tools, indent=2, ensure_ascii=False) if tools else "",
        datetime=NOW.strftime("%b %d %Y %H:%M:%S GMT"),
    )


def main():
    env = environment()
    templates = []
    for path in sorted(TEMPLATES.glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        bos, eos = special_tokens(path.stem)
        renderings = {}
        for name, tools, messages in CONVERSATIONS:
            try:
                renderings[name] = {"text": render(env, source, tools, messages, bos, eos)}
            except jinja2.exceptions.TemplateError as e:
                renderings[name] = {"error": "%s: %s" % (type(e).__name__, e)}
            except Exception as e:  # a template bug on this input, e.g. a TypeError
                renderings[name] = {"error": "%s: %s" % (type(e).__name__, e)}
        templates.append({"file": path.name, "bos_token": bos, "eos_token": eos,
                          "renderings": renderings})
    golden = {
        "_command": "python3 scripts/gen_hf_chat_goldens.py (jinja2 %s)" % jinja2.__version__,
        "now_unix_seconds": NOW_UNIX,
        "conversations": [{"name": n, "tools": t, "messages": m} for n, t, m in CONVERSATIONS],
        "templates": templates,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=0)
        f.write("\n")
    errors = sum("error" in r for t in templates for r in t["renderings"].values())
    print("wrote %d templates x %d conversations (%d errors) to %s"
          % (len(templates), len(CONVERSATIONS), errors, OUT))


if __name__ == "__main__":
    main()
