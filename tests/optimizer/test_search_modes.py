"""The search modes: one object each, and one registry read by the config, the CLI,
the dashboard and the docs."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tnsai_eval.cli import main as cli_main
from tnsai_eval.cli._main import build_parser
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import Engine, Variant
from tnsai_eval.optimizer import (
    SEARCHES,
    OptimizerConfig,
    PromptOptimizer,
    Search,
    SearchRegistry,
    TestCase,
)
from tnsai_eval.optimizer._racing import RaceSummary, RacingBound
from tnsai_eval.testing import ScriptedLLM
from tnsai_eval.widgets import OptimizerDashboard

ROOT = Path(__file__).resolve().parents[2]


class Backwards(Search):
    """Exhaustive search that scores the cases last to first, and counts its rounds."""

    name = "backwards"
    summary = "score every variant on every case, last case first"

    def __init__(self) -> None:
        self.rounds: list[tuple[int, ...]] = []

    async def score_round(
        self,
        engine: Engine,
        challengers: Sequence[Variant],
        incumbent: Variant,
        order: Sequence[int],
        cases: Sequence[TestCase],
        *,
        bound: RacingBound,
        incumbent_name: str,
    ) -> RaceSummary | None:
        self.rounds.append(tuple(v.id for v in challengers))
        for variant in challengers:
            await engine.score(variant, range(len(cases) - 1, -1, -1), cases)
        return None


@pytest.fixture
def backwards() -> Iterator[Backwards]:
    mode = SEARCHES.register(Backwards())
    assert isinstance(mode, Backwards)
    try:
        yield mode
    finally:
        SEARCHES.unregister(mode.name)


CASES = [TestCase(f"{n} + 1", str(n + 1)) for n in range(6)]


def _llm() -> ScriptedLLM:
    # Right only when told to reply with the answer alone (ANSWER_ONLY).
    return ScriptedLLM(
        rules=[(r"only the answer(?s:.*)\b(\d+) \+ 1$", lambda m: str(int(m.group(1)) + 1))],
        default="no idea",
    )


def test_the_shipped_modes_in_the_order_users_see_them() -> None:
    assert SEARCHES.names() == ("exhaustive", "racing", "halving")
    assert [type(mode).__name__ for mode in SEARCHES] == ["Exhaustive", "Racing", "Halving"]
    assert all(mode.summary for mode in SEARCHES)


def test_a_registry_refuses_a_taken_name_and_what_is_not_a_mode() -> None:
    registry = SearchRegistry(Backwards())
    with pytest.raises(ConfigError, match="search mode 'backwards' is already registered"):
        registry.register(Backwards())
    with pytest.raises(ConfigError, match="a search mode must be a Search, got str"):
        registry.register("racing")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="search must be one of backwards, got 'racing'"):
        registry.get("racing")

    class Nameless(Backwards):
        name = "two words"

    with pytest.raises(ConfigError, match="a search mode's name must be a word, got 'two words'"):
        registry.register(Nameless())


def test_an_unregistered_mode_is_refused_everywhere() -> None:
    with pytest.raises(ConfigError, match="search must be one of exhaustive, racing, halving"):
        OptimizerConfig(search="backwards")
    with pytest.raises(SystemExit):
        build_parser(["optimize"]).parse_args(["optimize", "capitals", "--search", "backwards"])


def test_a_registered_mode_is_accepted_by_the_config_and_runs_the_search(
    backwards: Backwards,
) -> None:
    config = OptimizerConfig(search="backwards", candidate_strategies=["answer_only"])
    assert config.search == "backwards"
    optimizer = PromptOptimizer(
        _llm(), candidate_strategies=["answer_only"], rewrite=False, split=None, seed=0
    )
    exhaustive = optimizer.optimize("Add.", CASES)
    mine = optimizer.with_options(search="backwards").optimize("Add.", CASES)
    # The run handed round 1's one challenger to the registered object.
    assert backwards.rounds == [(1,)]
    assert (mine.best_prompt, mine.score, mine.calls) == (
        exhaustive.best_prompt,
        exhaustive.score,
        exhaustive.calls,
    )
    assert mine.score == 1.0


def test_a_registered_mode_is_a_cli_choice_with_its_summary(
    backwards: Backwards, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser(["optimize"]).parse_args(["optimize", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "{exhaustive,racing,halving,backwards}" in help_text
    assert f"backwards: {backwards.summary}" in help_text
    code = cli_main(
        [
            "optimize", "capitals", "--prompt", "Capital?", "--strategies", "concise",
            "--rounds", "1", "--search", "backwards", "--no-rewrite", "--split", "0",
            "--no-progress", "--out", str(tmp_path),
        ],
        llm=ScriptedLLM(default="Paris"),
    )  # fmt: skip
    assert code == 0
    assert "backwards search" in capsys.readouterr().out
    assert len(backwards.rounds) == 1


def test_a_registered_mode_is_a_dashboard_button(backwards: Backwards) -> None:
    dashboard = OptimizerDashboard(PromptOptimizer(_llm(), search="backwards"), "Add.", CASES)
    assert dashboard.search.options == ("exhaustive", "racing", "halving", "backwards")
    assert dashboard.search.value == "backwards"
    assert dashboard.search.tooltips[-1] == backwards.summary


def test_the_architecture_docs_list_the_registry() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The search: from `optimize` to the best prompt", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", section, flags=re.MULTILINE)
    assert rows == [(mode.name, mode.summary) for mode in SEARCHES]
