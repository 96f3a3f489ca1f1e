"""The hand-built frames of tests/frames/conftest.py, shared with the widget tests."""

from tests.frames.conftest import bare_refinement, cases_frame, checks_frame, optimization

__all__ = ["bare_refinement", "cases_frame", "checks_frame", "optimization"]
