"""Mask, then cut: no path that shortens text leaves a piece of a key behind.

Each test drives one real path (a check's output tail, a test's failure
message in the report, a model's bad tool-call arguments) with a key placed
where the old order of operations (cut, then mask) leaked part of it.
"""

from __future__ import annotations

import pytest

from tests.hostile.conftest import API_KEY
from tnsai_eval._util.secrets import mask_then_cut, mask_then_keep_end

pytestmark = pytest.mark.usefixtures("secret_env")


def test_a_tail_cut_from_a_stream_keeps_no_remnant_of_a_straddling_key() -> None:
    # The reader kept only the end of the output: the key's start is gone.
    tail = API_KEY[10:] + " done " + API_KEY + " end"
    shown = mask_then_keep_end(tail, 4096, [API_KEY], truncated=True)
    assert API_KEY[10:] not in shown
    assert API_KEY[-8:] not in shown
    assert shown.endswith(" end")


def test_mask_then_cut_never_leaves_a_prefix_of_a_key() -> None:
    for limit in range(1, 60):
        shown = mask_then_cut("x" * 20 + API_KEY, limit, [API_KEY])
        assert API_KEY[:6] not in shown
