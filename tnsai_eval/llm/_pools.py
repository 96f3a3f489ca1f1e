"""Connection pools behind ``OpenAIClient``: a concurrency bound over small httpx pools.

Why several pools rather than one: httpcore 1.0's pool re-examines every
connection it holds (idle checks, a ``poll()`` per idle socket) on each
request start and end, and part of that pass is quadratic in the number of
connections (encode/httpcore#1035, open at the time of writing). At 32
connections in one pool this bookkeeping, not the network, bounded our
throughput: in bench/client.py, 256 requests 32 at a time to a server that
waits 50 ms took about 2.5 s with one pool and 0.6 s with pools of 4 (pools
of 4 also used about 20% less CPU than pools of 8). So one bound of ``limit``
in-flight requests is spread over pools of at most ``CONNECTIONS_PER_POOL``
slots, and each request goes to the pool with the most free slots. A single request
always lands in the first pool, so sequential use keeps one warm connection.

Each pool is a plain ``httpx.Client`` and every request goes through its
public ``send``: an earlier version sent straight to the transport a private
httpx method picked, which saved about 0.1 ms of CPU per call but skipped the
client's cookie handling (a cookie a server set was never sent back) and
leaned on a name any httpx release may change.
The pools share one cookie jar, so they behave as one httpx client would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

__all__ = ["CONNECTIONS_PER_POOL", "SyncPools", "pool_limits", "split_slots"]

CONNECTIONS_PER_POOL = 4
# A spare connection per pool above its slots: a request holding a slot must
# never queue for a connection (that wait would surface as a PoolTimeout).
# httpx hands a connection back before our slot is freed, so one is plenty.
_HEADROOM = 1


def split_slots(limit: int, per_pool: int = CONNECTIONS_PER_POOL) -> list[int]:
    """Split ``limit`` slots into near-equal pools of at most ``per_pool``.

    >>> split_slots(16), split_slots(10), split_slots(1)
    ([4, 4, 4, 4], [4, 3, 3], [1])
    """
    count = -(-limit // per_pool)
    base, extra = divmod(limit, count)
    return [base + 1 if i < extra else base for i in range(count)]


def pool_limits(slots: int) -> httpx.Limits:
    """httpx limits for a pool serving ``slots`` concurrent requests."""
    size = slots + _HEADROOM
    return httpx.Limits(max_connections=size, max_keepalive_connections=size)


@dataclass(slots=True)
class _Member:
    client: httpx.Client
    free: int


class SyncPools:
    """At most ``sum(slots)`` requests in flight from any number of threads.

    Requests go through each member's public ``httpx.Client.send``, so
    proxies from the environment, cookies and the rest of httpx's client
    behaviour apply as they do for any httpx user. ``make`` builds a member
    client for a number of slots; the members should share one cookie jar
    (pass the same ``http.cookiejar.CookieJar`` as ``cookies=``), so that a
    cookie a server sets is sent back whichever pool the next request takes.
    """

    def __init__(self, slots: list[int], make: Callable[[int], httpx.Client]) -> None:
        self._members = [_Member(make(n), n) for n in slots]
        self._bound = threading.BoundedSemaphore(sum(slots))
        self._lock = threading.Lock()

    @contextmanager
    def lease(self) -> Iterator[httpx.Client]:
        """A client with a free slot, held until the block ends."""
        with self._bound:
            # The bound guarantees some member has a free slot.
            with self._lock:
                member = max(self._members, key=lambda m: m.free)  # the first on a tie
                member.free -= 1
            try:
                yield member.client
            finally:
                with self._lock:
                    member.free += 1

    def close(self) -> None:
        for member in self._members:
            member.client.close()
