"""Named models in pytest: ``--tnsai-model NAME`` (repeatable), ``--tnsai-compare-models A B``.

The names come from the core's table (``tnsai_eval.llm.ModelTable``: the
``[tool.tnsai-eval.models]`` table of the rootdir's ``pyproject.toml``, or the
file named by ``--tnsai-models-file``), so they mean here what they mean to
the CLI. With two or more names, every test that scores through the plugin
(``evaluate_prompt``, ``refine`` and so ``@refine_until``) is parametrized by
the ``tnsai_model`` fixture and runs once per model, the model's name in its
test id (``test_capitals[small]``); with one name (or none) test ids stay as
they were, so existing baselines keep matching.

``--llm-model`` keeps its meaning (a model name on the configured server);
named models are a separate, explicit choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tnsai_eval._util.files import shown_path

if TYPE_CHECKING:
    from tnsai_eval.llm import ModelTable, NamedModel

__all__ = ["ModelOptions", "add_model_options", "model_options"]

_HELP_MODEL = (
    "run each evaluate_prompt and refine_until test against this named model "
    "([tool.tnsai-eval.models.NAME] in pyproject.toml; `embedded` is built in). Repeat it "
    "for several models: the model's name then joins the test id."
)
_HELP_FILE = "a TOML file with the named models ([models.NAME] tables) instead of pyproject.toml."
_HELP_COMPARE = (
    "the gate's paired verdict of model B against model A on the same cases (both given "
    "with --tnsai-model): flipped cases, sign test, tokens and cost; a regression fails "
    "the session."
)


def add_model_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("tnsai")
    group.addoption(
        "--tnsai-model", dest="tnsai_models", action="append", default=None, metavar="NAME",
        help=_HELP_MODEL,
    )  # fmt: skip
    parser.addini("tnsai_models", help=_HELP_MODEL, type="args", default=[])
    group.addoption(
        "--tnsai-models-file", dest="tnsai_models_file", default=None, metavar="PATH",
        help=_HELP_FILE,
    )  # fmt: skip
    parser.addini("tnsai_models_file", help=_HELP_FILE, default=None)
    group.addoption(
        "--tnsai-compare-models", dest="tnsai_compare_models", nargs=2, default=None,
        metavar=("A", "B"), help=_HELP_COMPARE,
    )  # fmt: skip
    parser.addini("tnsai_compare_models", help=_HELP_COMPARE, type="args", default=[])


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """The named models of one run, resolved and checked."""

    models: tuple[NamedModel, ...] = ()
    compare: tuple[str, str] | None = None
    source: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.models)

    def get(self, name: str) -> NamedModel:
        return next(m for m in self.models if m.name == name)

    def describe(self) -> dict[str, object]:
        """What the report's configuration records (names, endpoints, prices; never a key)."""
        if not self.models:
            return {}
        return {
            "models": list(self.names),
            "model_table": {m.name: m.describe() for m in self.models},
            "models_source": self.source,
            "compare_models": None if self.compare is None else list(self.compare),
        }


def model_options(config: pytest.Config, record_mode: str) -> ModelOptions:
    """The run's named models (CLI > ini); a bad name or unset key is a ``UsageError``.

    A key variable is checked only where the run may call the model: a
    replaying run (CI) reads recordings and needs no key.
    """
    names, origin = _given(config)
    compare, compare_origin = _compare(config)
    if not names:
        if compare is not None:
            raise pytest.UsageError(
                f"{compare_origin} {' '.join(compare)}: name the models to run with "
                "--tnsai-model (once for each)"
            )
        return ModelOptions()
    from tnsai_eval.errors import ConfigError

    try:
        table = _table(config)
        models = table.select(names)
        if record_mode != "replay":
            for model in models:
                model.api_key()
    except ConfigError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None
    if compare is not None:
        missing = [n for n in compare if n not in names]
        if missing:
            raise pytest.UsageError(
                f"{compare_origin}: {', '.join(map(repr, missing))} not among the models run "
                f"({', '.join(names)}); add --tnsai-model {missing[0]}"
            )
        if compare[0] == compare[1]:
            raise pytest.UsageError(f"{compare_origin}: both names are {compare[0]!r}")
    return ModelOptions(models, compare, _shown_source(table.source, config.rootpath))


def _shown_source(source: str, rootdir: Path) -> str:
    """The table's source as the report keeps it: its file relative to the rootdir
    (a committed report names no machine path), the table's name kept.

    >>> _shown_source("/repo/pyproject.toml [tool.tnsai-eval.models]", Path("/repo"))
    'pyproject.toml [tool.tnsai-eval.models]'
    >>> _shown_source("<built in>", Path("/repo"))
    '<built in>'
    """
    file, space, table = source.partition(" [")
    if not Path(file).is_absolute():
        return source
    return shown_path(Path(file), rootdir) + space + table


def _given(config: pytest.Config) -> tuple[list[str], str]:
    cli = config.getoption("tnsai_models")
    if cli:
        return [str(n).strip() for n in cli], "--tnsai-model"
    ini = config.getini("tnsai_models")
    return [str(n).strip() for n in ini or ()], "ini tnsai_models"


def _compare(config: pytest.Config) -> tuple[tuple[str, str] | None, str]:
    cli = config.getoption("tnsai_compare_models")
    if cli:
        return (str(cli[0]), str(cli[1])), "--tnsai-compare-models"
    ini = [str(n) for n in config.getini("tnsai_compare_models") or ()]
    if not ini:
        return None, ""
    if len(ini) != 2:
        raise pytest.UsageError(
            f"ini tnsai_compare_models: expected two model names, got {' '.join(ini)!r}"
        )
    return (ini[0], ini[1]), "ini tnsai_compare_models"


def _table(config: pytest.Config) -> ModelTable:
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.llm import ModelTable

    cli = config.getoption("tnsai_models_file")
    if cli is not None:
        if not str(cli).strip():  # `--tnsai-models-file=` must not fall back to another table
            raise ConfigError("--tnsai-models-file: expected a path, got an empty value")
        return ModelTable.load(config.invocation_params.dir / str(cli))
    ini = config.getini("tnsai_models_file")
    if ini:
        return ModelTable.load(config.rootpath / str(ini))
    return ModelTable.load(start=Path(config.rootpath))
