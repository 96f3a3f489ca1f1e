"""DSPy MIPROv2 or GEPA (light) beside the optimizer: same split and evaluator, requests counted.

``bench/optimizer.py --dspy`` calls ``run_mipro`` once per dataset (``--gepa``:
``run_mipro(..., method="gepa")``, GEPA instead of MIPROv2). It needs
``dspy``, which the ``bench`` extra installs into a venv of its own (dspy's
litellm pins python-dateutil below the dev venv's; see bench/README.md,
"DSPy"); nothing else imports this module, and it imports ``dspy`` only
inside ``run_mipro``.

What it does, per dataset:

1. starts ``python -m llama_cpp.server`` with the embedded SmolLM2 GGUF on
   127.0.0.1 (as tests/llm/conftest.py does) and a counting proxy in front of
   it, so every HTTP request DSPy sends (retries and adapter fallbacks
   included) is counted with the tokens the server reports;
2. splits the cases with ``tnsai_eval.optimizer.split_cases`` (the optimizer's
   own seeded, label-stratified split), so DSPy sees exactly the selection
   cases the other methods chose on and never the held-out ones;
3. scores the initial prompt on the held-out cases the optimizer's way
   (``score_prompt``, straight to the server, not counted as DSPy's): the
   reference for the paired sign test;
4. compiles ``dspy.Predict("question -> answer")`` whose instructions are the
   initial prompt with ``MIPROv2(auto="light")`` on the selection cases
   (MIPROv2 splits them itself: 20% to bootstrap from, 80% to choose on),
   the metric being the dataset's evaluator on the ``answer`` field; or with
   ``GEPA(auto="light")``, given the same two parts of the selection cases
   (the first 20% as its training set, the rest as its validation set), the
   metric's feedback naming the expected and the given answer, and the same
   model, served the same way, as its reflection model (``REFLECTION``);
5. runs the unoptimized and the compiled program on the held-out cases (the
   split's, or ``held_out`` when given: a held-out set of its own).

DSPy's caches are off (memory and disk, and ``cache=False`` on the LM), so
every call reaches the server.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
from _replay import FLUSH_EVERY, NoModel  # bench/_replay.py, beside this script

from tnsai_eval.evaluation import score_prompt
from tnsai_eval.llm import (
    DEFAULT_CASSETTE,
    CachedLLM,
    Completion,
    LLMClient,
    OpenAIClient,
    ResponseStore,
    StoredRequest,
    Usage,
    serve_local_model,
)
from tnsai_eval.optimizer._run import held_out_stats
from tnsai_eval.scoring import PromptEvaluator, TestCase, split_cases

__all__ = [
    "CountingProxy",
    "Counts",
    "MiproResult",
    "MiproRow",
    "available",
    "format_lines",
    "format_row",
    "llama_server",
    "make_lm",
    "run_mipro",
]

MODEL_ALIAS = "smollm2"
#: GEPA's reflection model, as the table states it: the task model itself,
#: with room for an instruction and at the temperature DSPy's GEPA docs advise.
REFLECTION_TOKENS = 256
REFLECTION_TEMPERATURE = 1.0
REFLECTION = (
    f"SmolLM2-135M-Instruct (the task model, same llama.cpp server), "
    f"temperature {REFLECTION_TEMPERATURE}, {REFLECTION_TOKENS}-token replies"
)
_START_TIMEOUT_S = 180.0


def available() -> bool:
    """Whether ``dspy`` can be imported here (the ``bench`` extra is installed)."""
    try:
        import dspy  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Counts:
    """What went through the proxy: requests, tokens, server seconds, statuses."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    statuses: tuple[tuple[int, int], ...] = ()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __sub__(self, other: Counts) -> Counts:
        mine, theirs = dict(self.statuses), dict(other.statuses)
        return Counts(
            self.requests - other.requests,
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.seconds - other.seconds,
            tuple(
                sorted((s, n - theirs.get(s, 0)) for s, n in mine.items() if n - theirs.get(s, 0))
            ),
        )


