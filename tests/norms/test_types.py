"""NormType, NormEntry, NormViolation and CheckResult records."""

from __future__ import annotations

import dataclasses
from datetime import UTC

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.norms import CheckResult, NormEntry, NormType, NormViolation


def test_norm_type_members() -> None:
    assert [member.name for member in NormType] == ["OBLIGATION", "PROHIBITION", "PERMISSION"]


@pytest.mark.parametrize("text", ["prohibition", "PROHIBITION", "Prohibition", " prohibition "])
def test_norm_type_parse_any_case(text: str) -> None:
    assert NormType.parse(text) is NormType.PROHIBITION


def test_norm_type_parse_rejects_other_values_naming_them() -> None:
    with pytest.raises(ConfigError, match=r"'forbidden' is not one of 'obligation', 'prohibition'"):
        NormType.parse("forbidden")


def test_norm_entry_positional_order_and_defaults() -> None:
    entry = NormEntry(NormType.OBLIGATION, "x > 1", "log", "Log it", 3)
    assert (entry.type, entry.condition, entry.action, entry.description, entry.priority) == (
        NormType.OBLIGATION,
        "x > 1",
        "log",
        "Log it",
        3,
    )
    bare = NormEntry(NormType.PERMISSION, action="read")
    assert (bare.condition, bare.description, bare.priority) == ("", "", 0)


def test_norm_entry_is_frozen_and_hashable() -> None:
    entry = NormEntry(NormType.PROHIBITION, action="delete")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.action = "other"  # type: ignore[misc]
    assert entry == NormEntry(NormType.PROHIBITION, action="delete")
    assert len({entry, NormEntry(NormType.PROHIBITION, action="delete")}) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": NormType.OBLIGATION}, "non-blank action name, got ''"),
        ({"type": NormType.OBLIGATION, "action": "   "}, "non-blank action name"),
        ({"type": "obligation", "action": "a"}, "must be a NormType.*'obligation'"),
        ({"type": NormType.OBLIGATION, "action": "a", "priority": "high"}, "priority.*'high'"),
        ({"type": NormType.OBLIGATION, "action": "a", "priority": True}, "priority.*True"),
        ({"type": NormType.OBLIGATION, "action": "a", "condition": None}, "condition.*None"),
        ({"type": NormType.OBLIGATION, "action": "a", "description": 3}, "description.*3"),
    ],
)
def test_norm_entry_rejects_bad_fields(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        NormEntry(**kwargs)  # type: ignore[arg-type]


def test_label_falls_back_to_a_generated_description() -> None:
    assert NormEntry(NormType.PROHIBITION, action="rm", description="No rm").label == "No rm"
    assert NormEntry(NormType.PROHIBITION, action="rm").label == "prohibition of 'rm'"


def test_violation_gets_a_utc_timestamp_and_reads_as_its_reason() -> None:
    entry = NormEntry(NormType.PROHIBITION, action="rm")
    violation = NormViolation(entry, "rm", "rm is prohibited")
    assert violation.timestamp.tzinfo is UTC
    assert str(violation) == "rm is prohibited"


def test_check_result_flags_and_text() -> None:
    entry = NormEntry(NormType.PROHIBITION, action="rm")
    empty = CheckResult()
    assert empty.is_allowed
    assert not empty.is_violation
    assert str(empty) == "no norm violations"

    two = CheckResult([NormViolation(entry, "rm", "first"), NormViolation(entry, "rm", "second")])  # type: ignore[arg-type]
    assert isinstance(two.violations, tuple)
    assert two.is_violation
    assert not two.is_allowed
    assert str(two) == "2 norm violations:\n- first\n- second"
