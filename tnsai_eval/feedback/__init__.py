"""Feedback: records, stores, collection, learning and the Agent that uses them.

>>> from tnsai_eval.feedback import Feedback, FeedbackStore, FeedbackType
>>> store = FeedbackStore.in_memory()
>>> store.save(Feedback(FeedbackType.parse("CORRECTION"), "Use the customer's name."))
>>> store.get_by_type("correction")[0].content
"Use the customer's name."
"""

from tnsai_eval.feedback._agent import Agent, learned_behavior_section
from tnsai_eval.feedback._collector import FeedbackCollector
from tnsai_eval.feedback._enricher import AdaptivePromptEnricher
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