class CountingProxy:
    """An HTTP proxy on 127.0.0.1 that forwards to ``upstream`` and counts each request.

    Every request is counted, whatever its answer (an error reply or a retry
    costs a request too); tokens come from the ``usage`` of JSON replies.
    """

    def __init__(
        self,
        upstream: str | None,
        store: ResponseStore | None = None,
        cassette: str = DEFAULT_CASSETTE,
        fallback: str | None = None,
    ) -> None:
        self.upstream = None if upstream is None else upstream.rstrip("/")
        #: Another run's cassette to look in when this one lacks a reply: a run
        #: that repeats that run's requests (the same compile, scored on other
        #: held-out cases) replays its replies, and records only its own.
        self.fallback = fallback
        if self.upstream is None and store is None:
            raise ValueError("CountingProxy needs an upstream server or a store to replay")
        #: Chat completions are looked up here first and recorded here when
        #: forwarded; with no upstream, a request it lacks is a miss (502).
        self.store = store
        self.cassette = cassette
        self.replayed = 0
        self.missed = 0
        self.recorded = 0
        # How often each request was seen: its n-th occurrence is the store's sample n,
        # so requests DSPy repeats at temperature 1.0 replay their own replies, in order.
        self._seen: dict[str, int] = {}
        self._client = httpx.Client(timeout=600.0)
        self._lock = threading.Lock()
        self._counts = Counts()
        self._statuses: dict[int, int] = {}
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                began = time.perf_counter()
                kind = self.headers.get("Content-Type", "")
                status, content, kind = proxy._answer(method, self.path, body, kind)
                proxy._count(status, content, time.perf_counter() - began)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # one line per request would drown the bench's own output

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _answer(self, method: str, path: str, body: bytes, kind: str) -> tuple[int, bytes, str]:
        """(status, content, content type) of the reply: from the store, else from upstream."""
        request = self._stored_request(method, path, body)
        if request is not None and self.store is not None:
            found = self.store.find(request, self.cassette)
            if found is None and self.fallback is not None:
                found = self.store.find(request, self.fallback)
            if found is not None:
                with self._lock:
                    self.replayed += 1
                return 200, _completion_json(found.completion), "application/json"
        if self.upstream is None:
            with self._lock:
                self.missed += 1
            return 502, f"proxy: no recorded reply to {method} {path}".encode(), "text/plain"
        try:
            reply = self._client.request(
                method, self.upstream + path, content=body, headers={"Content-Type": kind}
            )
        except httpx.HTTPError as error:
            return 502, f"proxy: {type(error).__name__}: {error}".encode(), "text/plain"
        if request is not None and self.store is not None and reply.status_code == 200:
            self.store.put(request, _parse_completion(reply.content), cassette=self.cassette)
            with self._lock:
                self.recorded += 1
                flush = self.recorded % FLUSH_EVERY == 0
            if flush:  # the cassette is held: written every few replies, not after each
                self.store.save()
        return (
            reply.status_code,
            reply.content,
            reply.headers.get("Content-Type", "application/json"),
        )

    def _stored_request(self, method: str, path: str, body: bytes) -> StoredRequest | None:
        """The store's request for a chat completion (its occurrence as ``sample``), else None."""
        if self.store is None or method != "POST" or not path.endswith("/chat/completions"):
            return None
        payload = json.loads(body)
        params = {k: v for k, v in payload.items() if k not in ("model", "messages")}
        first = StoredRequest.build(payload["model"], payload["messages"], params)
        with self._lock:
            sample = self._seen.get(first.key, 0)
            self._seen[first.key] = sample + 1
        if sample == 0:
            return first
        return StoredRequest.build(payload["model"], payload["messages"], params, sample=sample)

    def _count(self, status: int, content: bytes, seconds: float) -> None:
        usage: dict[str, Any] = {}
        try:
            parsed = json.loads(content)
            if isinstance(parsed, dict) and isinstance(parsed.get("usage"), dict):
                usage = parsed["usage"]
        except ValueError:
            pass
        with self._lock:
            c = self._counts
            self._statuses[status] = self._statuses.get(status, 0) + 1
            self._counts = Counts(
                c.requests + 1,
                c.prompt_tokens + int(usage.get("prompt_tokens") or 0),
                c.completion_tokens + int(usage.get("completion_tokens") or 0),
                c.seconds + seconds,
                tuple(sorted(self._statuses.items())),
            )

    @property
    def counts(self) -> Counts:
        with self._lock:
            return self._counts

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()


