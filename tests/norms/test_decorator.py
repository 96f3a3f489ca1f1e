"""The @norm class decorator: stacking, order, inheritance."""

from __future__ import annotations

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.norms import NormEngine, NormEntry, NormType, declared_norms, norm


@norm(type=NormType.OBLIGATION, action="greet", priority=1, description="Say hello")
@norm(type=NormType.PROHIBITION, action="insult", condition="angry == true")
@norm(type=NormType.PERMISSION, action="joke")
class Base:
    pass


@norm(type=NormType.OBLIGATION, action="sign_off")
@norm(type=NormType.PROHIBITION, action="swear")
class Child(Base):
    pass


class Plain(Base):
    """No norms of its own: inherits Base's."""


def test_stacked_decorators_keep_written_order() -> None:
    assert declared_norms(Base) == (
        NormEntry(NormType.OBLIGATION, "", "greet", "Say hello", 1),
        NormEntry(NormType.PROHIBITION, "angry == true", "insult"),
        NormEntry(NormType.PERMISSION, "", "joke"),
    )


def test_subclass_adds_after_its_bases_without_touching_them() -> None:
    assert [entry.action for entry in declared_norms(Child)] == [
        "greet",
        "insult",
        "joke",
        "sign_off",
        "swear",
    ]
    # The parent still declares exactly its own three.
    assert [entry.action for entry in declared_norms(Base)] == ["greet", "insult", "joke"]
    assert declared_norms(Plain) == declared_norms(Base)


def test_decorator_returns_the_class_itself() -> None:
    class Agent:
        pass

    assert norm(type=NormType.PERMISSION, action="read")(Agent) is Agent


def test_from_class_and_from_instance() -> None:
    assert NormEngine.from_class(Child).get_all_norms() == list(declared_norms(Child))
    assert NormEngine.from_class(Child()).get_all_norms() == list(declared_norms(Child))


def test_from_class_without_norms_is_an_error() -> None:
    class Undecorated:
        pass

    with pytest.raises(ConfigError, match=r"Undecorated declares no norms"):
        NormEngine.from_class(Undecorated)


def test_decorating_a_function_is_a_type_error() -> None:
    decorate = norm(type=NormType.PERMISSION, action="read")
    with pytest.raises(TypeError, match="decorates classes"):
        decorate(lambda: None)  # type: ignore[type-var]


def test_bad_norm_is_refused_when_declared() -> None:
    with pytest.raises(ConfigError, match="non-blank action"):
        norm(type=NormType.PROHIBITION, action="")
