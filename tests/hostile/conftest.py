"""Hostile inputs across the library: secrets, replay, containment, bounds, bad files.

The one cross-cutting test folder (issue 10). Every test here builds its
hostile input itself and asserts the safe outcome; none asserts a duration.
"""

from __future__ import annotations

import pytest

# A key shaped like a real one (36 characters), and a second secret that only
# an environment variable's name marks as one.
API_KEY = "sk-hostile-0123456789abcdefghijklmnop"
SERVICE_TOKEN = "tok-9f8e7d6c5b4a39281706"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process holds secrets in its environment, as a CI job does."""
    monkeypatch.setenv("TNSAI_LLM_API_KEY", API_KEY)
    monkeypatch.setenv("my_service_token", SERVICE_TOKEN)
    monkeypatch.setenv("HOSTILE_PLAIN", "plain-value-not-allowlisted")
