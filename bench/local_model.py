"""LocalLLM against llama_cpp.Llama called directly, with llama.cpp's extra buffer types on and off.

    .venv/bin/python bench/local_model.py [--reps 7] [--tokens 64] [--n-threads N]

Four configurations load the same model file (the embedded SmolLM2 GGUF) with
the same settings (n_ctx 2048, llama.cpp's thread count unless ``--n-threads``,
greedy, seed 0) and answer the same chat prompt:

* ``llama_cpp.Llama`` called directly, extra buffer types on (llama.cpp's default);
* the same, extra buffer types off (what ``LocalLLM`` falls back to where they crash);
* ``LocalLLM`` with the probe passing (extra buffer types on, as here);
* ``LocalLLM`` in its fallback, forced by making the probe's child crash with
  SIGILL when it uses them (``TNSAI_EVAL_PROBE_FAULT=sigill-extra-bufts``, in a
  temporary cache directory so the user's verdict is untouched).

Measured per configuration, median of ``--reps`` rounds, the configurations
interleaved within each round so that load from other processes falls on all
alike: time to first token (a ``max_tokens=1`` call: the prompt and one token)
and tokens per second of a ``--tokens`` reply (completion tokens / call time).
Every call starts from an empty context (``LocalLLM`` resets llama.cpp's KV
cache before each call; the direct calls do the same), so no call reuses the
previous one's prompt. It prints the figures and the ratios: LocalLLM over
direct (our overhead) and off over on (what the fallback costs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from tnsai_eval.llm import LocalLLM, smollm2_gguf_path

# Our loader, for the direct calls with the extra buffer types off: llama_cpp.Llama
# has no keyword for them (see its module docstring); with them on it is a plain Llama().
from tnsai_eval.llm._llama import new_llama
from tnsai_eval.llm._probe import ENV_CACHE_DIR, ENV_PROBE_FAULT

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Describe the water cycle in a few sentences for a child."},
]
N_CTX = 2048


@dataclass
class Config:
    name: str
    # (max_tokens) -> (seconds, completion tokens)
    call: Callable[[int], tuple[float, int]]
    load_s: float
    ttft: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)


def _direct(extra_bufts: bool, n_threads: int | None) -> Config:
    started = time.perf_counter()
    llama = new_llama(
        smollm2_gguf_path(), n_ctx=N_CTX, n_threads=n_threads, seed=0, extra_bufts=extra_bufts
    )
    load = time.perf_counter() - started

    def call(max_tokens: int) -> tuple[float, int]:
        llama.reset()
        started = time.perf_counter()
        reply: Any = llama.create_chat_completion(
            messages=MESSAGES, max_tokens=max_tokens, temperature=0.0, seed=0
        )
        return time.perf_counter() - started, int(reply["usage"]["completion_tokens"])

    on = "on" if extra_bufts else "off"
    return Config(f"llama_cpp.Llama, extra buffer types {on}", call, load)


def _local(fallback: bool, n_threads: int | None, cache: str) -> Config:
    os.environ[ENV_CACHE_DIR] = cache
    if fallback:
        os.environ[ENV_PROBE_FAULT] = "sigill-extra-bufts"
    try:
        LocalLLM(n_threads=n_threads)  # runs the probe, so the load below is timed alone
        started = time.perf_counter()
        local = LocalLLM(n_ctx=N_CTX, n_threads=n_threads)
        load = time.perf_counter() - started
    finally:
        os.environ.pop(ENV_PROBE_FAULT, None)
    assert local.extra_bufts is not fallback

    def call(max_tokens: int) -> tuple[float, int]:
        # Wall time around chat(), not Completion.latency_s (timed inside the
        # model's lock): the comparison includes our layer.
        started = time.perf_counter()
        reply = local.chat(MESSAGES, max_tokens=max_tokens)
        return time.perf_counter() - started, reply.usage.completion_tokens

    name = "LocalLLM, fallback (extra buffer types off)" if fallback else "LocalLLM, probe passes"
    return Config(name, call, load)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--n-threads", type=int, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        configs = [
            _direct(True, args.n_threads),
            _direct(False, args.n_threads),
            _local(False, args.n_threads, cache),
            _local(True, args.n_threads, cache),
        ]
        for config in configs:  # warm-up: first-call costs are not what we compare
            config.call(args.tokens)
        for _ in tqdm(range(args.reps), desc="rounds", unit="round"):
            for config in configs:
                seconds, _ = config.call(1)
                config.ttft.append(seconds)
                seconds, tokens = config.call(args.tokens)
                config.rate.append(tokens / seconds)

    threads = args.n_threads or "llama.cpp's default"
    print(
        f"\n{smollm2_gguf_path().name}, n_ctx {N_CTX}, n_threads {threads}, "
        f"{args.reps} rounds, medians; reply of up to {args.tokens} tokens"
    )
    print(f"{'configuration':<46} {'load s':>7} {'TTFT ms':>8} {'tokens/s':>9}")
    ttft = {c.name: statistics.median(c.ttft) for c in configs}
    rate = {c.name: statistics.median(c.rate) for c in configs}
    for c in configs:
        print(f"{c.name:<46} {c.load_s:>7.2f} {ttft[c.name] * 1000:>8.1f} {rate[c.name]:>9.1f}")
    direct_on, direct_off, local_on, local_off = (c.name for c in configs)
    print("\nratios (TTFT: lower is better; tokens/s: higher is better)")
    for label, top, bottom in (
        ("LocalLLM / direct, extra buffer types on ", local_on, direct_on),
        ("LocalLLM / direct, extra buffer types off", local_off, direct_off),
        ("fallback cost, off / on, direct         ", direct_off, direct_on),
        ("fallback cost, off / on, LocalLLM       ", local_off, local_on),
    ):
        print(
            f"{label}: TTFT {ttft[top] / ttft[bottom]:.2f}, tokens/s {rate[top] / rate[bottom]:.2f}"
        )


if __name__ == "__main__":
    main()
