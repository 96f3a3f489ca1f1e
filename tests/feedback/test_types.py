"""FeedbackType and the Feedback record."""

from __future__ import annotations

import dataclasses
import pickle
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback import Feedback, FeedbackType


@pytest.mark.parametrize("text", ["correction", "CORRECTION", "Correction", "  cOrReCtIoN "])
def test_parse_accepts_any_case(text: str) -> None:
    assert FeedbackType.parse(text) is FeedbackType.CORRECTION


def test_parse_accepts_every_member_and_members_themselves() -> None:
    for member in FeedbackType:
        assert FeedbackType.parse(member.name) is member
        assert FeedbackType.parse(member) is member


@pytest.mark.parametrize("bad", ["thumbs_up", "", "positive!", "corrections"])
def test_parse_rejects_other_strings_naming_value_and_choices(bad: str) -> None:
    with pytest.raises(ValueError, match="is not one of") as info:
        FeedbackType.parse(bad)
    assert isinstance(info.value, ConfigError)
    assert repr(bad) in str(info.value)
    for member in FeedbackType:
        assert member.value in str(info.value)


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(ConfigError, match="int 3"):
        FeedbackType.parse(3)  # type: ignore[arg-type]


def test_id_and_timestamp_are_filled_in() -> None:
    before = datetime.now(UTC)
    fb = Feedback(FeedbackType.POSITIVE, "nice")
    after = datetime.now(UTC)
    assert uuid.UUID(fb.id).version == 4
    assert fb.timestamp.utcoffset() == timedelta(0)
    assert fb.timestamp.tzinfo is UTC
    assert before <= fb.timestamp <= after
    assert fb.session_id is None
    assert dict(fb.metadata) == {}


def test_ids_are_unique() -> None:
    assert len({Feedback.thumbs_up("x").id for _ in range(100)}) == 100


def test_given_id_and_timestamp_are_kept() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=-5)))
    fb = Feedback("negative", "slow", session_id="s", id="my-id", timestamp=when)
    assert (fb.id, fb.timestamp, fb.session_id) == ("my-id", when, "s")
    assert fb.timestamp.utcoffset() == timedelta(hours=-5)


def test_type_given_as_string_is_parsed() -> None:
    assert Feedback("Preference", "short").type is FeedbackType.PREFERENCE
    with pytest.raises(ConfigError, match="'great'"):
        Feedback("great", "x")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("timestamp", datetime(2026, 1, 1), "timezone-aware"),
        ("timestamp", "2026-01-01", "timezone-aware"),
        ("id", "", "non-empty"),
        ("session_id", 7, "session_id"),
        ("metadata", [("a", 1)], "mapping"),
    ],
)
def test_bad_fields_are_rejected_by_name(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Feedback(FeedbackType.POSITIVE, "x", **{field: value})  # type: ignore[arg-type]


def test_content_must_be_str() -> None:
    with pytest.raises(ConfigError, match="content"):
        Feedback(FeedbackType.POSITIVE, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("factory", "kind"),
    [
        (Feedback.thumbs_up, FeedbackType.POSITIVE),
        (Feedback.thumbs_down, FeedbackType.NEGATIVE),
        (Feedback.correction, FeedbackType.CORRECTION),
        (Feedback.preference, FeedbackType.PREFERENCE),
    ],
)
def test_factories(factory: object, kind: FeedbackType) -> None:
    fb = factory("text", session_id="s1", metadata={"k": 1})  # type: ignore[operator]
    assert (fb.type, fb.content, fb.session_id, dict(fb.metadata)) == (kind, "text", "s1", {"k": 1})


def test_frozen() -> None:
    fb = Feedback.thumbs_up("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fb.content = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        fb.metadata["k"] = 1  # type: ignore[index]


def test_metadata_is_copied_from_the_callers_dict() -> None:
    given = {"channel": "email"}
    fb = Feedback.thumbs_up("x", metadata=given)
    given["channel"] = "phone"
    assert fb.metadata["channel"] == "email"


def test_with_session_id_returns_a_copy_with_same_identity() -> None:
    fb = Feedback.correction("x", metadata={"a": 1})
    tied = fb.with_session_id("s-9")
    assert tied.session_id == "s-9"
    assert fb.session_id is None
    assert (tied.id, tied.timestamp, tied.type, tied.content) == (
        fb.id,
        fb.timestamp,
        fb.type,
        fb.content,
    )
    assert dict(tied.metadata) == {"a": 1}


def test_equality_hash_and_pickle() -> None:
    fb = Feedback.preference("x", session_id="s", metadata={"nested": [1, 2]})
    clone = pickle.loads(pickle.dumps(fb))
    assert clone == fb
    assert hash(clone) == hash(fb)
    assert dataclasses.replace(fb) == fb
    assert Feedback.preference("x") != Feedback.preference("x")  # different ids
