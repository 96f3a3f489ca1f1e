"""One prompt on one set of cases, scored with several models side by side.

Each model is scored by ``score_prompt`` (the library's one scoring path),
so a score here means what it means in ``evaluate_prompt`` and the
optimizer; ``frames.compare_models`` and ``tnsai-eval eval`` first resolve a
dataset with ``tnsai_eval.datasets.scoring_plan``, as those do.
What is added per model is what a model swap is about besides the score:
its tokens in and out, their estimated cost at the model's declared prices,
and the latency of its live calls (p50, p95; a reply served from a store
took no model time and is not counted).

Models are named in the models table (``tnsai_eval.llm.ModelTable``,
``embedded`` built in) or given as clients under a label of your choice:

>>> from tnsai_eval.scoring import ExactMatchEvaluator
>>> from tnsai_eval.testing import ScriptedLLM
>>> good, poor = ScriptedLLM(rules=[("2", "4"), ("3", "6")]), ScriptedLLM(default="5")
>>> cases = [TestCase("2+2", "4"), TestCase("3+3", "6")]
>>> result = evaluate_models("Add.", cases, {"good": good, "poor": poor},
...                          evaluator=ExactMatchEvaluator(), progress=False)
>>> [(r.name, r.score) for r in result.results]
[('good', 1.0), ('poor', 0.0)]
>>> result.to_dataframe().shape[0], list(result.summary()["model"])
(4, ['good', 'poor'])
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from tnsai_eval._util.stats import mean_interval, percentile
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation._scoring import PromptEvaluation, score_prompt
from tnsai_eval.evaluation._variant import DEFAULT_TEMPLATE
from tnsai_eval.llm import (
    DEFAULT_CASSETTE,
    CallEvent,
    CallListener,
    FrontClient,
    LLMClient,
    ModelTable,
    NamedModel,
    RecordMode,
    ResponseStore,
)
from tnsai_eval.records import CaseRecord
from tnsai_eval.scoring import DEFAULT_CALL_PARAMS, PromptEvaluator, TestCase, check_cases

if TYPE_CHECKING:
    import pandas as pd

    from tnsai_eval.reports import ModelComparison, Report

__all__ = [
    "MODEL_CASE_COLUMNS",
    "MODEL_SUMMARY_COLUMNS",
    "ModelEvaluation",
    "ModelResult",
    "ModelsInput",
    "evaluate_models",
    "evaluate_target_models",
]

#: What ``evaluate_models`` takes as models: names in the models table (or
#: ``NamedModel``s), or a mapping of labels to names, ``NamedModel``s or clients.
ModelsInput: TypeAlias = "Sequence[str | NamedModel] | Mapping[str, str | NamedModel | LLMClient]"

#: Columns of ``ModelEvaluation.to_dataframe``: one row per model and case.
MODEL_CASE_COLUMNS = (
    "model", "case", "input", "expected", "output", "score", "passed", "state",
    "tokens", "cached", "latency_s", "error",
)  # fmt: skip
#: Columns of ``ModelEvaluation.summary``: one row per model, in the order given.
MODEL_SUMMARY_COLUMNS = (
    "model", "cases", "score", "score_low", "score_high", "pass_rate", "errors",
    "tokens_in", "tokens_out", "cost", "live_calls", "latency_p50_s", "latency_p95_s",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ModelResult:
    """One model's scores on the dataset, what it cost, and how long its live calls took.

    ``named`` is the table's entry (``None`` for a client given directly);
    ``cost`` is ``None`` without declared prices. ``latencies`` are the wall
    times of the calls that reached the model, in seconds.
    """

    name: str
    evaluation: PromptEvaluation
    threshold: float
    named: NamedModel | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latencies: tuple[float, ...] = ()

    @property
    def score(self) -> float:
        """The mean score over the recorded cases (a failed case counts as 0)."""
        return self.evaluation.mean_score

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% interval of ``score`` over the cases (Student's t), clipped to [0, 1]."""
        scores = self.evaluation.scores
        if len(scores) < 2:
            return self.score, self.score
        _, low, high = mean_interval(scores)
        return max(low, 0.0), min(high, 1.0)

    @property
    def pass_rate(self) -> float:
        """Share of the recorded cases scored at the dataset's case threshold or above."""
        return self.evaluation.case_pass_rate(self.threshold)

    @property
    def cost(self) -> float | None:
        """Estimated cost of this model's tokens at its declared prices (None: no price)."""
        return None if self.named is None else self.named.cost(self.tokens_in, self.tokens_out)

    @property
    def live_calls(self) -> int:
        return len(self.latencies)

    @property
    def latency_p50_s(self) -> float | None:
        return None if not self.latencies else percentile(self.latencies, 50)

    @property
    def latency_p95_s(self) -> float | None:
        return None if not self.latencies else percentile(self.latencies, 95)

    def summary_row(self) -> dict[str, Any]:
        """This model's row of ``ModelEvaluation.summary``."""
        low, high = self.interval
        own = {
            "model": self.name,
            "cases": len(self.evaluation.cases),
            "score_low": low,
            "score_high": high,
            "errors": len(self.evaluation.errors),
        }
        # The other columns are this result's properties of the same names.
        return {c: own[c] if c in own else getattr(self, c) for c in MODEL_SUMMARY_COLUMNS}