def _parse_completion(content: bytes) -> Completion:
    """What the store keeps of an OpenAI chat completion: text, finish reason, usage, model."""
    payload = json.loads(content)
    choice = payload["choices"][0]
    usage = payload.get("usage") or {}
    return Completion(
        text=str(choice["message"].get("content") or ""),
        usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
        model=str(payload.get("model") or ""),
        finish_reason=choice.get("finish_reason"),
    )


def _completion_json(completion: Completion) -> bytes:
    """A recorded reply as an OpenAI chat completion, for litellm to parse."""
    usage = completion.usage
    return json.dumps(
        {
            "id": "chatcmpl-replayed",
            "object": "chat.completion",
            "created": 0,
            "model": completion.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": completion.text},
                    "finish_reason": completion.finish_reason or "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            },
        }
    ).encode()


@contextmanager
def llama_server(n_ctx: int) -> Iterator[str]:
    """The embedded model behind llama.cpp's server on a free port; yields its /v1 URL."""
    with serve_local_model(n_ctx=n_ctx, alias=MODEL_ALIAS, start_timeout=_START_TIMEOUT_S) as url:
        yield url


@dataclass(frozen=True, slots=True)
class MiproRow:
    """One program's held-out figures, shaped like bench/optimizer.py's rows."""

    method: str
    selection: int
    held_out: int
    initial: float | None
    score: float | None
    interval: tuple[float, float] | None
    better: int
    worse: int
    p_value: float | None
    train: str
    counts: Counts
    wall_s: float
    errors: int
    #: The held-out score of each case, in the held-out cases' order (for the
    #: paired comparison with the optimizer's methods on the same cases).
    scores: tuple[float | None, ...] = ()


@dataclass(frozen=True, slots=True)
class MiproResult:
    """The rows of one dataset and what MIPROv2 chose."""

    rows: tuple[MiproRow, ...]
    instruction: str
    demos: int
    compile_counts: Counts
    notes: tuple[str, ...]
    #: With a store: replies it answered, and requests it lacked in a replay.
    replayed: int = 0
    missed: int = 0


def make_lm(base_url: str, max_tokens: int, field: str | None, *, temperature: float = 0.0) -> Any:
    """A ``dspy.LM`` for the embedded model behind llama.cpp's server, replying ``{field: str}``.

    litellm routes ``openai/<name>`` with ``api_base`` to any OpenAI-compatible
    server; it insists on an API key (any string does). It sends the token cap
    as ``max_completion_tokens``, which llama.cpp's server ignores (replies ran
    to 100+ tokens under a cap of 32), so the cap also goes as ``max_tokens``
    in ``extra_body``. litellm does not know that this server supports JSON
    schemas, so DSPy's JSONAdapter sends no ``response_format``; the model then
    never writes the JSON (or ChatAdapter's ``[[ ## field ## ]]`` markers)
    DSPy parses. The schema DSPy would have sent goes in ``extra_body``, in
    llama.cpp's form (``{"type": "json_object", "schema": ...}``), which the
    server enforces with a grammar. Temperature 0 is what the optimizer's
    methods use; DSPy raises it itself for bootstrap rounds and proposals.
    With ``field=None`` the replies are free text (GEPA's reflection model,
    whose instruction GEPA reads from the reply's text).
    """
    import dspy

    extra: dict[str, Any] = {"max_tokens": max_tokens}
    if field is not None:
        schema = {
            "type": "object",
            "properties": {field: {"type": "string"}},
            "required": [field],
        }
        extra["response_format"] = {"type": "json_object", "schema": schema}
    return dspy.LM(
        f"openai/{MODEL_ALIAS}",
        api_base=base_url,
        api_key="unused",
        temperature=temperature,
        max_tokens=max_tokens,
        extra_body=extra,
        cache=False,
    )


