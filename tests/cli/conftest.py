"""The servers of tests/llm/conftest.py (the fault-injecting fake and llama.cpp), for CLI tests."""

from tests.llm.conftest import _fake_server_session, fake_server, llama_server

__all__ = ["_fake_server_session", "fake_server", "llama_server"]
