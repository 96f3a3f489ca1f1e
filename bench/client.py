"""OpenAIClient overhead and concurrency, measured side by side in one run.

    .venv/bin/python bench/client.py [--requests 2000] [--concurrent 256] [--concurrency 32]

1. Overhead: OpenAIClient.chat against a bare httpx loop that makes the same
   requests (same body, same server, one kept-alive connection each) to a
   server that answers at once. The two run in interleaved blocks so that load
   from other processes falls on both alike. Target: ratio <= 1.10.
2. Concurrency: ``achat`` requests, ``--concurrency`` at a time, to a server
   that waits 50 ms before each reply, against the ideal
   ``requests / concurrency x 50 ms``. Target: ratio <= 1.3.

The server is a small asyncio HTTP/1.1 server in a separate process (this file
run with ``--serve``), so it neither shares the client's GIL nor becomes the
bottleneck.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import httpx

from tnsai_eval.llm import OpenAIClient

MODEL = "bench-model"
PROMPT = "What is the capital of France?"
_REPLY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
    }
).encode()
_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(_REPLY)).encode()
    + b"\r\n\r\n"
    + _REPLY
)


# -- the server (child process) --------------------------------------------------------


async def _serve(delay: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                if delay:
                    await asyncio.sleep(delay)
                writer.write(_RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await server.serve_forever()


class _ServerProcess:
    def __init__(self, delay: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--delay", str(delay)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"bench server failed to start (said {line!r})")
        self.base_url = f"http://127.0.0.1:{int(line)}/v1"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> _ServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# -- 1. overhead against a bare httpx loop ---------------------------------------------


def _bare_loop(http: httpx.Client, url: str) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            response = http.post(
                url, json={"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]}
            )
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
            assert text == "Paris"

    return run


def _client_loop(llm: OpenAIClient) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            assert llm.chat(PROMPT).text == "Paris"

    return run


def overhead(requests: int, blocks: int = 40) -> dict[str, float]:
    """Wall and CPU time per request of both sides, over interleaved paired blocks."""
    per_block = max(1, requests // blocks)
    with _ServerProcess(delay=0.0) as server:
        url = server.base_url + "/chat/completions"
        with httpx.Client() as http, OpenAIClient(MODEL, base_url=server.base_url) as llm:
            sides = {"bare": _bare_loop(http, url), "client": _client_loop(llm)}
            for run in sides.values():
                run(100)  # connect, warm caches
            wall = dict.fromkeys(sides, 0.0)
            cpu = dict.fromkeys(sides, 0.0)
            ratios: list[float] = []
            for block in range(blocks):
                # Alternate which side goes first so neither always gets the
                # quieter half of a burst of load from other processes.
                order = list(sides) if block % 2 == 0 else list(reversed(sides))
                took: dict[str, float] = {}
                for name in order:
                    wall_0, cpu_0 = time.perf_counter(), time.process_time()
                    sides[name](per_block)
                    took[name] = time.perf_counter() - wall_0
                    wall[name] += took[name]
                    cpu[name] += time.process_time() - cpu_0
                ratios.append(took["client"] / took["bare"])
    done = per_block * blocks
    return {
        "requests": done,
        "bare_us": wall["bare"] / done * 1e6,
        "client_us": wall["client"] / done * 1e6,
        "bare_cpu_us": cpu["bare"] / done * 1e6,
        "client_cpu_us": cpu["client"] / done * 1e6,
        "ratio": wall["client"] / wall["bare"],
        "median_block_ratio": statistics.median(ratios),
        "cpu_ratio": cpu["client"] / cpu["bare"],
    }


# -- 2. concurrency against a 50 ms server ---------------------------------------------


async def _timed(batch: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    wall_0, cpu_0 = time.perf_counter(), time.process_time()
    await batch()
    return time.perf_counter() - wall_0, time.process_time() - cpu_0


def concurrency(requests: int, limit: int, delay: float, runs: int = 5) -> dict[str, float]:
    """Wall and client CPU time of ``requests`` achat calls, ``limit`` at a time."""

    async def client_side(base_url: str) -> list[tuple[float, float]]:
        async with OpenAIClient(MODEL, base_url=base_url, max_concurrency=limit) as llm:

            async def batch() -> None:
                replies = await asyncio.gather(*(llm.achat(PROMPT) for _ in range(requests)))
                assert all(r.text == "Paris" for r in replies)

            return [await _timed(batch) for _ in range(runs + 1)]

    async def bare_side(base_url: str) -> list[tuple[float, float]]:
        # The reference: one httpx.AsyncClient (one pool) under a semaphore.
        url = base_url + "/chat/completions"
        bound = asyncio.Semaphore(limit)
        limits = httpx.Limits(max_connections=limit, max_keepalive_connections=limit)
        async with httpx.AsyncClient(limits=limits) as http:

            async def one() -> None:
                async with bound:
                    body = {"model": MODEL, "messages": [{"role": "user", "content": PROMPT}]}
                    response = await http.post(url, json=body)
                    assert response.json()["choices"][0]["message"]["content"] == "Paris"

            async def batch() -> None:
                await asyncio.gather(*(one() for _ in range(requests)))

            return [await _timed(batch) for _ in range(runs + 1)]

    with _ServerProcess(delay=delay) as server:
        client = asyncio.run(client_side(server.base_url))
        bare = asyncio.run(bare_side(server.base_url))
    ideal = requests / limit * delay
    # The first batch of each side opens the connections; it is reported apart.
    walls = sorted(w for w, _ in client[1:])
    return {
        "ideal_s": ideal,
        "cold_s": client[0][0],
        "best_s": walls[0],
        "median_s": statistics.median(walls),
        "cpu_s": statistics.median(c for _, c in client[1:]),
        "bare_median_s": statistics.median(w for w, _ in bare[1:]),
        "bare_cpu_s": statistics.median(c for _, c in bare[1:]),
        "ratio": statistics.median(walls) / ideal,
        "best_ratio": walls[0] / ideal,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrent", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(args.delay))
        return 0

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (1, 5, 15 min) before the run")

    print(f"1. {args.requests} sequential requests, zero-latency server, one connection each")
    o = overhead(args.requests)
    print(f"   {'':18} {'wall us/req':>12} {'client CPU us/req':>18}")
    print(f"   {'bare httpx loop':18} {o['bare_us']:12.0f} {o['bare_cpu_us']:18.0f}")
    print(f"   {'OpenAIClient.chat':18} {o['client_us']:12.0f} {o['client_cpu_us']:18.0f}")
    _verdict(
        "client / bare (median of 40 paired blocks)",
        o["median_block_ratio"],
        1.10,
        f"ratio of totals {o['ratio']:.3f}, of CPU time {o['cpu_ratio']:.3f}",
    )

    n, c, d = args.concurrent, args.concurrency, args.delay
    print(f"2. {n} requests, {c} at a time (achat), server waits {d * 1000:.0f} ms")
    r = concurrency(n, c, d)
    print(f"   ideal {n}/{c} x {d * 1000:.0f} ms = {r['ideal_s']:.3f} s")
    print(
        f"   OpenAIClient: median {r['median_s']:.3f} s, best {r['best_s']:.3f} s of 5"
        f" (client CPU {r['cpu_s']:.3f} s); first batch, opening connections,"
        f" {r['cold_s']:.3f} s"
    )
    print(
        f"   reference, bare httpx.AsyncClient with one pool: median {r['bare_median_s']:.3f} s"
        f" (client CPU {r['bare_cpu_s']:.3f} s)"
    )
    _verdict("wall / ideal (median)", r["ratio"], 1.3, f"best {r['best_ratio']:.3f}")
    return 0


def _verdict(name: str, ratio: float, target: float, extra: str) -> None:
    mark = "ok" if ratio <= target else "ABOVE TARGET"
    print(f"   {name} = {ratio:.3f}   target <= {target}: {mark}   ({extra})")


if __name__ == "__main__":
    sys.exit(main())