def run_mipro(
    name: str,
    cases: Sequence[TestCase],
    prompt: str,
    evaluator: PromptEvaluator,
    *,
    threshold: float,
    split: float,
    seed: int,
    reply_tokens: int,
    dspy_tokens: int,
    proposer_tokens: int,
    threads: int,
    n_ctx: int,
    store: str | None = None,
    replay: bool = False,
    method: str = "mipro",
    held_out: Sequence[TestCase] | None = None,
    held_out_name: str | None = None,
) -> MiproResult:
    """MIPROv2 (light) on ``name``'s selection cases; held-out rows for it and the DSPy baseline.

    ``method="gepa"``: GEPA (light) instead. ``held_out`` replaces the split's
    held-out cases (``held_out_name`` names them in the cassette); the
    selection cases stay the split's, so MIPROv2 compiles exactly as it
    did without them, and a store holding that run's replies answers the
    compile's requests again (its cassette is the fallback): only the
    held-out requests are new.

    ``reply_tokens`` caps the initial prompt's replies as the optimizer's
    methods are capped; ``dspy_tokens`` caps the task model's replies under
    DSPy (its field markers need room) and ``proposer_tokens`` the
    instruction proposer's.

    With ``store`` every chat completion (DSPy's through the proxy, the
    initial prompt's through ``CachedLLM``) is looked up in that response
    store and recorded there when it is not; with ``replay`` too, the server
    is never started and a request the store lacks is a miss
    (``MiproResult.missed``). A request DSPy sends again is the store's next
    sample of it, so a replay needs the recording's order: ``threads=1``.
    """
    if replay and store is None:
        raise ValueError("replaying MIPROv2 needs the store its replies were recorded in")
    if replay and threads != 1:
        raise ValueError("a replay needs DSPy's requests in the recorded order: threads=1")
    replies = None if store is None else ResponseStore(store)
    # One cassette per run, and none in the store's default one (which every
    # lookup falls back to): at temperature 1.0 the server's reply depends on
    # what it answered before in its process, so a request another run also
    # sent must get this run's reply, not that one's.
    if method not in ("mipro", "gepa"):
        raise ValueError(f"method must be 'mipro' or 'gepa', got {method!r}")
    run = f"{name} ({len(cases)} cases, split {split}, seed {seed}"
    cassette = f"{method} {run}): {prompt}"
    fallback = None
    if held_out is not None:
        fallback = cassette
        cassette = f"{method} {run}, held out on {held_out_name or len(held_out)}): {prompt}"
    with contextlib.ExitStack() as stack:
        server_url = None if replay else stack.enter_context(llama_server(n_ctx))
        if replies is not None:
            stack.enter_context(replies.holding(cassette))
        upstream = None if server_url is None else server_url.removesuffix("/v1")
        proxy = stack.enter_context(CountingProxy(upstream, replies, cassette, fallback))
        # The initial prompt is scored straight to the server, not through the
        # proxy (it is not DSPy's cost), so the store sits in front of it here.
        initial_llm: LLMClient
        cached: CachedLLM | None = None
        if server_url is None:
            assert replies is not None
            initial_llm = cached = CachedLLM(
                NoModel(MODEL_ALIAS), replies, mode="replay", cassette=cassette
            )
        elif replies is None:
            initial_llm = OpenAIClient(MODEL_ALIAS, base_url=server_url)
        else:
            initial_llm = cached = CachedLLM(
                OpenAIClient(MODEL_ALIAS, base_url=server_url), replies, cassette=cassette
            )
        result = _run_mipro(
            name,
            cases,
            prompt,
            evaluator,
            proxy,
            initial_llm,
            threshold=threshold,
            split=split,
            seed=seed,
            reply_tokens=reply_tokens,
            dspy_tokens=dspy_tokens,
            proposer_tokens=proposer_tokens,
            threads=threads,
            method=method,
            held_out=held_out,
        )
        if cached is None:
            return result
        return replace(
            result,
            replayed=proxy.replayed + cached.hits,
            missed=proxy.missed + (cached.misses if replay else 0),
        )


