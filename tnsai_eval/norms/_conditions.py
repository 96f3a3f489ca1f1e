"""CEL conditions: compile once, evaluate safely against a state mapping.

The evaluator runs the Common Expression Language through the
``common-expression-language`` package (import name ``cel``, a Rust
implementation). It was chosen over ``cel-python`` by measurement: about 200
times faster on a cached condition (``bench/cel.py``, figures in
``bench/README.md``). CEL cannot loop without bound, call Python or touch the
file system, and Python's ``eval`` is never used.

CEL always terminates, but the binding has no cost or time limit and its
comprehensions are quadratic (``map`` over 10,000 items takes seconds,
nested ones hours, holding the GIL). So the work a condition can cause is
bounded *before* it runs, by caps that each raise a ``ConditionError`` naming
the cap: at most ``max_comprehension_depth`` comprehensions (``all``,
``exists``, ``exists_one``, ``map``, ``filter``) nested in one another and
``max_comprehensions`` in one condition (both checked at parse time), at most
``max_literal_items`` items in one list or map literal (parse time), at most
``max_items`` list items and map entries and ``max_text_chars`` characters of
strings and bytes in all the state values one evaluation reads. (``map`` and
``filter`` copy their growing result per item, so their cost grows with the
square of the items times the size of each result element: the caps bound
all three.) ``bench/cel_caps.py`` prints the slowest condition found
under the default caps.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tnsai_eval.errors import ConditionError, ConfigError

__all__ = ["ConditionEvaluator"]

# CEL's int is a signed 64-bit integer; a larger Python int would be silently
# turned into a float (or a uint, which does not compare with int literals).
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# How deep a state value may nest (lists in maps in lists...); it also stops
# a self-referencing list from recursing forever.
_MAX_STATE_DEPTH = 64
# Messages quote the condition; a 4 KiB condition would drown the problem.
_QUOTE_LIMIT = 200
_OPENERS = "([{"
_CLOSERS = ")]}"
_UNDEFINED_NAME = re.compile(r"[Uu]ndefined variable[^']*'([^']+)'")
# CEL's comprehension macros, written as methods: ``list.map(x, ...)``.
_COMPREHENSION = re.compile(r"\.\s*(all|exists_one|exists|map|filter)\s*$")


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a parse-time scan of a condition found (string literals excluded)."""

    bracket_depth: int  # deepest nesting of (), [] and {}
    comprehension_depth: int  # deepest nesting of comprehension macros
    comprehensions: int  # how many comprehension macros
    literal_items: int  # the most items in one list or map literal


def _blank_strings(condition: str) -> tuple[str, bool]:
    """``condition`` with every string literal's contents replaced by spaces, and
    whether every string is terminated (if not, the text ends where the
    unterminated one starts: the parser reports it).
    """
    out: list[str] = []
    i, n = 0, len(condition)
    while i < n:
        char = condition[i]
        if char in "'\"":
            quote = condition[i : i + 3] if condition[i : i + 3] == char * 3 else char
            start = i
            i += len(quote)
            while i < n and not condition.startswith(quote, i):
                i += 2 if condition[i] == "\\" else 1
            if i >= n:
                return "".join(out), False
            i += len(quote)
            out.append('""' + " " * (i - start - 2))
            continue
        out.append(char)
        i += 1
    return "".join(out), True


def _shape(condition: str) -> _Shape:
    """Scan ``condition`` once, in linear time, for the parse-time caps.

    Counted before parsing so that a pathologically nested condition is refused
    in linear time with a clear message, whatever the parser would do with it.
    """
    text, terminated = _blank_strings(condition)
    # One entry per open bracket: its kind, and the items seen so far (literals).
    stack: list[list[Any]] = []
    deepest = comp_deepest = comps = items = 0
    comp_open = 0
    for index, char in enumerate(text):
        if char in _OPENERS:
            kind = char
            if char == "(" and _COMPREHENSION.search(text, max(0, index - 24), index):
                kind = "C"
                comps += 1
                comp_open += 1
                comp_deepest = max(comp_deepest, comp_open)
            # A literal with content counts one item; each comma one more.
            stack.append([kind, 0, False])
            deepest = max(deepest, len(stack))
        elif char in _CLOSERS:
            if stack:
                kind, commas, filled = stack.pop()
                if kind == "C":
                    comp_open -= 1
                elif kind in "[{" and filled:
                    items = max(items, commas + 1)
                if stack:
                    stack[-1][2] = True
        elif stack and not char.isspace():
            top = stack[-1]
            top[2] = True
            if char == ",":
                top[1] += 1
    if not terminated:  # only the brackets before the unterminated string count
        return _Shape(deepest, 0, 0, 0)
    return _Shape(deepest, comp_deepest, comps, items)


