"""Feedback: records, stores, collection and learning, and the Agent that uses them.

The ``Agent`` is defined in ``tnsai_eval.agents`` (it runs tools and records
trajectories; feedback is one thing it uses); ``tnsai_eval.feedback.Agent``,
API.md's name, is the same class.

>>> from tnsai_eval.feedback import Feedback, FeedbackStore, FeedbackType
>>> store = FeedbackStore.in_memory()
>>> store.save(Feedback(FeedbackType.parse("CORRECTION"), "Use the customer's name."))
>>> store.get_by_type("correction")[0].content
"Use the customer's name."
"""

from typing import Any

from tnsai_eval.feedback._collector import FeedbackCollector
from tnsai_eval.feedback._enricher import AdaptivePromptEnricher
from tnsai_eval.feedback._learned import learned_behavior_section
from tnsai_eval.feedback._learner import FeedbackLearner, LearningResult, LearningStrategy
from tnsai_eval.feedback._sqlite import SqliteFeedbackStore
from tnsai_eval.feedback._store import FeedbackStore, InMemoryFeedbackStore
from tnsai_eval.feedback._types import Feedback, FeedbackType

__all__ = [
    "AdaptivePromptEnricher",
    "Agent",
    "Feedback",
    "FeedbackCollector",
    "FeedbackLearner",
    "FeedbackStore",
    "FeedbackType",
    "InMemoryFeedbackStore",
    "LearningResult",
    "LearningStrategy",
    "SqliteFeedbackStore",
    "learned_behavior_section",
]


def __getattr__(name: str) -> Any:
    # The Agent is defined a layer up, in tnsai_eval.agents. It is looked up by
    # name at run time, not imported, so this package never depends on the one
    # above it (and importing feedback alone does not load the agent).
    if name != "Agent":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module("tnsai_eval.agents"), name)
