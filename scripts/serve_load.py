#!/usr/bin/env python3
"""Load test for OpenAI-compatible servers (phobos serve, llama-server).

CLIENTS concurrent streaming clients each send REQUESTS chat requests one
after another. Reported per run, as one JSON line: requests/s, time to first
token (p50/p99), per-stream decode tok/s (median: tokens after the first over
the time after the first), aggregate generated tok/s, errors.

Against a running server:
    scripts/serve_load.py --base-url http://127.0.0.1:8080/v1 --clients 8

Or start each server itself, one after the other, on the same model, slots
and threads, and run every client count against each (the comparison of
BENCHMARKS.md):
    scripts/serve_load.py --compare --phobos target/release/phobos \\
        --llama-server /path/to/llama-server --model models/gemma-3-270m-q4_k_m.gguf \\
        --parallel 8 --threads 2 --clients 1,4,8 --requests 4 --max-tokens 64

`--ignore-eos` (default in --compare) asks both servers for exactly
--max-tokens tokens per answer (llama-server's `ignore_eos` field, which
phobos serve also takes), so both do the same work. Tokens are counted from
the servers' usage (stream_options.include_usage); the run fails (exit 1) if
any request errors.
"""
import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from openai import AsyncOpenAI

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Explain how a hash map works.",
    "List ten uses for a paperclip.",
    "Describe the water cycle for a child.",
]


async def one_request(client, model, prompt, args, stats):
    started = time.perf_counter()
    first = last = None
    tokens = None
    extra = {"ignore_eos": True} if args.ignore_eos else None
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}], max_tokens=args.max_tokens,
        temperature=0.7, stream=True, stream_options={"include_usage": True}, extra_body=extra)
    async for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            if delta.content or getattr(delta, "reasoning_content", None):
                last = time.perf_counter()
                if first is None:
                    first = last
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    if tokens is None:
        raise RuntimeError("the stream carried no usage")
    stats["tokens"].append(tokens)
    if first is not None:
        stats["ttft"].append(first - started)
        if tokens > 1 and last > first:
            stats["decode"].append((tokens - 1) / (last - first))


async def client_loop(client, model, index, args, stats):
    for r in range(args.requests):
        prompt = PROMPTS[(index + r) % len(PROMPTS)] + f" (client {index}, request {r})"
        try:
            await one_request(client, model, prompt, args, stats)
        except Exception as e:  # noqa: BLE001 - every failure is counted and reported
            stats["errors"].append(repr(e))


def percentile(values, p):
    values = sorted(values)
    if not values:
        return None
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


async def run_load(base_url, api_key, model, clients, args):
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=600)
    model = model or (await client.models.list()).data[0].id
    stats = {"ttft": [], "tokens": [], "decode": [], "errors": []}
    started = time.perf_counter()
    await asyncio.gather(*(client_loop(client, model, i, args, stats) for i in range(clients)))
    wall_s = time.perf_counter() - started
    await client.close()
    ms = lambda v: round(1000 * v, 1) if v is not None else None  # noqa: E731
    return {
        "clients": clients,
        "requests": clients * args.requests,
        "completed": len(stats["tokens"]),
        "errors": len(stats["errors"]),
        "requests_per_s": round(len(stats["tokens"]) / wall_s, 3),
        "ttft_p50_ms": ms(percentile(stats["ttft"], 50)),
        "ttft_p99_ms": ms(percentile(stats["ttft"], 99)),
        "stream_decode_tok_per_s_p50": round(percentile(stats["decode"], 50) or 0, 1),
        "generated_tokens": sum(stats["tokens"]),
        "wall_s": round(wall_s, 2),
        "aggregate_tok_per_s": round(sum(stats["tokens"]) / wall_s, 1),
    }, stats["errors"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, process, timeout_s=300):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{url} was not healthy after {timeout_s} s")


def server_command(name, args, port):
    listen = ["--host", "127.0.0.1", "--port", str(port)]
    ctx = str(args.ctx_per_slot * args.parallel)
    if name == "phobos":
        return [args.phobos, "serve", args.model, "--listen", f"127.0.0.1:{port}", "--no-dashboard",
                "--parallel", str(args.parallel), "--ctx-size", ctx, "--threads", str(args.threads)]
    return [args.llama_server, "-m", args.model, *listen, "-np", str(args.parallel), "-c", ctx,
            "-t", str(args.threads), "-tb", str(args.threads), "--no-webui"]


def compare(args):
    clients = [int(c) for c in args.clients.split(",")]
    results, failed = [], False
    for name in ("phobos", "llama-server"):
        port = free_port()
        command = server_command(name, args, port)
        print("#", " ".join(command), file=sys.stderr, flush=True)
        with open(os.devnull, "wb") as devnull:
            process = subprocess.Popen(command, stdout=devnull, stderr=devnull)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, process)
            for n in clients:
                result, errors = asyncio.run(run_load(url + "/v1", "unused", None, n, args))
                result = {"server": name, "parallel": args.parallel, "threads": args.threads, **result}
                results.append(result)
                print(json.dumps(result), flush=True)
                for error in errors[:5]:
                    print("error:", error, file=sys.stderr)
                failed |= bool(errors)
        finally:
            process.terminate()
            process.wait(timeout=30)
    print("load average:", " ".join(open("/proc/loadavg").read().split()[:3]), file=sys.stderr)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url")
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--model", default=None, help="model id (or, with --compare, the GGUF file)")
    parser.add_argument("--clients", default="16", help="a count, or with --compare a comma list")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--ignore-eos", action="store_true")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--phobos")
    parser.add_argument("--llama-server")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--ctx-per-slot", type=int, default=1024)
    args = parser.parse_args()
    if args.compare:
        if not (args.phobos and args.llama_server and args.model):
            parser.error("--compare needs --phobos, --llama-server and --model (the GGUF file)")
        args.ignore_eos = True
        return compare(args)
    if not args.base_url:
        parser.error("--base-url is required (or --compare)")
    result, errors = asyncio.run(run_load(args.base_url, args.api_key, args.model, int(args.clients), args))
    print(json.dumps(result))
    for error in errors[:5]:
        print("error:", error, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
