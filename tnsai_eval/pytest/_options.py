"""The plugin's command-line options, their ini twins, and how they resolve.

Every option has an ini key of the same name with ``-`` turned into ``_`` and
a ``tnsai_`` prefix where the flag has none (``--llm-record`` <->
``tnsai_llm_record``). A value given on the command line wins over the ini
file, which wins over the environment-derived default.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tnsai_eval.pytest._models import ModelOptions, add_model_options, model_options
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, MAX_CONCURRENCY, RecordMode

if TYPE_CHECKING:
    from tnsai_eval.reports import GateSettings

__all__ = ["DEFAULT_STORE", "PluginOptions", "add_options"]

#: The response store used when neither --llm-store nor tnsai_llm_store is set,
#: relative to pytest's rootdir.
DEFAULT_STORE = "tests/llm-responses"


@dataclass(frozen=True, slots=True)
class _Spec:
    flag: str
    ini: str
    help: str
    metavar: str
    #: A flag without a value on the command line (its ini twin takes true/false).
    boolean: bool = False


_SPECS = (
    _Spec(
        "--llm-base-url",
        "tnsai_llm_base_url",
        "OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1); the API key is read "
        f"from ${ENV_API_KEY} only. Default: ${ENV_BASE_URL}, else the embedded model.",
        "URL",
    ),
    _Spec("--llm-model", "tnsai_llm_model", "model name on that server.", "NAME"),
    _Spec(
        "--llm-record",
        "tnsai_llm_record",
        "how the `llm` fixture uses the response store: off, replay (store only; a miss "
        "fails), record (reuse recorded replies, record new ones), refresh (re-record "
        "everything). Default: record, or replay when the environment has CI=true.",
        "MODE",
    ),
    _Spec(
        "--llm-store",
        "tnsai_llm_store",
        f"response store directory (default: <rootdir>/{DEFAULT_STORE}).",
        "PATH",
    ),
    _Spec("--tnsai-report", "tnsai_report", "write a versioned JSON report here.", "PATH"),
    _Spec(
        "--tnsai-baseline",
        "tnsai_baseline",
        "compare tracked scores with this earlier report; a regression beyond the "
        "tolerance fails the session.",
        "PATH",
    ),
    _Spec(
        "--tnsai-tolerance",
        "tnsai_tolerance",
        "largest allowed absolute drop of a tracked score against the baseline (default 0.05).",
        "FLOAT",
    ),
    _Spec(
        "--tnsai-gate",
        "tnsai_gate",
        "how the baseline gate decides a regression: tolerance (the mean dropped by more "
        "than the tolerance; default) or paired (also the exact sign test on the flipped "
        "cases has p < --tnsai-alpha).",
        "MODE",
    ),
    _Spec(
        "--tnsai-alpha",
        "tnsai_alpha",
        "significance level of the paired gate (default 0.05).",
        "FLOAT",
    ),
    _Spec(
        "--tnsai-gate-latency",
        "tnsai_gate_latency",
        "also gate each test's median latency of live calls against the baseline with this "
        "ratio (0.5: half as slow again regresses); a test either run replayed is skipped "
        "with a note (replayed replies have no latency). Off by default.",
        "RATIO",
    ),
    _Spec(
        "--tnsai-gate-costs",
        "tnsai_gate_costs",
        "also gate each test's tokens, calls and estimated cost (lower is better) with this "
        "relative tolerance (0.2: 20%% more fails), against the baseline and between models.",
        "FRACTION",
    ),
    _Spec(
        "--tnsai-min-common",
        "tnsai_min_common",
        "least share of the baseline's cases a test must have in common with it (run in "
        "both) for its score to be judged; below it the score is inconclusive and the "
        "session fails (default 0.8).",
        "SHARE",
    ),
    _Spec(
        "--tnsai-allow-unrecorded",
        "tnsai_allow_unrecorded",
        "let the baseline gate pass with cases that were not run (unrecorded, or refused "
        "by the call budget); ini: true or false (default false).",
        "",
        boolean=True,
    ),
    _Spec(
        "--llm-max-calls",
        "tnsai_llm_max_calls",
        "stop calling the model once N calls (HTTP attempts, retries included; replies "
        "from the store never count) were made in this session, across xdist workers; "
        "later cases are marked not run (budget). The optimizer's calls draw on it too.",
        "N",
    ),
    _Spec(
        "--llm-concurrency",
        "tnsai_llm_concurrency",
        "model calls in flight at once: the default of evaluate_prompt(concurrency=...) "
        "and, when given, its ceiling (a larger request is capped, with one warning). "
        "Without it evaluate_prompt uses 4 unless a call asks for more, and the client's "
        "connection pool grows to what is asked. At most 1024.",
        "N",
    ),
    _Spec(
        "--tnsai-repeat",
        "tnsai_repeat",
        "run each tracked test N times; scores are reported as mean with a 95%% interval "
        "and the pass rate (default 1).",
        "N",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("tnsai", "tnsai-eval: LLM prompt regression tests")
    for spec in _SPECS:
        takes = (
            {"action": "store_const", "const": "true"}
            if spec.boolean
            else {"metavar": spec.metavar}
        )
        group.addoption(spec.flag, dest=spec.ini, default=None, help=spec.help, **takes)
        # The ini help has no %-formatting; undo the argparse escape.
        parser.addini(spec.ini, help=spec.help.replace("%%", "%"), default=None)
    add_model_options(parser)


@dataclass(frozen=True, slots=True)
class PluginOptions:
    """The resolved settings of one pytest run."""

    base_url: str | None = None
    model: str | None = None
    record_mode: str = "record"
    record_mode_source: str = "default"
    store: Path = Path(DEFAULT_STORE)
    report: Path | None = None
    baseline: Path | None = None
    repeat: int = 1
    rootdir: Path | None = None
    max_calls: int | None = None
    concurrency: int | None = None
    #: --tnsai-model and its companions (see ``_models``).
    named: ModelOptions = field(default_factory=ModelOptions)
    #: The gate settings given to this run: name -> (value, its flag or ini key).
    gate_given: Mapping[str, tuple[Any, str]] = field(default_factory=dict)

    @property
    def gate_settings(self) -> GateSettings:
        """The gate settings of this run (``GateSettings``' defaults for the rest), each
        with where it came from."""
        from tnsai_eval.reports import GateSettings

        return GateSettings(
            **{name: value for name, (value, _) in self.gate_given.items()},
            sources={name: source for name, (_, source) in self.gate_given.items()},
        )

    @classmethod
    def from_config(cls, config: pytest.Config) -> PluginOptions:
        """Resolve CLI > ini > default; a bad value is a ``pytest.UsageError`` naming it."""
        values: dict[str, tuple[str, str]] = {}
        for spec in _SPECS:
            cli = config.getoption(spec.ini)
            if cli is not None:
                values[spec.ini] = (str(cli), spec.flag)
                continue
            ini = config.getini(spec.ini)
            if ini not in (None, "", []):
                values[spec.ini] = (str(ini).strip(), f"ini {spec.ini}")

        def get(key: str) -> str | None:
            found = values.get(key)
            return None if found is None else found[0]

        def path(key: str) -> Path | None:
            # Like pytest's own options: a path on the command line is relative
            # to where pytest was run, one in the ini file to the rootdir.
            found = values.get(key)
            if found is None:
                return None
            if not found[0].strip():
                # `--tnsai-baseline=` (an unset CI variable) must not quietly turn the gate off.
                raise pytest.UsageError(f"{found[1]}: expected a path, got an empty value")
            base = config.invocation_params.dir if found[1].startswith("--") else config.rootpath
            return base / found[0]

        mode, source = _record_mode(values.get("tnsai_llm_record"))
        base_url = get("tnsai_llm_base_url") or None
        model = get("tnsai_llm_model") or None
        if base_url is not None and model is None and not os.environ.get(ENV_MODEL):
            origin = values["tnsai_llm_base_url"][1]
            raise pytest.UsageError(
                f"{origin} needs a model name: add --llm-model NAME (or ini tnsai_llm_model, "
                f"or ${ENV_MODEL})"
            )
        if model is not None and base_url is None and not os.environ.get(ENV_BASE_URL):
            origin = values["tnsai_llm_model"][1]
            raise pytest.UsageError(
                f"{origin} names a model but no server: add --llm-base-url URL (or ini "
                f"tnsai_llm_base_url, or ${ENV_BASE_URL})"
            )
        max_calls = values.get("tnsai_llm_max_calls")
        report = path("tnsai_report")
        if report is not None:
            _check_writable(report, values["tnsai_report"][1])
        gate_given = {
            name: (read(given), given[1])
            for name, read in _GATE_READERS.items()
            if (given := values.get(f"tnsai_{name}")) is not None
        }
        concurrency = values.get("tnsai_llm_concurrency")
        concurrency_value: int | None = None
        if concurrency is not None:
            concurrency_value = int(_number(concurrency, 1, int, minimum=1))
            # Each 4 slots build an httpx client: a million would build 250,000.
            if concurrency_value > MAX_CONCURRENCY:
                raise pytest.UsageError(
                    f"{concurrency[1]}: expected at most {MAX_CONCURRENCY} calls in flight "
                    f"(MAX_CONCURRENCY), got {concurrency[0]!r}"
                )
        return cls(
            base_url=base_url,
            model=model,
            record_mode=mode,
            record_mode_source=source,
            store=path("tnsai_llm_store") or config.rootpath / DEFAULT_STORE,
            report=report,
            baseline=path("tnsai_baseline"),
            repeat=int(_number(values.get("tnsai_repeat"), 1, int, minimum=1)),
            rootdir=config.rootpath,
            max_calls=None if max_calls is None else int(_number(max_calls, 0, int, minimum=0)),
            concurrency=concurrency_value,
            named=model_options(config, mode),
            gate_given={name: given for name, given in gate_given.items() if given[0] is not None},
        )

    def describe(self) -> dict[str, object]:
        """The configuration written into the report."""
        from tnsai_eval._util.secrets import redact_url

        gate = self.gate_settings
        return {
            # Credentials in a URL (user:pass@, ?api_key=) never reach a report.
            "base_url": redact_url(self.base_url) if self.base_url else None,
            "model": self.model,
            "record_mode": self.record_mode,
            "record_mode_source": self.record_mode_source,
            "store": self._shown(self.store),
            "repeat": self.repeat,
            "max_calls": self.max_calls,
            "concurrency": self.concurrency,
            "baseline": None if self.baseline is None else self._shown(self.baseline),
            **self.named.describe(),
            # With where each came from: a PR gate names a setting when it changed.
            **gate.values(),
            "gate_sources": gate.to_dict()["sources"],
        }

    def _shown(self, path: Path) -> str:
        # Relative to the rootdir when inside it: a committed report should not
        # carry one machine's absolute paths.
        if self.rootdir is not None and path.is_relative_to(self.rootdir):
            return path.relative_to(self.rootdir).as_posix()
        return str(path)


# The largest count an option takes (--tnsai-repeat, --llm-max-calls).
_MAX_COUNT = 2**63 - 1


def _flag(given: tuple[str, str]) -> bool:
    value, origin = given
    word = value.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise pytest.UsageError(f"{origin}: expected true or false, got {value!r}")


def _record_mode(given: tuple[str, str] | None) -> tuple[str, str]:
    if given is None:
        default, source = RecordMode.default()
        return default.value, source
    return _choice(given, "record mode", tuple(RecordMode)), given[1]


def _choice(given: tuple[str, str], what: str, choices: tuple[str, ...]) -> str:
    word = given[0].strip().lower()
    if word not in choices:
        raise pytest.UsageError(
            f"{given[1]}: {what} {given[0]!r} is not one of {', '.join(choices)}"
        )
    return word


def _number(
    given: tuple[str, str] | None,
    default: float,
    kind: type[int] | type[float],
    *,
    minimum: float = 0,
) -> float:
    if given is None:
        return default
    value, origin = given
    try:
        number = kind(value)
    except ValueError:
        raise pytest.UsageError(f"{origin}: {value!r} is not a valid {kind.__name__}") from None
    # NaN would compare False with everything and quietly disable the gate; an
    # int past any counter (10**400) would overflow the checks below.
    if isinstance(number, int) and number > _MAX_COUNT:
        raise pytest.UsageError(
            f"{origin}: expected a whole number up to {_MAX_COUNT}, got {value!r}"
        )
    if number < minimum or not math.isfinite(number):  # in this order: -10**400 overflows isfinite
        raise pytest.UsageError(f"{origin}: expected a finite number >= {minimum:g}, got {value!r}")
    return number


def _gate_mode(given: tuple[str, str]) -> str:
    # GateMode's values: the report code is not loaded at start-up.
    return _choice(given, "gate", ("tolerance", "paired"))


def _ratio(given: tuple[str, str]) -> float:
    return _number(given, 0.0, float)


def _alpha(given: tuple[str, str]) -> float:
    alpha = _ratio(given)
    if not 0 < alpha < 1:
        raise pytest.UsageError(f"{given[1]}: expected a number between 0 and 1, got {given[0]!r}")
    return alpha


def _share(given: tuple[str, str]) -> float:
    share = _ratio(given)
    if share > 1:
        raise pytest.UsageError(f"{given[1]}: expected a share between 0 and 1, got {given[0]!r}")
    return share


def _costs(given: tuple[str, str]) -> float | None:
    if given[0].strip():
        return _ratio(given)
    if given[1].startswith("--"):
        # `--tnsai-gate-costs=` (an unset CI variable) must not quietly turn the gate off.
        raise pytest.UsageError(
            f"{given[1]}: expected a fraction such as 0.2, got an empty value (leave the "
            "option out to show costs without gating them)"
        )
    return None  # an empty ini value is unset, as for every tnsai ini key


#: How each gate setting given as a flag or an ini key (``tnsai_`` + its name) is read.
_GATE_READERS: dict[str, Callable[[tuple[str, str]], object]] = {
    "gate": _gate_mode,
    "tolerance": _ratio,
    "alpha": _alpha,
    "min_common": _share,
    "allow_unrecorded": _flag,
    "gate_costs": _costs,
    "gate_latency": _ratio,
}


def _check_writable(path: Path, origin: str) -> None:
    """A usage error now, rather than a crash after every test has run, when the
    report could not be written at ``path``."""
    if path.is_dir():
        raise pytest.UsageError(f"{origin}: {str(path)!r} is a directory, not a file")
    folder = path.parent
    # The report's folders are made when it is written: the nearest one that
    # exists must be a writable directory.
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise pytest.UsageError(
            f"{origin}: cannot write {str(path)!r}: {str(folder)!r} is not a directory"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise pytest.UsageError(
            f"{origin}: cannot write {str(path)!r}: {str(folder)!r} is read-only"
        )
