"""Where tnsai-eval's settings come from: the ``TNSAI_LLM_*`` variables, the record modes,
and the ``[tool.tnsai-eval]`` table of ``pyproject.toml``.

Written once here and read by ``default_llm``, ``OpenAIClient``, ``CachedLLM``,
the CLI and the pytest plugin. The module imports only the standard library
(and the exception tree), so the plugin can read it while pytest starts without
loading a client.

Each model setting comes from its explicit value (an argument, a command-line
option), else from the environment; an empty variable counts as unset.

>>> resolve_model(environ={ENV_BASE_URL: "http://127.0.0.1:8080/v1"}, model="smol")  # no key shown
ModelSettings(base_url='http://127.0.0.1:8080/v1', model='smol')
>>> resolve_model(environ={}).embedded
True
>>> RecordMode.parse("Replay")
<RecordMode.REPLAY: 'replay'>
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from tnsai_eval._util.enums import ParsedEnum
from tnsai_eval.errors import ConfigError

__all__ = [
    "ACCEPT_LABEL",
    "DEFAULT_ALPHA",
    "DEFAULT_GATE",
    "DEFAULT_MIN_COMMON",
    "DEFAULT_TOLERANCE",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "MAX_CONCURRENCY",
    "PYTEST_CONFIG_FILES",
    "ModelSettings",
    "ProjectSettings",
    "RecordMode",
    "project_settings",
    "pytest_ini_options",
    "read_toml",
    "resolve_model",
]

#: The OpenAI-compatible base URL (``http://127.0.0.1:8080/v1``).
ENV_BASE_URL = "TNSAI_LLM_BASE_URL"
#: The model name on that server.
ENV_MODEL = "TNSAI_LLM_MODEL"
#: The API key; only ever read from the environment by the library itself.
ENV_API_KEY = "TNSAI_LLM_API_KEY"
#: The most model calls one client keeps in flight (``OpenAIClient(max_concurrency=)``,
#: ``--llm-concurrency``, ``evaluate_prompt(concurrency=)``). Each 4 slots are one
#: pooled httpx client with its own connections; far past what a server serves at
#: once, a larger bound only builds clients and threads (a million built 250,000).
MAX_CONCURRENCY = 1024

# The baseline gate's settings when nothing sets them: the one place their
# defaults live (``reports.GateSettings``, the plugin's options, the CLI).
#: How a regression is decided: ``tolerance`` or ``paired``.
DEFAULT_GATE = "tolerance"
#: The largest allowed absolute drop of a gated score.
DEFAULT_TOLERANCE = 0.05
#: The paired gate's significance level.
DEFAULT_ALPHA = 0.05
#: The least share of the baseline's cases a score needs in common with it.
DEFAULT_MIN_COMMON = 0.8

#: The pull-request label that accepts what a PR gives up (a new baseline,
#: removed tests, new gate settings).
ACCEPT_LABEL = "tnsai-accept-baseline"

#: pytest's configuration files, in the order pytest looks for them in a folder.
PYTEST_CONFIG_FILES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)


class RecordMode(ParsedEnum, StrEnum):
    """How ``CachedLLM`` (and the plugin's ``--llm-record``) uses a response store."""

    OFF = "off"
    """Always call the model; the store is neither read nor written."""
    REPLAY = "replay"
    """Only the store; a request never recorded raises ``ReplayMissError``."""
    RECORD = "record"
    """Reply from the store when recorded, else call the model and record."""
    REFRESH = "refresh"
    """Always call the model and overwrite the recording."""

    @classmethod
    def default(cls) -> tuple[RecordMode, str]:
        """The mode when none is given, and why: ``replay`` under ``CI=true``, else ``record``.

        CI replays what developers recorded: a run there must neither call a
        model nor silently grow the store (the plugin and ``tnsai-eval eval``).
        """
        if os.environ.get("CI", "").strip().lower() == "true":
            return cls.REPLAY, "CI=true"
        return cls.RECORD, "default"


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Which model to talk to: a server (``base_url`` and ``model``) or the embedded one."""

    base_url: str | None
    model: str | None
    api_key: str | None = field(default=None, repr=False)

    @property
    def embedded(self) -> bool:
        """Neither a base URL nor a model: the embedded default model."""
        return self.base_url is None and self.model is None


def resolve_model(
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ModelSettings:
    """The model settings from explicit values, else ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    return ModelSettings(
        base_url=base_url or env.get(ENV_BASE_URL) or None,
        model=model or env.get(ENV_MODEL) or None,
        api_key=api_key or env.get(ENV_API_KEY) or None,
    )


@dataclass(frozen=True, slots=True)
class ProjectSettings:
    """The ``[tool.tnsai-eval]`` table of a project's ``pyproject.toml`` (empty without one)."""

    table: Mapping[str, Any] = field(default_factory=dict)
    #: The ``pyproject.toml`` it was read from (None: no file was found).
    file: Path | None = None


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A TOML file as a dict; a missing or malformed file is a ``ConfigError`` naming it."""
    shown = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"TOML file {shown!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"TOML file {shown!r} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"TOML file {shown!r} is not valid TOML: {exc}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively: a file
        # nested thousands deep exhausts the stack before it is found invalid.
        raise ConfigError(f"TOML file {shown!r} is nested too deeply to read") from None


def project_settings(start: str | os.PathLike[str] | None = None) -> ProjectSettings:
    """The ``[tool.tnsai-eval]`` table of the nearest ``pyproject.toml`` at or above ``start``.

    ``start`` defaults to the working directory; pytest passes its rootdir.
    The search stops at the first ``pyproject.toml`` found, as pip and ruff do.
    """
    here = Path.cwd() if start is None else Path(start)
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            tool = read_toml(candidate).get("tool", {})
            table = tool.get("tnsai-eval", {}) if isinstance(tool, dict) else {}
            if not isinstance(table, dict):
                raise ConfigError(
                    f"{str(candidate)!r}: [tool.tnsai-eval] must be a table, got "
                    f"{type(table).__name__}"
                )
            return ProjectSettings(table, candidate)
    return ProjectSettings()


def pytest_ini_options(name: str, text: str) -> dict[str, Any] | None:
    """The ini options in ``text``, a pytest configuration file called ``name``.

    ``None`` when the file is not pytest's (a ``pyproject.toml`` without
    ``[tool.pytest.ini_options]``, a ``setup.cfg`` without ``[tool:pytest]``),
    as pytest decides; ``pytest.ini`` is pytest's even when empty. A file
    that cannot be parsed is a ``ConfigError`` naming it.

    >>> pytest_ini_options("pytest.ini", "[pytest]\\ntnsai_tolerance = 0.1\\n")
    {'tnsai_tolerance': '0.1'}
    >>> pytest_ini_options("pyproject.toml", "[project]\\nname = 'x'\\n") is None
    True
    """
    import configparser

    base = Path(name).name
    if base.endswith(".toml"):
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{name!r} is not valid TOML: {exc}") from None
        if base == "pyproject.toml":
            tool = data.get("tool")
            pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
            found = pytest_table.get("ini_options") if isinstance(pytest_table, dict) else None
        else:
            found = data.get("pytest", {})
        return dict(found) if isinstance(found, dict) else None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=name)
    except configparser.Error as exc:
        raise ConfigError(f"{name!r} cannot be read as an ini file: {exc}") from None
    section = "tool:pytest" if base == "setup.cfg" else "pytest"
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if base in ("pytest.ini", ".pytest.ini") else None