def _clip(text: str) -> str:
    if len(text) <= _QUOTE_LIMIT:
        return text
    return f"{text[:_QUOTE_LIMIT]}... ({len(text)} characters)"


def _quote(condition: str) -> str:
    if len(condition) <= _QUOTE_LIMIT:
        return repr(condition)
    return repr(condition[:_QUOTE_LIMIT]) + f"... ({len(condition)} characters)"


class _ItemBudget:
    """Counts list items, map entries and text characters converted for one evaluation."""

    __slots__ = ("left", "limit", "text_left", "text_limit")

    def __init__(self, limit: int, text_limit: int) -> None:
        self.limit = self.left = limit
        self.text_limit = self.text_left = text_limit

    def take_text(self, count: int, name: str) -> None:
        self.text_left -= count
        if self.text_left < 0:
            raise ConditionError(
                f"state value {name!r} brings the text this condition reads to more than the "
                f"cap of max_text_chars={self.text_limit} characters (a comprehension copies "
                "it per item); pass shorter strings or raise "
                "ConditionEvaluator(max_text_chars=...)"
            )

    def take(self, count: int, name: str) -> None:
        self.left -= count
        if self.left < 0:
            raise ConditionError(
                f"state value {name!r} brings the lists and maps this condition reads to more "
                f"than the cap of max_items={self.limit} items (comprehensions over large "
                "collections are quadratic in the CEL binding); pass a smaller state or raise "
                "ConditionEvaluator(max_items=...)"
            )


def _to_cel(
    value: object, *, name: str, depth: int = 0, budget: _ItemBudget | None = None
) -> object:
    """``value`` as one of the plain types the CEL binding converts faithfully."""
    if depth > _MAX_STATE_DEPTH:
        raise ConditionError(
            f"state value {name!r} nests deeper than {_MAX_STATE_DEPTH} levels "
            "(a list or mapping that contains itself?)"
        )
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ConditionError(
                f"state value {name!r} = {value} does not fit CEL's 64-bit int; "
                "pass it as a float or a string"
            )
        return int(value)  # an IntEnum becomes its number
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        text = str.__str__(value)  # a str-based Enum becomes its value, not 'Cls.NAME'
        if budget is not None:
            budget.take_text(len(text), name)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ConditionError(
                f"state value {name!r} is not valid text (it holds a lone surrogate)"
            ) from None
        return text
    if isinstance(value, bytes):
        if budget is not None:
            budget.take_text(len(value), name)
        return bytes(value)
    if isinstance(value, Mapping):
        if budget is not None:
            budget.take(len(value), name)
        converted: dict[object, object] = {}
        for key, item in value.items():
            if not isinstance(key, str | int):
                raise ConditionError(
                    f"state value {name!r} has a key of type {type(key).__name__} ({key!r}); "
                    "CEL map keys are str, int or bool"
                )
            converted[_to_cel(key, name=name, depth=depth + 1)] = _to_cel(
                item, name=f"{name}[{key!r}]", depth=depth + 1, budget=budget
            )
        return converted
    if isinstance(value, Sequence):
        if budget is not None:
            budget.take(len(value), name)
        return [
            _to_cel(item, name=f"{name}[{index}]", depth=depth + 1, budget=budget)
            for index, item in enumerate(value)
        ]
    raise ConditionError(
        f"state value {name!r} has type {type(value).__name__}; expected bool, int, float, "
        "str, bytes, None, a list or a mapping of those"
    )


@dataclass(frozen=True, slots=True)
class _Compiled:
    program: Any  # cel.Program; the binding ships no stubs mypy can follow here
    names: frozenset[str]


def _load_cel() -> ModuleType:
    # Imported on first use: the package pulls in its CLI's dependencies
    # (~150 ms), which users who never evaluate a CEL condition should not pay.
    import cel

    return cel


