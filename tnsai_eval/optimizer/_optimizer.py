"""PromptOptimizer: the original module's search, made concurrent, bounded and reproducible."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from tnsai_eval._util.aio import blocking
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import PromptVariant
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer._config import OptimizerConfig
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._run import Run, example_order
from tnsai_eval.optimizer._strategies import suggest_strategies
from tnsai_eval.scoring import TestCase, check_cases, split_cases

__all__ = ["PromptOptimizer"]


class PromptOptimizer:
    """Searches for a better prompt by trying strategies and model rewrites.

    Every option after ``llm`` is keyword-only, as in
    ``PromptOptimizer(llm, max_iterations=5, target_score=0.9)``: the fields of
    ``OptimizerConfig`` (or ``config=`` one), kept frozen in ``self.config``;
    defaults: ``candidate_strategies=DEFAULT_STRATEGIES`` (the original four)
    and ``evaluator=DefaultPromptEvaluator()``.

    The original module's algorithm, kept exactly:

    * a prompt's score is the mean evaluator score over the cases, one call per
      case with the prompt and the input (``template``, by default the prompt,
      a blank line, then the input, as one user message); a case whose call
      raises any ``Exception`` is left out of the mean and counted, and so is one
      whose evaluator raises or returns a value outside [0, 1] (the error is
      in the ``error`` column of ``to_dataframe()``);
    * each round applies every candidate strategy to the current best prompt,
      then asks the model to rewrite the best prompt from its results (beyond
      the original, from its failures; ``rewrite=False`` skips this; a failed
      or empty rewrite adds no variant); any variant scoring higher than the
      best becomes the best (the first, on ties);
    * the run stops when the best score reaches ``target_score``, after
      ``max_iterations`` rounds, or when the best scores after the last three
      rounds are within 0.01 of each other. Beyond the original, it also
      stops after the initial prompt when every one of its cases failed
      (``StopReason.ALL_CASES_FAILED``: a server that is down), and at the
      ``max_calls`` / ``max_tokens`` / ``max_seconds`` budgets.

    Held out by default: ``optimize`` splits the cases (``split=0.3`` of
    them, seeded by ``seed``, stratified by label, see ``split_cases``) into
    selection cases, on which every variant is scored and the best chosen,
    and held-out cases, on which only the initial and the best prompt are
    scored at the end: ``result.validation_score``, its interval and
    ``validation_p_value`` (exact paired sign test) say whether the gain is
    real; ``result.score`` is the training (selection) score. Explicit
    ``validation_cases`` replace the split; ``split=None`` holds nothing out.

    Beyond the original: cases are scored concurrently (at most
    ``concurrency`` calls in flight) through the client's async path; within a
    run the same request is never sent twice, and a variant equal to an
    earlier one is not scored again. A variant is a ``PromptVariant`` (also
    a starting prompt): ``FEW_SHOT`` adds the last ``few_shot_examples``
    cases of the racing order as inline demos, ``demo_sets=N`` tries N demo
    sets per round (``_demos``), ``labels`` (by default a
    ``LabelEvaluator``'s) are what the ``LABELS`` strategy states, and
    ``rewrite_llm`` (another, stronger model) writes the rewrites
    (``_rewrite.rewrite_request``) in ``rewrite_max_tokens`` tokens.
    ``search`` names a mode of ``SEARCHES`` (``racing`` and ``halving``
    score fewer cases: ``tnsai_eval.optimizer._racing``, ``racing_bound``
    its test). ``max_calls``, ``max_tokens`` and
    ``max_seconds`` bound the run (``result.stop_reason`` says which ended
    it); ``max_calls`` bounds HTTP attempts, retries included, of every call
    the run makes (a judge's and the rewrite model's too; ``evaluation.Budget``
    says when an attempt is taken), and ``budget=`` (an ``llm.CallBudget``)
    is one shared with other work (the pytest plugin's ``--llm-max-calls``),
    drawn on as well. The held-out check's calls (two per held-out case) are
    set aside first: a budget with fewer attempts left than that refuses the
    run at start (``ConfigError``), and the search spends the rest. A round
    the budget ends part-way is cut: its variants keep the cases they were
    scored on (status ``INCOMPLETE``) and cannot become best. ``seed`` also
    fixes the racing order; with a deterministic client the same inputs give
    the same result, call for call. ``progress``
    receives a ``ProgressEvent`` after every scored case and every round.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> llm = ScriptedLLM(rules=[(r"only the answer", "Paris")], default="I think it is Paris.")
    >>> optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"])
    >>> result = optimizer.optimize("Capital of France?", [TestCase("France", "Paris")])
    >>> result.training_improved, result.score, result.calls
    (True, 1.0, 3)
    >>> result.rejected_rewrites  # the model's rewrite was its own earlier reply
    ("repeats the model's reply to a case ('I think it is Paris.')",)
    """

    def __init__(
        self, llm: LLMClient, *, config: OptimizerConfig | None = None, **options: Any
    ) -> None:
        if config is not None and options:
            raise ConfigError(
                f"give either config= or keyword options, not both (got {sorted(options)})"
            )
        self.llm = llm
        #: The settings, frozen: change them with ``with_options``.
        self.config = config if config is not None else OptimizerConfig(**options)

    def __repr__(self) -> str:
        c = self.config
        strategies = ", ".join(s.value for s in c.strategies)
        return (
            f"PromptOptimizer(search={c.search!r}, max_iterations={c.max_iterations}, "
            f"target_score={c.target_score}, strategies=[{strategies}])"
        )

    def with_options(self, **changes: Any) -> PromptOptimizer:
        """A new optimizer on the same client with ``changes`` to its settings.

        >>> from tnsai_eval.testing import ScriptedLLM
        >>> PromptOptimizer(ScriptedLLM()).with_options(search="racing").config.search
        'racing'
        """
        return PromptOptimizer(self.llm, config=self.config.replace(**changes))

    suggest_strategies = staticmethod(suggest_strategies)

    async def aoptimize(
        self,
        prompt: str | PromptVariant,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
        stop_event: threading.Event | None = None,
        target: Callable[[str], Any] | None = None,
    ) -> OptimizationResult:
        """Run the search from ``prompt``; see the class docstring.

        ``target`` optimizes a prompt inside the app: ``target(prompt)`` returns
        the target that uses that prompt (``fn(input) -> str | Trajectory``,
        sync or async, or an agent factory; for example an agent with that
        system prompt), and each variant is scored by running it on the cases
        as ``score_target`` does (its calls through any ``FrontClient`` are the
        case's and draw on the run's budgets; a raising target, or a factory
        that raises, is an errored case). ``evaluator`` may then be a
        trajectory evaluator (``ToolCallMatch``...). The split, the held-out
        check and its paired test, the constant-answer check and the budgets
        work as for a prompt; the held-out reserve counts a case at the calls
        per case observed. The optimizer's own ``llm`` writes the rewrites.
        Demo sets and a starting ``PromptVariant`` with more than an
        instruction need the optimizer's own calls (``ConfigError``).

        The held-out split is the class docstring's (``split_cases``: same
        inputs on one side). ``optimize`` is the same for synchronous callers;
        it works inside a running event loop (a notebook) by running in a thread.

        ``stop_event``, a ``threading.Event`` that another thread (a Stop
        button) may set, ends the run at the next call boundary: no call
        starts after it is set, calls in flight finish, and the result keeps
        every score so far, with ``stop_reason`` ``StopReason.STOPPED``
        (validation calls are not made either)::

            stop = threading.Event()
            worker = threading.Thread(target=lambda: optimizer.optimize(p, cases, stop_event=stop))
            worker.start()
            stop.set()  # from any thread
        """
        if isinstance(prompt, str):
            prompt = PromptVariant(prompt)
        elif not isinstance(prompt, PromptVariant):
            raise ConfigError(
                f"prompt must be a str or a PromptVariant, got {type(prompt).__name__}"
            )
        if stop_event is not None and not isinstance(stop_event, threading.Event):
            raise ConfigError(
                f"stop_event must be a threading.Event or None, got {type(stop_event).__name__}"
            )
        self._check_target(target, prompt)
        selection, validation = self.split_cases(cases, validation_cases)
        run = Run(
            self.llm, self.config, prompt, selection, validation, stop_event=stop_event,
            target=target,
        )  # fmt: skip
        return await run.execute()

    optimize = blocking(aoptimize)

    def _check_target(self, target: object, prompt: PromptVariant) -> None:
        """What ``target=`` needs, checked before any call."""
        evaluator = self.config.evaluator
        if target is None:
            if not callable(getattr(evaluator, "evaluate", None)):
                raise ConfigError(
                    f"evaluator {evaluator!r} scores trajectories, not replies: give the "
                    "target that makes them (optimize(..., target=factory))"
                )
            return
        if not callable(target):
            raise ConfigError(
                f"target must be a factory: target(prompt) returns the target that uses the "
                f"prompt, got {target!r}"
            )
        if self.config.demo_sets:
            raise ConfigError(
                f"demo_sets={self.config.demo_sets} adds chat turns that only the optimizer's "
                "own calls send; with target= give demo_sets=0"
            )
        if prompt.system is not None or prompt.demos or prompt.response_format is not None:
            raise ConfigError(
                "with target= the prompt is the text the target is made with: give a str "
                f"(or a PromptVariant with an instruction only), got {prompt.describe()!r}"
            )

    def split_cases(
        self, cases: Sequence[TestCase], validation_cases: Sequence[TestCase] | None = None
    ) -> tuple[list[TestCase], list[TestCase]]:
        """``(selection, held_out)`` as ``optimize`` would use them.

        >>> from tnsai_eval.testing import ScriptedLLM
        >>> cases = [TestCase(f"{i} + 1", str(i + 1)) for i in range(10)]
        >>> selection, held_out = PromptOptimizer(ScriptedLLM()).split_cases(cases)
        >>> len(selection), len(held_out)
        (7, 3)
        """
        checked = check_cases(cases, "cases")
        validation = check_cases(validation_cases, "validation_cases", allow_empty=True)
        if validation_cases is not None or self.config.split is None:
            return checked, validation
        return split_cases(checked, self.config.split, self.config.seed)

    def estimate_calls(
        self,
        prompt: str | PromptVariant,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
    ) -> int:
        """The most calls ``optimize`` can make with these arguments, retries aside.

        Every round is counted in full (racing and an early stop only lower it),
        a case input repeated in ``cases`` once, and round 1's strategies that
        would leave ``prompt`` unchanged not at all. Retries are not foreseen,
        but they too count against ``max_calls``, which caps the estimate.
        """
        c = self.config
        text = prompt.instruction if isinstance(prompt, PromptVariant) else prompt
        checked, validation = self.split_cases(cases, validation_cases)
        n = len({case.input for case in checked})
        examples = [checked[i] for i in reversed(example_order(len(checked), c.seed))]
        first = sum(
            s.apply(text, examples, examples=c.few_shot_examples, labels=c.labels) != text
            for s in c.strategies
        )
        per_round = (1 + n if c.rewrite else 0) + c.demo_sets * n
        total = n + first * n + per_round
        total += (c.max_iterations - 1) * (len(c.strategies) * n + per_round)
        total += 2 * len({case.input for case in validation})
        return total if c.max_calls is None else min(total, c.max_calls)
