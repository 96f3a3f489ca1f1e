"""FeedbackCollector, enabled and as a no-op."""

from __future__ import annotations

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback import Feedback, FeedbackCollector, FeedbackType


@pytest.mark.parametrize("kind", [FeedbackType.CORRECTION, "correction", "CORRECTION"])
def test_record_user_feedback_takes_enum_or_string(kind: FeedbackType | str) -> None:
    collector = FeedbackCollector()
    fb = collector.record_user_feedback(kind, "Say hello first.", {"channel": "web"})
    assert fb.type is FeedbackType.CORRECTION
    assert fb.content == "Say hello first."
    assert dict(fb.metadata) == {"source": "user", "channel": "web"}
    assert collector.feedback == [fb]


def test_bad_type_is_rejected_naming_it() -> None:
    collector = FeedbackCollector()
    with pytest.raises(ConfigError, match="'meh'"):
        collector.record_user_feedback("meh", "x")
    assert collector.feedback == []


def test_tool_calls_are_positive_or_negative_with_the_error() -> None:
    collector = FeedbackCollector()
    ok = collector.record_tool_call("search", ok=True)
    failed = collector.record_tool_call("refund", ok=False, error="KeyError: 'order'")
    assert ok.type is FeedbackType.POSITIVE
    assert failed.type is FeedbackType.NEGATIVE
    assert "KeyError: 'order'" in failed.content
    assert dict(failed.metadata) == {
        "source": "tool_call",
        "tool": "refund",
        "ok": False,
        "error": "KeyError: 'order'",
    }
    assert collector.feedback == [ok, failed]
    with pytest.raises(ConfigError, match="tool name"):
        collector.record_tool_call("", ok=True)


def test_feedback_is_a_copy_in_order() -> None:
    collector = FeedbackCollector()
    first = collector.record_user_feedback("positive", "a")
    second = collector.record_user_feedback("negative", "b")
    snapshot = collector.feedback
    snapshot.clear()
    assert collector.feedback == [first, second]
    assert len(collector) == 2
    collector.clear()
    assert collector.feedback == []


def test_session_id_is_stamped_on_feedback_without_one() -> None:
    collector = FeedbackCollector(session_id="s-7")
    assert collector.record_user_feedback("positive", "a").session_id == "s-7"
    assert collector.record(Feedback.thumbs_up("b", session_id="mine")).session_id == "mine"
    assert [fb.session_id for fb in collector.feedback] == ["s-7", "mine"]


def test_disabled_collector_keeps_nothing_but_still_validates() -> None:
    collector = FeedbackCollector(enabled=False)
    fb = collector.record_user_feedback("correction", "x")
    assert fb.type is FeedbackType.CORRECTION
    collector.record_tool_call("search", ok=True)
    collector.record(Feedback.preference("y"))
    assert collector.feedback == []
    assert len(collector) == 0
    with pytest.raises(ConfigError):
        collector.record_user_feedback("nope", "x")


def test_user_metadata_may_set_its_own_source_and_must_be_a_mapping() -> None:
    collector = FeedbackCollector()
    fb = collector.record_user_feedback("positive", "x", {"source": "survey"})
    assert fb.metadata["source"] == "survey"
    with pytest.raises(ConfigError, match="mapping"):
        collector.record_user_feedback("positive", "x", ["not", "a", "mapping"])  # type: ignore[arg-type]