class ConditionEvaluator:
    """Evaluates CEL conditions such as ``hasConsent == false && count > 3``.

    Names in the condition are looked up in ``state``; values may be bool,
    int (64-bit), float, str, bytes, None, lists and mappings of those. A blank
    condition is ``True``. Anything else that goes wrong raises
    ``ConditionError`` (a ``ValueError``) naming the condition and the problem:
    a syntax error, an unknown name, a type error (CEL compares numbers of
    different types, so ``count > 3.5`` works for an int ``count``, but it never
    converts implicitly: ``count + "a"`` is an error), a result that is not a
    bool, a condition longer than ``max_length`` characters or nested deeper
    than ``max_depth`` brackets (both checked before parsing), or one over the
    work caps described in the module doc (``max_comprehension_depth=1``,
    ``max_comprehensions=4``, ``max_literal_items=64``, ``max_items=100``,
    ``max_text_chars=4096``).

    CEL's ``&&`` and ``||`` short-circuit in both directions, so an unknown name
    is only reported when the result depends on it: ``false && nosuchname`` is
    simply ``False``.

    Compiled conditions are kept in a bounded LRU cache of ``cache_size``
    entries, per evaluator; an evaluator is safe to share between threads.

    >>> evaluator = ConditionEvaluator()
    >>> evaluator.evaluate("hasConsent == false && count > 3", {"hasConsent": False, "count": 5})
    True
    >>> evaluator.evaluate("", {})
    True
    """

    def __init__(
        self,
        *,
        cache_size: int = 256,
        max_length: int = 4096,
        max_depth: int = 32,
        max_comprehension_depth: int = 1,
        max_comprehensions: int = 4,
        max_literal_items: int = 64,
        max_items: int = 100,
        max_text_chars: int = 4096,
    ):
        self._caps = {
            "max_comprehension_depth": max_comprehension_depth,
            "max_comprehensions": max_comprehensions,
            "max_literal_items": max_literal_items,
            "max_items": max_items,
            "max_text_chars": max_text_chars,
        }
        sizes = {"cache_size": cache_size, "max_length": max_length, "max_depth": max_depth}
        for option, value in {**sizes, **self._caps}.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{option} must be a positive int, got {value!r}")
        self._max_length = max_length
        self._max_depth = max_depth
        # One cache per evaluator (no module-level mutable state); lru_cache is
        # thread-safe and does not cache exceptions, so a bad condition is
        # re-diagnosed each time, with the same message.
        self._compile = functools.lru_cache(maxsize=cache_size)(self._compile_uncached)

    @property
    def max_length(self) -> int:
        """The longest condition accepted, in characters."""
        return self._max_length

    @property
    def max_depth(self) -> int:
        """The deepest bracket nesting accepted (string literals excluded)."""
        return self._max_depth

    @property
    def max_comprehension_depth(self) -> int:
        """How deep comprehensions (all, exists, exists_one, map, filter) may nest."""
        return self._caps["max_comprehension_depth"]

    @property
    def max_comprehensions(self) -> int:
        """The most comprehensions one condition may hold."""
        return self._caps["max_comprehensions"]

    @property
    def max_literal_items(self) -> int:
        """The most items one list or map literal may hold."""
        return self._caps["max_literal_items"]

    @property
    def max_items(self) -> int:
        """The most list items and map entries the state values one evaluation reads may hold."""
        return self._caps["max_items"]

    @property
    def max_text_chars(self) -> int:
        """The most characters of strings and bytes the state values one evaluation reads hold."""
        return self._caps["max_text_chars"]

    def evaluate(self, condition: str, state: Mapping[str, object]) -> bool:
        """Whether ``condition`` holds for ``state``; blank conditions hold."""
        compiled = self._prepare(condition)
        if not isinstance(state, Mapping):
            raise ConditionError(
                f"state for condition {_quote(condition)} must be a mapping of names to "
                f"values, got {type(state).__name__}",
                condition=condition,
            )
        if compiled is None:
            return True
        activation = self._activation(condition, compiled, state)
        result = self._execute(condition, compiled, activation, state)
        if not isinstance(result, bool):
            raise ConditionError(
                f"condition {_quote(condition)} evaluates to {type(result).__name__} "
                f"{_clip(repr(result))}, expected a bool (true or false)",
                condition=condition,
            )
        return result

    def check(self, condition: str) -> None:
        """Compile ``condition`` now, raising ``ConditionError`` if it is not valid CEL.

        Useful to validate norms when they are declared rather than when they
        are first evaluated. A blank condition is valid.
        """
        self._prepare(condition)

    def names(self, condition: str) -> frozenset[str]:
        """The state names ``condition`` refers to (empty for a blank condition)."""
        compiled = self._prepare(condition)
        return frozenset() if compiled is None else compiled.names

    def cache_info(self) -> functools._CacheInfo:
        """Hits, misses and size of this evaluator's compiled-condition cache."""
        return self._compile.cache_info()

    def _prepare(self, condition: str) -> _Compiled | None:
        """The compiled condition, or None for a blank one."""
        if not isinstance(condition, str):
            raise ConditionError(
                f"a condition must be a str, got {type(condition).__name__} {condition!r}",
                condition=str(condition),
            )
        # Before anything else, even the blank test: a huge input costs nothing more.
        if len(condition) > self.max_length:
            raise ConditionError(
                f"condition {_quote(condition)} is longer than the limit of "
                f"{self.max_length} characters",
                condition=condition,
            )
        if not condition.strip():
            return None
        return self._compile(condition)

    def _compile_uncached(self, condition: str) -> _Compiled:
        shape = _shape(condition)
        if shape.bracket_depth > self.max_depth:
            raise ConditionError(
                f"condition {_quote(condition)} nests brackets {shape.bracket_depth} deep, "
                f"more than the limit of {self.max_depth}",
                condition=condition,
            )
        for found, cap, what in (
            (shape.comprehension_depth, "max_comprehension_depth", "nests comprehensions"),
            (shape.comprehensions, "max_comprehensions", "has comprehensions"),
            (shape.literal_items, "max_literal_items", "has a list or map literal of"),
        ):
            limit = self._caps[cap]
            if found > limit:
                raise ConditionError(
                    f"condition {_quote(condition)} {what} {found}"
                    f"{' deep' if cap == 'max_comprehension_depth' else ''}"
                    f"{' items' if cap == 'max_literal_items' else ''}, over the cap "
                    f"{cap}={limit} (comprehensions are quadratic in the CEL binding); "
                    f"raise ConditionEvaluator({cap}=...) if you need more",
                    condition=condition,
                )
        cel = _load_cel()
        try:
            program = cel.compile(condition)
            names = frozenset(program.variables())
        except Exception as exc:
            raise ConditionError(
                f"condition {_quote(condition)} is not valid CEL: {_detail(exc)}",
                condition=condition,
            ) from None
        except BaseException as exc:
            if not _is_panic(exc):
                raise
            raise ConditionError(
                f"condition {_quote(condition)} crashed the CEL parser: {_detail(exc)}",
                condition=condition,
            ) from None
        return _Compiled(program=program, names=names)

    def _activation(
        self, condition: str, compiled: _Compiled, state: Mapping[str, object]
    ) -> dict[str, object]:
        # Only the names the condition mentions are converted: cheaper, and a
        # value the condition never reads cannot make it fail.
        activation: dict[str, object] = {}
        budget = _ItemBudget(self.max_items, self.max_text_chars)
        for name in sorted(compiled.names):
            if name in state:
                try:
                    activation[name] = _to_cel(state[name], name=name, budget=budget)
                except ConditionError as exc:
                    raise ConditionError(
                        f"condition {_quote(condition)}: {exc}", condition=condition
                    ) from None
        return activation

    @staticmethod
    def _execute(
        condition: str,
        compiled: _Compiled,
        activation: dict[str, object],
        state: Mapping[str, object],
    ) -> object:
        try:
            return compiled.program.execute(activation)
        except Exception as exc:
            problem = _runtime_problem(exc, compiled.names, state)
        except BaseException as exc:
            if not _is_panic(exc):
                raise
            problem = f"the CEL runtime crashed: {_detail(exc)}"
        raise ConditionError(f"condition {_quote(condition)}: {problem}", condition=condition)


