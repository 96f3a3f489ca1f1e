"""The latency tnsai-eval reports, beside the delay a server is known to add.

    .venv/bin/python bench/latency.py [--cases 20] [--delays 0.05,0.2,0.5]

An OpenAI-compatible server in this process (127.0.0.1, an ephemeral port)
sleeps a fixed delay before each reply. For each delay, one prompt is scored
on ``--cases`` cases through ``evaluate_models`` (the path ``compare_models``
and ``tnsai-eval eval`` take), four calls at a time, and the p50 and p95 it
reports for the model's live calls are printed beside the delay, with
their ratio to it: how much the client, the pool and this machine add to a
reply's wall time. The same cases are then replayed from a response store:
replayed replies took no model time, so the live call count must be 0 and
the latency empty.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tnsai_eval.evaluation import evaluate_models
from tnsai_eval.llm import OpenAIClient
from tnsai_eval.scoring import TestCase


class _Slow(ThreadingHTTPServer):
    daemon_threads = True
    delay = 0.0


class _Handler(BaseHTTPRequestHandler):
    server: _Slow

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length))
        time.sleep(self.server.delay)
        body = json.dumps(
            {
                "id": "bench",
                "object": "chat.completion",
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Paris"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--delays", default="0.05,0.2,0.5")
    args = parser.parse_args()
    cases = [TestCase(f"What is the capital of country {i}?", "Paris") for i in range(args.cases)]
    server = _Slow(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    print(f"{args.cases} cases, 4 calls at a time, one server on 127.0.0.1")
    headers = ("delay s", "live", "p50 s", "p95 s", "p50/delay", "p95/delay")
    print("  ".join(f"{h:>{w}}" for h, w in zip(headers, (8, 5, 7, 7, 9, 9), strict=True)))
    with tempfile.TemporaryDirectory() as store:
        for delay in (float(d) for d in args.delays.split(",")):
            server.delay = delay
            client = OpenAIClient(f"slow-{delay:g}", base_url=url)
            run = evaluate_models(
                "Answer.", cases, {"slow": client}, store=store, record_mode="record",
                progress=False,
            ).get("slow")  # fmt: skip
            p50, p95 = run.latency_p50_s or 0.0, run.latency_p95_s or 0.0
            print(
                f"{delay:>8.3f}  {run.live_calls:>5}  {p50:>7.3f}  {p95:>7.3f}  "
                f"{p50 / delay:>9.2f}  {p95 / delay:>9.2f}"
            )
            replayed = evaluate_models(
                "Answer.", cases, {"slow": client}, store=store, record_mode="replay",
                progress=False,
            ).get("slow")  # fmt: skip
            assert replayed.live_calls == 0
            assert replayed.latency_p50_s is None
    print("replayed from the store: 0 live calls and no latency at every delay")
    server.shutdown()


if __name__ == "__main__":
    main()
