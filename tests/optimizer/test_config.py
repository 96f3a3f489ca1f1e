"""``OptimizerConfig``: the optimizer's settings, frozen and checked once."""

from __future__ import annotations

import dataclasses

import pytest

from tnsai_eval.cli._main import build_parser
from tnsai_eval.errors import ConfigError
from tnsai_eval.optimizer import DEFAULT_CONFIG, OptimizerConfig, PromptOptimizer, PromptStrategy
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM


def test_options_become_a_frozen_normalized_config() -> None:
    params = {"max_tokens": 8}
    optimizer = PromptOptimizer(
        ScriptedLLM(default="4"), candidate_strategies=["concise"], call_params=params
    )
    config = optimizer.config
    assert config.candidate_strategies == (PromptStrategy.CONCISE,)
    params["max_tokens"] = 999  # the caller's dict is copied, not kept
    assert config.call_params == {"max_tokens": 8}
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.search = "racing"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.call_params["max_tokens"] = 1  # type: ignore[index]


def test_with_options_leaves_the_original_alone() -> None:
    optimizer = PromptOptimizer(ScriptedLLM(default="4"), max_calls=10)
    racing = optimizer.with_options(search="racing", max_calls=None)
    assert (racing.config.search, racing.config.max_calls) == ("racing", None)
    assert (optimizer.config.search, optimizer.config.max_calls) == ("exhaustive", 10)
    assert racing.llm is optimizer.llm
    with pytest.raises(ConfigError, match="search must be one of exhaustive, racing, halving"):
        optimizer.with_options(search="random")


def test_a_config_can_be_given_whole() -> None:
    config = OptimizerConfig(candidate_strategies=["answer_only"], rewrite=False)
    optimizer = PromptOptimizer(ScriptedLLM(default="4"), config=config)
    assert optimizer.config is config
    assert optimizer.optimize("Add.", [TestCase("2 + 2", "4")]).score == 1.0
    with pytest.raises(ConfigError, match="either config= or keyword options"):
        PromptOptimizer(ScriptedLLM(), config=config, seed=1)


def test_unknown_options_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="max_iteration"):
        PromptOptimizer(ScriptedLLM(), max_iteration=3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_iterations": 0}, "max_iterations must be at least 1, got 0"),
        ({"target_score": 2}, "target_score must be a number in [0, 1], got 2"),
        ({"target_score": True}, "target_score must be a number in [0, 1], got True"),
        ({"target_score": "0.9"}, "target_score must be a number in [0, 1], got '0.9'"),
        ({"target_score": float("nan")}, "target_score must be a number in [0, 1], got nan"),
        ({"concurrency": 0}, "concurrency must be an int >= 1, got 0"),
        ({"max_seconds": 0}, "max_seconds must be > 0 or None, got 0"),
        ({"template": "{prompt}"}, "template must contain {prompt} and {input}"),
        ({"candidate_strategies": [], "rewrite": False}, "nothing to try"),
        ({"candidate_strategies": ["nope"]}, "nope"),
    ],
)
def test_bad_settings_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        OptimizerConfig(**options)  # type: ignore[arg-type]
    assert message in str(info.value)


# A bad value for every field, and how the error shows it (its repr, or the type's
# name where a repr says little). A field added without a row here fails the test.
_BAD_VALUES: dict[str, tuple[object, str]] = {
    "max_iterations": (0, "0"),
    "target_score": (1.5, "1.5"),
    "candidate_strategies": ("concise", "'concise'"),
    "evaluator": (object(), "object"),
    "search": ("greedy", "'greedy'"),
    "max_calls": (-1, "-1"),
    "max_tokens": (-5, "-5"),
    "max_seconds": (0, "0"),
    "concurrency": (2.5, "2.5"),
    "seed": ("s", "'s'"),
    "progress": (3, "int"),
    "rewrite": ("yes", "'yes'"),
    "few_shot_examples": (-1, "-1"),
    "template": ("{prompt}", "'{prompt}'"),
    "alpha": (1.0, "1.0"),
    "call_params": ([("temperature", 0)], "[('temperature', 0)]"),
    "clock": (None, "NoneType"),
    "split": (1.0, "1.0"),
    "rewrite_llm": ("gpt", "str"),
    "racing_bound": ("z", "'z'"),
    "demo_sets": (-1, "-1"),
    "rewrite_max_tokens": (0, "0"),
    "labels": (["", "a"], "['', 'a']"),
    "budget": (5, "int"),
}


def test_every_field_has_a_bad_value_below() -> None:
    assert set(_BAD_VALUES) == {f.name for f in dataclasses.fields(OptimizerConfig)}


@pytest.mark.parametrize(("field", "bad", "shown"), [(k, *v) for k, v in _BAD_VALUES.items()])
def test_a_bad_value_of_each_field_is_named(field: str, bad: object, shown: str) -> None:
    with pytest.raises(ConfigError) as info:
        OptimizerConfig(**{field: bad})  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith(f"{field} must ")
    assert message.endswith(f"got {shown}")


def test_the_defaults_pass_their_own_checks_and_are_the_clis() -> None:
    assert OptimizerConfig(evaluator=DEFAULT_CONFIG.evaluator) == DEFAULT_CONFIG
    args = build_parser(["optimize"]).parse_args(["optimize", "capitals"])
    assert args.rounds == DEFAULT_CONFIG.max_iterations
    assert args.target_score == DEFAULT_CONFIG.target_score
    assert args.search == DEFAULT_CONFIG.search
    assert args.strategies.split(",") == [s.value for s in DEFAULT_CONFIG.strategies]
    assert args.split == DEFAULT_CONFIG.split
    assert args.demo_sets == DEFAULT_CONFIG.demo_sets
    assert args.racing_bound == DEFAULT_CONFIG.racing_bound
    assert args.concurrency == DEFAULT_CONFIG.concurrency
    assert args.seed == DEFAULT_CONFIG.seed
    assert args.alpha == DEFAULT_CONFIG.alpha