@dataclass(frozen=True, slots=True)
class ModelEvaluation:
    """``evaluate_models``'s result: one ``ModelResult`` per model, in the order given."""

    prompt: str
    dataset: str
    results: tuple[ModelResult, ...]
    notes: tuple[str, ...] = ()
    #: The layout and call parameters every model was sent (the prompt's hash covers them).
    template: str = DEFAULT_TEMPLATE
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.results)

    def to_report(
        self, *, prompt_file: str | None = None, min_score: float | None = None
    ) -> Report:
        """The run as a report the gate reads: one test per model (``eval::DATASET[MODEL]``),
        with its cases (pass or fail at the threshold), tokens, cost and latency."""
        from tnsai_eval.reports import (
            MetricStats,
            PromptRecord,
            Report,
            TestStatus,
            TrackedTest,
            latency_figures,
            prompt_hash,
        )

        params = dict(self.params)
        digest = prompt_hash(self.prompt.rstrip(), self.template, params)
        prompt = PromptRecord("score", self.prompt, digest, prompt_file)
        tests = []
        for result in self.results:
            scored = result.evaluation
            cases = tuple(replace(c, passed=c.verdict(result.threshold)) for c in scored.cases)
            passed = not scored.errors and not (min_score is not None and result.score < min_score)
            live, p50, p95 = latency_figures(result.latencies)
            tests.append(
                TrackedTest(
                    nodeid=f"eval::{self.dataset}[{result.name}]",
                    status=TestStatus.PASSED if passed else TestStatus.FAILED,
                    metrics={"score": MetricStats("score", (result.score,))},
                    passed_samples=int(passed),
                    calls=scored.calls,
                    tokens=result.tokens_in + result.tokens_out,
                    cache_hits=sum(c.cached for c in scored.cases),
                    cases=cases,
                    prompts=(prompt,),
                    model=result.name,
                    tokens_in=result.tokens_in,
                    tokens_out=result.tokens_out,
                    cost=result.cost,
                    live_calls=live,
                    latency_p50_s=p50,
                    latency_p95_s=p95,
                )
            )
        config: dict[str, Any] = {
            "command": "eval",
            "dataset": self.dataset,
            "models": list(self.names),
            "model_table": {r.name: r.named.describe() for r in self.results if r.named},
            "min_score": min_score,
            "params": {k: v for k, v in params.items() if k != "response_format"},
        }
        return Report(tests=tuple(tests), config=config)

    def compare(self, **gate: Any) -> tuple[ModelComparison, ...]:
        """Each model after the first against the first, case by case: the paired verdict
        (flipped cases, sign test) that pytest's ``--tnsai-compare-models`` gives.

        ``gate`` goes to ``reports.compare`` (``gate="paired"`` unless given,
        ``alpha``, ``tolerance``...). One model: nothing to compare.
        """
        from tnsai_eval.reports import compare_report_models

        report = self.to_report()
        gate.setdefault("gate", "paired")
        first = self.names[0]
        return tuple(
            compare_report_models(report, first, other, **gate) for other in self.names[1:]
        )

    def format_verdicts(self, *, markdown: bool = False) -> str:
        """``compare()`` as text: per model after the first, its verdict table and flipped
        cases ('' with one model)."""
        from tnsai_eval.reports import format_model_comparison

        return "\n\n".join(
            f"{verdict.candidate} against {verdict.baseline}, case by case:\n"
            + format_model_comparison(verdict, markdown=markdown)
            for verdict in self.compare()
        )

    def get(self, name: str) -> ModelResult:
        """The result of the model labelled ``name`` (a ``ConfigError`` naming the known)."""
        for result in self.results:
            if result.name == name:
                return result
        raise ConfigError(f"no model {name!r} in this evaluation; its models are {self.names}")

    def to_dataframe(self) -> pd.DataFrame:
        """The tidy view: one row per model and case (``MODEL_CASE_COLUMNS``)."""
        import pandas as pd

        rows = []
        for result in self.results:
            for case in result.evaluation.cases:
                own = {
                    "model": result.name,
                    "case": case.index,
                    "passed": case.verdict(result.threshold),
                    "state": case.state.value,
                }
                # The other columns are the case record's fields of the same names.
                rows.append(
                    {c: own[c] if c in own else getattr(case, c) for c in MODEL_CASE_COLUMNS}
                )
        return pd.DataFrame(rows, columns=list(MODEL_CASE_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """One row per model (``MODEL_SUMMARY_COLUMNS``): score with its interval, pass
        rate, tokens, cost and latency."""
        import pandas as pd

        rows = [r.summary_row() for r in self.results]
        return pd.DataFrame(rows, columns=list(MODEL_SUMMARY_COLUMNS))


@dataclass(slots=True)
class _Tally:
    """What one model's calls cost: tokens in and out, and the wall time of live calls.

    It listens to the model's ``FrontClient`` (``subscribe``): every reply
    counts, a stored one included (the cost its recording paid), and only a
    live one has a latency.
    """

    tokens_in: int = 0
    tokens_out: int = 0
    latencies: list[float] = field(default_factory=list)

    def __call__(self, event: CallEvent) -> None:
        if event.error is None:
            self.tokens_in += event.prompt_tokens
            self.tokens_out += event.completion_tokens
        if event.live:
            self.latencies.append(event.latency_s)


def _resolve(
    models: ModelsInput, table: ModelTable | None
) -> list[tuple[str, NamedModel | None, LLMClient | None]]:
    """``(label, named model or None, client or None)`` per model, checked before any call."""
    if isinstance(models, str) or not isinstance(models, Sequence | Mapping):
        raise ConfigError(
            f"models must be a list of model names or a mapping of labels to models, got {models!r}"
        )
    items: list[tuple[str, object]]
    if isinstance(models, Mapping):
        items = [(str(label), value) for label, value in models.items()]
    else:
        items = [(m.name if isinstance(m, NamedModel) else str(m), m) for m in models]
    if not items:
        raise ConfigError("models is empty: name at least one model")
    resolved: list[tuple[str, NamedModel | None, LLMClient | None]] = []
    for label, value in items:
        if any(label == seen for seen, _, _ in resolved):
            raise ConfigError(f"model {label!r} is given twice")
        if isinstance(value, str):
            value = (table if table is not None else ModelTable.load()).get(value)
        if isinstance(value, NamedModel):
            resolved.append((label, value, None))
        elif callable(getattr(value, "chat", None)):
            resolved.append((label, None, value))  # type: ignore[arg-type]
        else:
            raise ConfigError(
                f"model {label!r}: expected a model name, a NamedModel or a client with "
                f"chat(), got {value!r}"
            )
    return resolved


def evaluate_models(
    prompt: str | os.PathLike[str],
    cases: Sequence[TestCase],
    models: ModelsInput,
    *,
    table: ModelTable | None = None,
    evaluator: PromptEvaluator | None = None,
    template: str = DEFAULT_TEMPLATE,
    params: Mapping[str, Any] | None = None,
    model_params: Mapping[str, Mapping[str, Any]] | None = None,
    threshold: float = 0.5,
    dataset: str = "<cases>",
    notes: Sequence[str] = (),
    concurrency: int = 4,
    max_calls: int | None = None,
    store: ResponseStore | str | os.PathLike[str] | None = None,
    record_mode: RecordMode | str = RecordMode.RECORD,
    cassette: str = DEFAULT_CASSETTE,
    progress: bool = True,
    on_case: Callable[[str, CaseRecord], None] | None = None,
) -> ModelEvaluation:
    """Score ``prompt`` on ``cases`` with each of ``models``, one model after the other.

    ``prompt`` is the text, or a ``pathlib.Path`` to a prompt file.
    ``models``: names in ``table`` (default: the nearest ``pyproject.toml``'s
    ``[tool.tnsai-eval.models]``; ``embedded`` is built in), or a mapping of
    labels to names, ``NamedModel``s or clients. ``template`` lays out each
    case's message as ``score_prompt`` does; ``params`` are the call
    parameters of every model (default: the optimizer's), ``model_params``
    per-label additions (another ``max_tokens`` or ``temperature`` for one of
    them); ``threshold`` is the score a case must reach to pass. Each model
    is called through its one ``FrontClient`` (a client given as one is used
    as it is), behind ``store`` in ``record_mode`` when given (``replay``
    never calls; ``cassette`` is the one recorded in and read first, a
    pytest test's node id to replay what that test recorded); its tokens and
    latencies are what its client's events say. ``dataset`` and ``notes`` only label the result.
    ``tnsai_eval.frames.compare_models`` takes a dataset name instead of
    cases and resolves it first.

    Everything that can be checked is checked before the first call: the
    prompt, every name and every key variable (``ConfigError``). A failed
    call is recorded on its case, like everywhere else.
    """
    text = prompt
    if isinstance(prompt, os.PathLike):
        try:
            text = Path(prompt).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read prompt file {str(Path(prompt))!r}: {exc}") from exc
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"prompt must be a non-empty str, got {prompt!r}")
    checked = check_cases(cases, "cases")
    resolved = _resolve(models, table)
    labels = [label for label, _, _ in resolved]
    extra = dict(model_params or {})
    unknown = sorted(set(extra) - set(labels))
    if unknown:
        raise ConfigError(f"model_params names {unknown}, not among the models {labels}")
    base = dict(DEFAULT_CALL_PARAMS if params is None else params)
    results: list[ModelResult] = []
    for label, named, client in _fronts(resolved, store, record_mode, cassette):

        def score(
            seen: Callable[[CaseRecord], None], client: FrontClient = client, label: str = label
        ) -> Any:
            return score_prompt(
                client,
                text,
                checked,
                evaluator=evaluator,
                template=template,
                params={**base, **extra.get(label, {})},
                concurrency=concurrency,
                max_calls=max_calls,
                on_case=seen,
            )

        listen = client.subscribe  # the model's own calls: a judge's are not its cost
        results.append(
            _one_model(label, named, threshold, len(checked), score, listen, progress, on_case)
        )
    return ModelEvaluation(text, dataset, tuple(results), tuple(notes), template, base)


def _one_model(
    label: str,
    named: NamedModel | None,
    threshold: float,
    total: int,
    score: Callable[[Callable[[CaseRecord], None]], PromptEvaluation],
    listen: Callable[[CallListener], AbstractContextManager[object]],
    progress: bool,
    on_case: Callable[[str, CaseRecord], None] | None,
) -> ModelResult:
    """One model's result: ``score(on_case)`` run while ``listen`` tallies its calls."""
    tally = _Tally()
    bar = _bar(label, total) if progress else None

    def seen(case: CaseRecord) -> None:
        if bar is not None:
            bar.update(1)
        if on_case is not None:
            on_case(label, case)

    try:
        with listen(tally):
            evaluation = score(seen)
    finally:
        if bar is not None:
            bar.close()
    return ModelResult(
        label,
        evaluation,
        threshold,
        named,
        tally.tokens_in,
        tally.tokens_out,
        tuple(tally.latencies),
    )


def _fronts(
    resolved: Sequence[tuple[str, NamedModel | None, LLMClient | None]],
    store: ResponseStore | str | os.PathLike[str] | None,
    record_mode: RecordMode | str,
    cassette: str,
) -> list[tuple[str, NamedModel | None, FrontClient]]:
    """Each model's label, table entry and one client, behind ``store`` in ``record_mode``;
    key variables checked."""
    mode = RecordMode.parse(record_mode)
    cached_store = None if store is None else (
        store if isinstance(store, ResponseStore) else ResponseStore(store)
    )  # fmt: skip
    fronts: list[tuple[str, NamedModel | None, FrontClient]] = []
    for label, named, client in resolved:
        if client is None:
            assert named is not None
            if named.api_key_env is not None and not (cached_store and mode is RecordMode.REPLAY):
                named.api_key()  # an unset key variable fails here, before any call
            front = named.front(cached_store, mode, cassette=cassette)
        elif isinstance(client, FrontClient):
            front = client  # already the model's one client: its own store
        else:
            front = FrontClient(client, cached_store, mode, cassette=cassette)
        fronts.append((label, named, front))
    return fronts


def _bar(label: str, total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="case", desc=label, file=sys.stderr, leave=False)


def evaluate_target_models(
    make: Callable[[LLMClient | None], Callable[..., Any]],
    cases: Sequence[TestCase],
    models: ModelsInput | None,
    *,
    name: str,
    table: ModelTable | None = None,
    evaluator: Any = None,
    threshold: float = 0.5,
    dataset: str = "<cases>",
    notes: Sequence[str] = (),
    concurrency: int = 4,
    max_calls: int | None = None,
    store: ResponseStore | str | os.PathLike[str] | None = None,
    record_mode: RecordMode | str = RecordMode.RECORD,
    cassette: str = DEFAULT_CASSETTE,
    progress: bool = True,
) -> ModelEvaluation:
    """Score a target (the app's own code) on ``cases`` once per model: ``evaluate_models``
    for a function or an agent rather than a prompt.

    ``make(client)`` returns the target (``score_target``'s: ``fn(input)`` or an
    agent factory) that runs on that model's client: its ``FrontClient``,
    behind ``store`` in ``record_mode`` as ``evaluate_models`` builds it.
    ``models=None`` runs the target once as it is, on the model it chose
    itself (``make(None)``), under the label ``app``. ``name`` names the
    target in the result (its ``prompt``). Tokens, calls and latencies are
    those of every call made through a ``FrontClient`` while a case ran.
    """
    from tnsai_eval.evaluation._target import score_target
    from tnsai_eval.llm import observing

    checked = check_cases(cases, "cases")
    runs: Sequence[tuple[str, NamedModel | None, FrontClient | None]] = [("app", None, None)]
    if models is not None:
        runs = _fronts(_resolve(models, table), store, record_mode, cassette)
    results: list[ModelResult] = []
    for label, named, client in runs:

        def score(seen: Callable[[CaseRecord], None], client: Any = client) -> Any:
            return score_target(
                make(client),
                checked,
                evaluator=evaluator,
                concurrency=concurrency,
                max_calls=max_calls,
                case_threshold=threshold,
                on_case=seen,
            )

        # Every call made while a case ran, through whichever client the app holds.
        results.append(
            _one_model(label, named, threshold, len(checked), score, observing, progress, None)
        )
    return ModelEvaluation(name, dataset, tuple(results), tuple(notes), DEFAULT_TEMPLATE, {})