def _run_mipro(
    name: str,
    cases: Sequence[TestCase],
    prompt: str,
    evaluator: PromptEvaluator,
    proxy: CountingProxy,
    initial_llm: LLMClient,
    *,
    threshold: float,
    split: float,
    seed: int,
    reply_tokens: int,
    dspy_tokens: int,
    proposer_tokens: int,
    threads: int,
    method: str = "mipro",
    held_out: Sequence[TestCase] | None = None,
) -> MiproResult:
    # Before dspy (and so litellm) is imported: litellm would fetch its model
    # price list from GitHub, and dspy opens a disk cache under the home directory.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    cache_dir = tempfile.mkdtemp(prefix="dspy-cache-")
    os.environ.setdefault("DSPY_CACHEDIR", cache_dir)
    import dspy
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)

    selection, split_held_out = split_cases(list(cases), split, seed)
    held_out = split_held_out if held_out is None else list(held_out)
    initial = score_prompt(
        initial_llm,
        prompt,
        held_out,
        evaluator=evaluator,
        params={"temperature": 0.0, "max_tokens": reply_tokens},
        concurrency=1,
    )
    initial_scores: dict[int, float | None] = {i: c.score for i, c in enumerate(initial.cases)}

    task_lm = make_lm(proxy.base_url, dspy_tokens, "answer")
    # The proposer's one call MIPROv2 cannot survive failing is the instruction
    # proposal (an unparsed reply aborts compile; its other calls, the data
    # and program summaries, are caught and skipped): its replies are held
    # to that field.
    prompt_lm = make_lm(proxy.base_url, proposer_tokens, "proposed_instruction")
    dspy.configure(lm=task_lm, adapter=dspy.JSONAdapter())

    def metric(example: Any, prediction: Any, trace: Any = None) -> float | bool:
        score = evaluator.evaluate(str(getattr(prediction, "answer", "") or ""), example.answer)
        # Bootstrapping (trace given) keeps a demo only when the case passed.
        return score if trace is None else score >= threshold

    def feedback(
        example: Any,
        prediction: Any,
        trace: Any = None,
        pred_name: Any = None,
        pred_trace: Any = None,
    ) -> Any:
        # GEPA's metric: the score, and what its reflection model reads about it.
        answer = str(getattr(prediction, "answer", "") or "")
        score = evaluator.evaluate(answer, example.answer)
        said = "correct" if score >= threshold else "wrong"
        return dspy.Prediction(
            score=score,
            feedback=f"The answer {answer!r} is {said}: the expected answer is {example.answer!r}.",
        )

    student = dspy.Predict(dspy.Signature("question -> answer", prompt))
    trainset = [
        dspy.Example(question=c.input, answer=c.expected).with_inputs("question") for c in selection
    ]

    def held(program: Any, method: str, train: str, began: float, before: Counts) -> MiproRow:
        scores: dict[int, float | None] = {}
        errors = 0
        for i, case in enumerate(held_out):
            try:
                answer = str(program(question=case.input).answer or "")
            except Exception:  # a reply DSPy cannot parse is a wrong answer here
                errors += 1
                answer = ""
            scores[i] = evaluator.evaluate(answer, case.expected)
        stats = held_out_stats(initial_scores, scores, len(held_out))
        return MiproRow(
            method,
            len(selection),
            len(held_out),
            stats.initial_score,
            stats.score,
            stats.interval,
            stats.better,
            stats.worse,
            stats.p_value,
            train,
            proxy.counts - before,
            time.perf_counter() - began,
            errors,
            tuple(scores[i] for i in range(len(held_out))),
        )

    start = proxy.counts
    began = time.perf_counter()
    baseline = held(student, "dspy-base", "-", began, start)
    # Printed now: MIPROv2 takes the better part of an hour here.
    print(format_row(name, baseline), flush=True)
    compile_began = time.perf_counter()
    label = f"{method}-light"
    if method == "gepa":
        # The same two parts MIPROv2 makes of the selection cases (its
        # training share first): GEPA reflects on the first and keeps its
        # Pareto scores on the second.
        cut = max(1, round(0.2 * len(trainset)))
        # GEPA asks its reflection model through DSPy's adapter (JSONAdapter
        # here) for one field, ``new_instruction``: held to it, as MIPROv2's
        # proposer is to its own.
        reflection_lm = make_lm(
            proxy.base_url, REFLECTION_TOKENS, "new_instruction", temperature=REFLECTION_TEMPERATURE
        )
        gepa = dspy.GEPA(
            metric=feedback,
            auto="light",
            reflection_lm=reflection_lm,
            num_threads=threads,
            seed=seed,
            track_stats=True,
        )
        compiled = gepa.compile(student, trainset=trainset[:cut], valset=trainset[cut:])
        details = getattr(compiled, "detailed_results", None)
        scores = list(getattr(details, "val_aggregate_scores", []) or [])
        best_index = getattr(details, "best_idx", None)
        train = "-"
        if scores and isinstance(best_index, int):
            train = f"{scores[0]:5.3f}->{scores[best_index]:5.3f}"
    else:
        optimizer = dspy.MIPROv2(
            metric=metric,
            prompt_model=prompt_lm,
            task_model=task_lm,
            auto="light",
            num_threads=threads,
            seed=seed,
            # A reply without DSPy's field markers raises; Evaluate and the bootstrap
            # give up after settings.max_errors (10) of those, which this model
            # reaches within the first few cases. Such a case scores 0 instead.
            max_errors=1_000_000,
        )
        compiled = optimizer.compile(student, trainset=trainset)
        best = getattr(compiled, "score", None)
        logs = getattr(compiled, "trial_logs", {}) or {}
        first = logs.get(1, {}).get("full_eval_score") if isinstance(logs, dict) else None
        train = "-"
        if isinstance(best, float):
            # DSPy reports its validation scores in percent.
            start_text = f"{first / 100:5.3f}" if isinstance(first, float) else "  -  "
            train = f"{start_text}->{best / 100:5.3f}"
    compile_counts = proxy.counts - start - baseline.counts
    after_compile = proxy.counts
    row = held(compiled, label, train, compile_began, after_compile)
    # The method's whole cost: its compile, and its held-out runs of the
    # unoptimized and the chosen program (the optimizer's rows count both too).
    mipro = replace(row, counts=proxy.counts - start, wall_s=time.perf_counter() - began)
    predictor = compiled.predictors()[0]
    notes: tuple[str, ...] = (
        f"compile: {compile_counts.requests} requests, {compile_counts.tokens} tokens; "
        f"held-out runs: {baseline.counts.requests} + {row.counts.requests} requests; "
        f"HTTP statuses {dict((proxy.counts - start).statuses)}",
        f"unparsed held-out replies: baseline {baseline.errors}, {method} {row.errors}",
    )
    if method == "gepa":
        notes += (f"reflection model: {REFLECTION}",)
    return MiproResult(
        rows=(baseline, mipro),
        instruction=str(predictor.signature.instructions),
        demos=len(predictor.demos),
        compile_counts=compile_counts,
        notes=notes,
    )


def format_row(name: str, r: MiproRow) -> str:
    """One row as bench/optimizer.py prints its rows (``model s``: the server's seconds)."""
    low, high = r.interval or (float("nan"), float("nan"))
    held = f"{_fmt(r.initial)} -> {_fmt(r.score)} [{low:.2f}, {high:.2f}]"
    p = "-" if r.p_value is None else f"{r.p_value:.3g}"
    return (
        f"{name:<17} {r.selection:>3}/{r.held_out:<3} {r.method:<10} {held:<36} "
        f"{f'+{r.better}/-{r.worse}':>7} {p:>7} {r.train:>13} {r.counts.requests:>5} "
        f"{r.counts.tokens:>7} {r.counts.seconds:>7.1f} {r.wall_s:>6.1f}"
    )


def format_lines(name: str, result: MiproResult) -> list[str]:
    """MIPROv2's row (the baseline's is printed as soon as it is measured) and notes."""
    lines = [format_row(name, result.rows[-1])]
    method = result.rows[-1].method.split("-")[0]
    lines.append(
        f"{'':<17} {method} chose {result.demos} demos, instruction: {result.instruction!r}"
    )
    lines.extend(f"{'':<17} {note}" for note in result.notes)
    return lines


def _fmt(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"
