"""Running a coroutine to completion from synchronous code, inside a notebook too."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

__all__ = ["blocking", "run_sync"]

_T = TypeVar("_T")
_P = ParamSpec("_P")


def run_sync(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run(coroutine)``, or the same in a worker thread under a running loop.

    A notebook cell already runs inside an event loop, where ``asyncio.run``
    refuses to start a second one; a thread of its own gets a fresh loop.

    >>> async def two() -> int:
    ...     return 2
    >>> run_sync(two())
    2
    """
    kept: list[_T] = []
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_keep(coroutine, kept))
        return kept[0]
    # The caller's context (its call budgets, running case, repeat sample) goes along.
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(context.run, asyncio.run, _keep(coroutine, kept)).result()
    return kept[0]


def blocking(afunction: Callable[_P, Coroutine[Any, Any, _T]]) -> Callable[_P, _T]:
    """``afunction`` for synchronous callers (``run_sync``): its parameters and docstring,
    named without its leading ``a``, so that a sync and an async entry point share one
    signature and one body.

    >>> async def atwice(n: int) -> int:
    ...     return 2 * n
    >>> twice = blocking(atwice)
    >>> twice(3), twice.__name__
    (6, 'twice')
    """

    @functools.wraps(afunction)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return run_sync(afunction(*args, **kwargs))

    run.__name__ = afunction.__name__.removeprefix("a")
    run.__qualname__ = afunction.__qualname__.removesuffix(afunction.__name__) + run.__name__
    return run


async def _keep(coroutine: Coroutine[Any, Any, _T], kept: list[_T]) -> None:
    """Await ``coroutine`` into ``kept``: the main task's own result stays ``None``.

    ``asyncio.run`` restores the SIGINT handler it installed, a partial holding
    the main task, and ``signal`` builds (then drops) an error message with the
    repr of that handler, so of the task and of its result: for a scoring run,
    every case record, a cost that grew with the number of cases.
    """
    kept.append(await coroutine)
