"""Two fake model servers that answer capitals: "big" right on all four, "small" wrong on two.

Shared by the tests of ``compare_models`` and ``tnsai-eval eval``: "small"
answers Spain and Japan wrongly and waits ``DELAY_S`` before each reply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step, completion_body

RIGHT = {"France": "Paris", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo"}
WRONG = {**RIGHT, "Spain": "Lisbon", "Japan": "Kyoto"}
DELAY_S = 0.2


def answering(answers: Mapping[str, str], delay: float = 0.0) -> Step:
    """A reply naming the capital of the country the last message mentions."""

    def body(request: Recorded) -> bytes:
        prompt = str(request.json["messages"][-1]["content"])
        city = next((a for c, a in answers.items() if c in prompt), "I do not know")
        return completion_body(request, city)

    return Step(body=body, delay=delay)


@contextmanager
def capital_servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    """``(big, small)``, both started on 127.0.0.1."""
    with (
        FakeOpenAIServer(default=answering(RIGHT)) as big,
        FakeOpenAIServer(default=answering(WRONG, DELAY_S)) as small,
    ):
        yield big, small
