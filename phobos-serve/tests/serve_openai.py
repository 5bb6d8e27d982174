#!/usr/bin/env python3
"""Drives a running `phobos serve --test-script` with the official `openai`
client. Run by tests/serve_openai.rs, which starts two servers: Gemma 3 270M
(chat, completions, stop, logprobs, usage, errors) and the Qwen2 vocabulary
with Qwen 2.5's chat template (a tool-call round trip). The scripts the
servers run are in serve_openai.rs; the expected texts below are theirs.

Prints one `ok NAME` line per check; any failure raises (non-zero exit).
"""
import argparse
import json
import sys

import openai
from openai import OpenAI

STORY = "Once upon a time there was a tiny model. It said hello. The END of the story."
GREETING = "Hello! How can I help you today?"


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok {name}", flush=True)


def chat_plain(client, model):
    r = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], temperature=0, seed=1
    )
    check("chat.content", r.choices[0].message.content == GREETING, r.choices[0].message.content)
    check("chat.role", r.choices[0].message.role == "assistant")
    check("chat.finish", r.choices[0].finish_reason == "stop", r.choices[0].finish_reason)
    check("chat.usage", r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
          and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, r.usage)
    check("chat.object", r.object == "chat.completion" and r.id.startswith("chatcmpl-"))
    # The same conversation again reuses the slot's cached prefix.
    r2 = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], temperature=0
    )
    cached = r2.usage.prompt_tokens_details.cached_tokens
    check("chat.cached_tokens", cached is not None and 0 < cached < r2.usage.prompt_tokens, r2.usage)


def chat_stream(client, model):
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    check("stream.first_role", chunks[0].choices[0].delta.role == "assistant")
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check("stream.text", text == GREETING, text)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    check("stream.finish", finishes == ["stop"], finishes)
    last = chunks[-1]
    check("stream.usage_last", last.choices == [] and last.usage is not None
          and last.usage.completion_tokens > 0, last)
    check("stream.usage_only_last", all(c.usage is None for c in chunks[:-1]))
    # Without include_usage there is no usage chunk.
    chunks = list(client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], stream=True))
    check("stream.no_usage", all(c.usage is None and c.choices for c in chunks))


def choices_n(client, model):
    hi = [{"role": "user", "content": "hi"}]
    one = client.chat.completions.create(model=model, messages=hi, temperature=0)
    r = client.chat.completions.create(model=model, messages=hi, temperature=0, n=3, logit_bias={"0": -1})
    check("n.choices", [c.index for c in r.choices] == [0, 1, 2]
          and all(c.message.content == GREETING for c in r.choices), r.choices)
    check("n.usage", r.usage.prompt_tokens == one.usage.prompt_tokens
          and r.usage.completion_tokens == 3 * one.usage.completion_tokens, r.usage)
    texts = {}
    finishes = {}
    for chunk in client.chat.completions.create(model=model, messages=hi, n=2, stream=True):
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    check("n.stream", texts == {0: GREETING, 1: GREETING} and finishes == {0: "stop", 1: "stop"},
          (texts, finishes))


def stops_and_limits(client, model):
    story = [{"role": "user", "content": "tell me a story"}]
    r = client.chat.completions.create(model=model, messages=story)
    check("story.full", r.choices[0].message.content == STORY, r.choices[0].message.content)
    r = client.chat.completions.create(model=model, messages=story, stop=["END"])
    check("stop.string", r.choices[0].message.content == STORY.split("END")[0]
          and r.choices[0].finish_reason == "stop", r.choices[0].message.content)
    r = client.chat.completions.create(model=model, messages=story, stop=["zzz", "tiny"])
    check("stop.list", r.choices[0].message.content == "Once upon a time there was a ",
          r.choices[0].message.content)
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=model, messages=story, stop="said hel", stream=True) if c.choices)
    check("stop.stream", text == "Once upon a time there was a tiny model. It ", text)
    r = client.chat.completions.create(model=model, messages=story, max_tokens=3)
    check("max_tokens", r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 3
          and STORY.startswith(r.choices[0].message.content), r)
    r = client.chat.completions.create(model=model, messages=story, max_completion_tokens=2)
    check("max_completion_tokens", r.usage.completion_tokens == 2 and r.choices[0].finish_reason == "length")


def reasoning_and_unicode(client, model):
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "think about 2+2"}])
    message = r.choices[0].message
    reasoning = getattr(message, "reasoning_content", None) or (message.model_extra or {}).get("reasoning_content")
    check("reasoning.split", reasoning == "Let me think." and message.content == "The answer is 4.", message)
    chunks = list(client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "think about 2+2"}], stream=True))
    streamed_reasoning = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                                 for c in chunks if c.choices)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check("reasoning.stream", streamed_reasoning == "Let me think." and streamed == "The answer is 4.",
          (streamed_reasoning, streamed))
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Unicode please"}])
    check("unicode", r.choices[0].message.content == "héllo wörld 🎉 日本語", r.choices[0].message.content)


