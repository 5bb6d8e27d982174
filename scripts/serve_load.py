#!/usr/bin/env python3
"""Load test for an OpenAI-compatible server (phobos serve, llama-server):
CLIENTS concurrent streaming clients each send REQUESTS chat requests one
after another. Prints time to first token (p50/p99), aggregate generated
tokens per second, and errors, as one JSON line.

Usage: scripts/serve_load.py --base-url http://127.0.0.1:8080/v1 \
           [--clients 16] [--requests 4] [--max-tokens 128] [--model ID]

Tokens are counted from the server's usage (stream_options.include_usage);
the run fails (exit 1) if any request errors.
"""
import argparse
import asyncio
import json
import sys
import time

from openai import AsyncOpenAI

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how a hash map works.",
    "List ten uses for a paperclip.",
    "Describe the water cycle for a child.",
]


async def client_loop(client, model, index, requests, max_tokens, ttfts, tokens, errors):
    for r in range(requests):
        prompt = PROMPTS[(index + r) % len(PROMPTS)] + f" (client {index}, request {r})"
        started = time.perf_counter()
        first = None
        try:
            stream = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens,
                temperature=0.7, stream=True, stream_options={"include_usage": True})
            async for chunk in stream:
                if first is None and chunk.choices and (chunk.choices[0].delta.content
                                                        or getattr(chunk.choices[0].delta, "reasoning_content", None)):
                    first = time.perf_counter() - started
                if chunk.usage is not None:
                    tokens.append(chunk.usage.completion_tokens)
            if first is not None:
                ttfts.append(first)
        except Exception as e:  # noqa: BLE001 - every failure is counted and reported
            errors.append(repr(e))


def percentile(values, p):
    values = sorted(values)
    if not values:
        return None
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--model", default=None)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    client = AsyncOpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=600)
    model = args.model or (await client.models.list()).data[0].id
    ttfts, tokens, errors = [], [], []
    started = time.perf_counter()
    await asyncio.gather(*(client_loop(client, model, i, args.requests, args.max_tokens, ttfts, tokens, errors)
                           for i in range(args.clients)))
    wall_s = time.perf_counter() - started
    result = {
        "clients": args.clients,
        "requests": args.clients * args.requests,
        "completed": len(tokens),
        "errors": len(errors),
        "ttft_p50_ms": round(1000 * percentile(ttfts, 50), 1) if ttfts else None,
        "ttft_p99_ms": round(1000 * percentile(ttfts, 99), 1) if ttfts else None,
        "generated_tokens": sum(tokens),
        "wall_s": round(wall_s, 2),
        "aggregate_tok_per_s": round(sum(tokens) / wall_s, 1),
    }
    print(json.dumps(result))
    for error in errors[:5]:
        print("error:", error, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
