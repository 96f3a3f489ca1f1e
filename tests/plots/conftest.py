"""The hand-built frames of tests/frames/conftest.py, shared with the plot tests."""

from tests.frames.conftest import cases_frame, checks_frame, optimization

__all__ = ["cases_frame", "checks_frame", "optimization"]