def logprobs(client, model):
    r = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    check("logprobs.count", len(content) == r.usage.completion_tokens - 0, (len(content), r.usage))
    check("logprobs.top", all(len(t.top_logprobs) == 3 and t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
                              for t in content))
    check("logprobs.tokens", "".join(t.token for t in content).strip() == GREETING,
          "".join(t.token for t in content))
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    check("logprobs.absent", r.choices[0].logprobs is None)
    r = client.completions.create(model=model, prompt="Say hi", logprobs=2, max_tokens=4)
    lp = r.choices[0].logprobs
    check("completions.logprobs", len(lp.tokens) == 4 and len(lp.top_logprobs[0]) >= 1, lp)


def completions(client, model):
    r = client.completions.create(model=model, prompt="Say hi")
    check("completions.text", r.choices[0].text == GREETING and r.object == "text_completion", r)
    chunks = list(client.completions.create(model=model, prompt="Say hi", stream=True,
                                            stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    check("completions.stream", text == GREETING, text)
    check("completions.stream_usage", chunks[-1].usage is not None and chunks[-1].choices == [])
    r = client.completions.create(model=model, prompt="tell me a story", stop=". ")
    check("completions.stop", r.choices[0].text == "Once upon a time there was a tiny model", r.choices[0].text)


def post_root(client, path, body):
    """POST to one of llama-server's unprefixed routes (/tokenize) next to /v1."""
    import urllib.request
    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    request = urllib.request.Request(root + path, data=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {client.api_key}"})
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def completions_prompts(client, model):
    alone = [client.completions.create(model=model, prompt=p, temperature=0)
             for p in ("Say hi", "tell me a story")]
    r = client.completions.create(model=model, prompt=["Say hi", "tell me a story"], temperature=0)
    by_index = sorted(r.choices, key=lambda c: c.index)
    check("completions.multi", [c.index for c in by_index] == [0, 1] and by_index[0].text == GREETING
          and by_index[1].text == STORY and all(c.finish_reason == "stop" for c in by_index), r)
    check("completions.multi_usage", r.usage.prompt_tokens == sum(a.usage.prompt_tokens for a in alone)
          and r.usage.completion_tokens == sum(a.usage.completion_tokens for a in alone), r.usage)
    chunks = list(client.completions.create(model=model, prompt=["Say hi", "tell me a story"], stream=True,
                                            stream_options={"include_usage": True}))
    texts = {0: "", 1: ""}
    finishes = {}
    for c in chunks:
        for choice in c.choices:
            texts[choice.index] += choice.text
            if choice.finish_reason:
                finishes[choice.index] = choice.finish_reason
    check("completions.multi_stream", texts == {0: GREETING, 1: STORY} and finishes == {0: "stop", 1: "stop"},
          (texts, finishes))
    check("completions.multi_stream_usage", chunks[-1].choices == [] and
          chunks[-1].usage.completion_tokens == r.usage.completion_tokens, chunks[-1])
    # echo: the prompt, then the answer; streamed, the prompt comes first.
    r = client.completions.create(model=model, prompt="Say hi", echo=True)
    check("completions.echo", r.choices[0].text == "Say hi" + GREETING, r.choices[0].text)
    chunks = list(client.completions.create(model=model, prompt="Say hi", echo=True, stream=True))
    check("completions.echo_stream", chunks[0].choices[0].text == "Say hi"
          and "".join(c.choices[0].text for c in chunks) == "Say hi" + GREETING, chunks[0])
    # Token ids, one prompt and several.
    ids = post_root(client, "/tokenize", {"content": "Say hi", "add_special": True})["tokens"]
    check("tokenize.ids", ids and all(isinstance(i, int) for i in ids), ids)
    r = client.completions.create(model=model, prompt=ids, max_tokens=64)
    check("completions.token_ids", r.choices[0].text == GREETING
          and r.usage.prompt_tokens == len(ids), (r.choices[0].text, r.usage))
    story_ids = post_root(client, "/tokenize", {"content": "tell me a story", "add_special": True})["tokens"]
    r = client.completions.create(model=model, prompt=[ids, story_ids])
    texts = [c.text for c in sorted(r.choices, key=lambda c: c.index)]
    check("completions.token_id_lists", texts == [GREETING, STORY], texts)
    r = client.completions.create(model=model, prompt=ids, echo=True)
    echoed = post_root(client, "/detokenize", {"tokens": ids})["content"]
    check("completions.token_ids_echo", r.choices[0].text == echoed + GREETING, (echoed, r.choices[0].text))
    # The legacy logprobs shape: parallel lists, offsets in characters.
    r = client.completions.create(model=model, prompt="Unicode please", logprobs=2)
    lp, text = r.choices[0].logprobs, r.choices[0].text
    n = r.usage.completion_tokens
    check("completions.logprobs_lists", len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs)
          == len(lp.text_offset) == n and all(x <= 0 for x in lp.token_logprobs), lp)
    check("completions.logprobs_tokens", "".join(lp.tokens) == text, (lp.tokens, text))
    offsets = [sum(len(t) for t in lp.tokens[:i]) for i in range(n)]
    check("completions.text_offset", lp.text_offset == offsets, (lp.text_offset, offsets))
    check("completions.top_logprobs", all(1 <= len(top) <= 2 and max(top.values()) <= 0 for top in lp.top_logprobs),
          lp.top_logprobs)
    chunks = list(client.completions.create(model=model, prompt="Unicode please", logprobs=1, stream=True))
    streamed = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.tokens]
    streamed_offsets = [o for c in chunks if c.choices and c.choices[0].logprobs
                        for o in c.choices[0].logprobs.text_offset]
    check("completions.logprobs_stream", streamed == lp.tokens and streamed_offsets == offsets,
          (streamed, streamed_offsets))
    for name, kwargs in [("echo_logprobs", dict(prompt="Say hi", echo=True, logprobs=1)),
                         ("empty_prompt", dict(prompt=[])),
                         ("bad_prompt", dict(prompt=[{"text": "hi"}])),
                         ("big_token", dict(prompt=[10 ** 9])),
                         ("suffix", dict(prompt="Say hi", suffix="bye")),
                         ("best_of", dict(prompt="Say hi", best_of=3)),
                         ("too_many_prompts", dict(prompt=["hi"] * 33))]:
        try:
            client.completions.create(model=model, **kwargs)
        except openai.BadRequestError as e:
            body = e.body if isinstance(e.body, dict) else {}
            check(f"completions.error.{name}", isinstance(body.get("message"), str) and body.get("message"), e.body)
        else:
            raise AssertionError(f"completions.error.{name}: no error")


def json_mode(client, model):
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "json please"}],
                                       response_format={"type": "json_object"})
    check("json_object", json.loads(r.choices[0].message.content) == {"answer": 4})


