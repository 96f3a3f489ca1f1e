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

Measured per configuration in each of ``--reps`` rounds, the configurations
interleaved within a round (each round starting with the next one) so that
load from other processes falls on all alike: time to first token (a
``max_tokens=1`` call: the prompt and one token) and tokens per second of a
``--tokens`` reply (completion tokens / call time), each in wall time and in
this process's CPU time (all of llama.cpp's threads; on a machine shared with
other jobs it moves less than wall time). Every call starts from an empty
context (``LocalLLM`` resets llama.cpp's KV cache before each call; the direct
calls do the same), so no call reuses the previous one's prompt. It prints
medians and the paired ratios (the median over rounds of each round's ratio):
LocalLLM over direct (our overhead) and off over on (what the fallback costs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
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
    # (max_tokens) -> completion tokens; timed by the caller.
    call: Callable[[int], int]
    load_s: float
    # Per round: time to first token and seconds per reply token, wall and CPU.
    ttft_wall: list[float] = field(default_factory=list)
    ttft_cpu: list[float] = field(default_factory=list)
    rate_wall: list[float] = field(default_factory=list)
    rate_cpu: list[float] = field(default_factory=list)

    def measure(self, tokens: int) -> None:
        wall, cpu, _ = _timed(self.call, 1)
        self.ttft_wall.append(wall)
        self.ttft_cpu.append(cpu)
        wall, cpu, produced = _timed(self.call, tokens)
        self.rate_wall.append(produced / wall)
        self.rate_cpu.append(produced / cpu)


def _timed(call: Callable[[int], int], max_tokens: int) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    produced = call(max_tokens)
    return time.perf_counter() - wall, time.process_time() - cpu, produced


def _direct(extra_bufts: bool, n_threads: int | None) -> Config:
    started = time.perf_counter()
    llama = new_llama(
        smollm2_gguf_path(), n_ctx=N_CTX, n_threads=n_threads, seed=0, extra_bufts=extra_bufts
    )
    load = time.perf_counter() - started

    def call(max_tokens: int) -> int:
        llama.reset()
        reply: Any = llama.create_chat_completion(
            messages=MESSAGES, max_tokens=max_tokens, temperature=0.0, seed=0
        )
        return int(reply["usage"]["completion_tokens"])

    on = "on" if extra_bufts else "off"
    return Config(f"llama_cpp.Llama, extra buffer types {on}", call, load)


def _local(fallback: bool, n_threads: int | None, cache: str) -> Config:
    os.environ[ENV_CACHE_DIR] = cache
    if fallback:
        os.environ[ENV_PROBE_FAULT] = "sigill-extra-bufts"
    try:
        with warnings.catch_warnings():
            # The forced fallback's LocalModelWarning is expected here.
            warnings.simplefilter("ignore")
            # Runs the probe (and loads a small copy), so the load below is timed alone.
            LocalLLM(n_ctx=256, n_threads=n_threads)
            started = time.perf_counter()
            local = LocalLLM(n_ctx=N_CTX, n_threads=n_threads)
            load = time.perf_counter() - started
    finally:
        os.environ.pop(ENV_PROBE_FAULT, None)
    assert local.extra_bufts is not fallback

    def call(max_tokens: int) -> int:
        return local.chat(MESSAGES, max_tokens=max_tokens).usage.completion_tokens

    name = "LocalLLM, fallback (extra buffer types off)" if fallback else "LocalLLM, probe passes"
    return Config(name, call, load)


def _paired(top: list[float], bottom: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(top, bottom, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--n-threads", type=int, default=None)
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        configs = [
            _direct(True, args.n_threads),
            _direct(False, args.n_threads),
            _local(False, args.n_threads, cache),
            _local(True, args.n_threads, cache),
        ]
        for config in configs:  # warm-up: first-call costs are not what we compare
            config.call(args.tokens)
        for round_ in tqdm(range(args.reps), desc="rounds", unit="round"):
            for i in range(len(configs)):
                configs[(round_ + i) % len(configs)].measure(args.tokens)

    threads = args.n_threads or "llama.cpp's default"
    print(
        f"\n{smollm2_gguf_path().name}, n_ctx {N_CTX}, n_threads {threads}, "
        f"{args.reps} rounds, reply of up to {args.tokens} tokens; load average "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs"
    )
    print(
        f"{'configuration (medians)':<44} {'load s':>6} {'TTFT ms':>8} {'CPU ms':>7} "
        f"{'tok/s':>6} {'tok/CPU s':>9}"
    )
    for c in configs:
        print(
            f"{c.name:<44} {c.load_s:>6.2f} {statistics.median(c.ttft_wall) * 1000:>8.0f} "
            f"{statistics.median(c.ttft_cpu) * 1000:>7.0f} {statistics.median(c.rate_wall):>6.1f} "
            f"{statistics.median(c.rate_cpu):>9.1f}"
        )
    direct_on, direct_off, local_on, local_off = configs
    print("\npaired ratios, wall (CPU): TTFT lower is better, tokens/s higher is better")
    for label, top, bottom in (
        ("LocalLLM / direct, extra buffer types on ", local_on, direct_on),
        ("LocalLLM / direct, extra buffer types off", local_off, direct_off),
        ("fallback cost, off / on, direct         ", direct_off, direct_on),
        ("fallback cost, off / on, LocalLLM       ", local_off, local_on),
    ):
        print(
            f"{label}: TTFT {_paired(top.ttft_wall, bottom.ttft_wall):.2f} "
            f"({_paired(top.ttft_cpu, bottom.ttft_cpu):.2f}), "
            f"tokens/s {_paired(top.rate_wall, bottom.rate_wall):.2f} "
            f"({_paired(top.rate_cpu, bottom.rate_cpu):.2f})"
        )


if __name__ == "__main__":
    main()