def _runtime_problem(exc: Exception, names: frozenset[str], state: Mapping[str, object]) -> str:
    missing = sorted(name for name in names if name not in state)
    match = _UNDEFINED_NAME.search(str(exc))
    if match is not None or (missing and isinstance(exc, RuntimeError)):
        unknown = match.group(1) if match is not None else ", ".join(missing)
        known = ", ".join(sorted(str(key) for key in state)) or "nothing"
        return f"unknown name {unknown!r} (the state has: {known})"
    if isinstance(exc, TypeError):
        # The binding reports an ordering of NaN (x > 1.0 with x NaN) as a missing
        # overload, which blames types the user got right: name the NaN instead.
        nans = sorted(name for name in names if _holds_nan(state.get(name)))
        if nans:
            return (
                f"state value(s) {', '.join(map(repr, nans))} hold NaN, which CEL cannot "
                "order (<, >, <=, >= have no answer for NaN); test with x != x "
                "or pass a number"
            )
        return f"type error: {_detail(exc)}"
    if isinstance(exc, ArithmeticError):
        return f"arithmetic error: {_detail(exc)}"
    return f"evaluation failed: {_detail(exc)}"


def _holds_nan(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is NaN or holds one (in a list or a mapping's values)."""
    if isinstance(value, float):
        return math.isnan(value)
    if depth > _MAX_STATE_DEPTH or isinstance(value, str | bytes):
        return False
    if isinstance(value, Mapping):
        return any(_holds_nan(item, depth + 1) for item in value.values())
    if isinstance(value, Sequence):
        return any(_holds_nan(item, depth + 1) for item in value)
    return False


def _detail(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    # The binding echoes the whole condition with a caret; keep it, within reason.
    return text if len(text) <= 1000 else text[:1000] + "..."


def _is_panic(exc: BaseException) -> bool:
    # A panic inside the Rust binding surfaces as pyo3's PanicException, which
    # derives from BaseException; it is a library bug triggered by the
    # condition, so callers turn it into a ConditionError. Anything else
    # (KeyboardInterrupt, SystemExit) must propagate untouched.
    return type(exc).__name__ == "PanicException"