def models_endpoint(client, model):
    ids = [m.id for m in client.models.list()]
    check("models.list", ids == [model], ids)


def errors(client, model):
    cases = [
        ("error.n", dict(model=model, messages=[{"role": "user", "content": "hi"}], n=17), openai.BadRequestError),
        ("error.temperature", dict(model=model, messages=[{"role": "user", "content": "hi"}], temperature=9),
         openai.BadRequestError),
        ("error.model", dict(model="no-such-model", messages=[{"role": "user", "content": "hi"}]),
         openai.NotFoundError),
        ("error.messages", dict(model=model, messages=[]), openai.BadRequestError),
        ("error.context", dict(model=model, messages=[{"role": "user", "content": "word " * 5000}]),
         openai.BadRequestError),
    ]
    for name, kwargs, error in cases:
        try:
            client.chat.completions.create(**kwargs)
        except error as e:
            body = e.body if isinstance(e.body, dict) else {}
            check(name, isinstance(body.get("message"), str) and body.get("message"), e.body)
        else:
            raise AssertionError(f"{name}: no error")
    bad_key = OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0)
    try:
        bad_key.models.list()
    except openai.AuthenticationError:
        check("error.api_key", True)
    else:
        raise AssertionError("error.api_key: a wrong key was accepted")


def tool_round_trip(client, model):
    tools = [{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }]
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.chat.completions.create(model=model, messages=messages, tools=tools)
    choice = r.choices[0]
    check("tools.finish", choice.finish_reason == "tool_calls", choice)
    calls = choice.message.tool_calls
    check("tools.call", len(calls) == 1 and calls[0].function.name == "get_weather"
          and json.loads(calls[0].function.arguments) == {"city": "Paris"} and calls[0].id, calls)
    check("tools.no_markup", not (choice.message.content or "").strip(), choice.message.content)
    # Streamed: index, id and name first, then the argument fragments.
    chunks = list(client.chat.completions.create(model=model, messages=messages, tools=tools, stream=True))
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    check("tools.stream_head", deltas[0].id and deltas[0].function.name == "get_weather" and deltas[0].index == 0)
    arguments = "".join(d.function.arguments or "" for d in deltas)
    check("tools.stream_args", json.loads(arguments) == {"city": "Paris"}, arguments)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check("tools.stream_no_markup", "<tool_call>" not in content and not content.strip(), content)
    check("tools.stream_finish", [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls")
    # The round trip: the call and its result go back through the template.
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": "22 degrees and sunny"})
    r = client.chat.completions.create(model=model, messages=messages, tools=tools)
    check("tools.answer", r.choices[0].message.content == "It is 22 degrees and sunny in Paris."
          and r.choices[0].finish_reason == "stop", r.choices[0].message)
    # Without tools offered, nothing is parsed as a call.
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hello"}])
    check("tools.none", r.choices[0].message.tool_calls is None, r.choices[0].message)


def responses_api(client, model):
    r = client.responses.create(model=model, input="hi", temperature=0)
    check("responses.text", r.output_text == GREETING, r.output_text)
    check("responses.object", r.object == "response" and r.id.startswith("resp_") and r.status == "completed", r)
    check("responses.usage", r.usage.input_tokens > 0 and r.usage.output_tokens > 0
          and r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens, r.usage)
    r = client.responses.create(model=model, instructions="Answer briefly.",
                                input=[{"role": "user", "content": [{"type": "input_text", "text": "tell me a story"}]}])
    check("responses.items_input", r.output_text == STORY and r.instructions == "Answer briefly.", r)
    events = list(client.responses.create(model=model, input="hi", stream=True))
    kinds = [e.type for e in events]
    check("responses.stream_lifecycle", kinds[:2] == ["response.created", "response.in_progress"]
          and kinds[-1] == "response.completed", kinds)
    check("responses.stream_sequence", [e.sequence_number for e in events] == list(range(len(events))))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    check("responses.stream_text", text == GREETING and events[-1].response.output_text == GREETING, text)
    with client.responses.stream(model=model, input="tell me a story") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    check("responses.stream_helper", final.output_text == STORY, final.output_text)
    r = client.responses.create(model=model, input="tell me a story", max_output_tokens=3)
    check("responses.incomplete", r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
          and r.usage.output_tokens == 3, r)
    r = client.responses.create(model=model, input="think about 2+2")
    kinds = [item.type for item in r.output]
    check("responses.reasoning", kinds == ["reasoning", "message"] and r.output_text == "The answer is 4."
          and r.output[0].content[0].text == "Let me think."
          and r.usage.output_tokens_details.reasoning_tokens > 0, r)
    r = client.responses.create(model=model, input="json please", text={"format": {"type": "json_object"}})
    check("responses.json_object", json.loads(r.output_text) == {"answer": 4}, r.output_text)
    r = client.responses.create(model=model, input="hi", top_logprobs=2, include=["message.output_text.logprobs"])
    logprobs = r.output[0].content[0].logprobs
    check("responses.logprobs", len(logprobs) > 0 and all(len(lp.top_logprobs) == 2 for lp in logprobs), logprobs)
    for name, kwargs, error in [
        ("responses.error.previous", dict(model=model, input="hi", previous_response_id="resp_x"),
         openai.BadRequestError),
        ("responses.error.model", dict(model="no-such-model", input="hi"), openai.NotFoundError),
        ("responses.error.image", dict(model=model, input=[{"role": "user", "content": [
            {"type": "input_image", "image_url": "https://example.com/x.png"}]}]), openai.BadRequestError),
    ]:
        try:
            client.responses.create(**kwargs)
        except error as e:
            body = e.body if isinstance(e.body, dict) else {}
            check(name, isinstance(body.get("message"), str) and body.get("message"), e.body)
        else:
            raise AssertionError(f"{name}: no error")


def responses_tools(client, model):
    tools = [{
        "type": "function",
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }]
    conversation = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.responses.create(model=model, input=conversation, tools=tools)
    calls = [item for item in r.output if item.type == "function_call"]
    check("responses.tools.call", len(calls) == 1 and calls[0].name == "get_weather"
          and json.loads(calls[0].arguments) == {"city": "Paris"} and calls[0].call_id, r.output)
    events = list(client.responses.create(model=model, input=conversation, tools=tools, stream=True))
    arguments = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    check("responses.tools.stream", json.loads(arguments) == {"city": "Paris"}, arguments)
    conversation += [item.model_dump(exclude_none=True) for item in r.output]
    conversation.append({"type": "function_call_output", "call_id": calls[0].call_id,
                         "output": "22 degrees and sunny"})
    r = client.responses.create(model=model, input=conversation, tools=tools)
    check("responses.tools.answer", r.output_text == "It is 22 degrees and sunny in Paris.", r.output)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--tools-base-url", required=True)
    parser.add_argument("--tools-model", required=True)
    args = parser.parse_args()
    client = OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0)
    for test in (chat_plain, chat_stream, choices_n, stops_and_limits, reasoning_and_unicode, logprobs, completions,
                 completions_prompts, json_mode, models_endpoint, errors, responses_api):
        test(client, args.model)
    tools_client = OpenAI(base_url=args.tools_base_url, api_key="unused", max_retries=0)
    tool_round_trip(tools_client, args.tools_model)
    responses_tools(tools_client, args.tools_model)
    print("all ok")


if __name__ == "__main__":
    sys.exit(main())
