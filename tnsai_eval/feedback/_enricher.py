"""Appending what a learner learned to a prompt."""

from __future__ import annotations

import threading

from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback._learner import FeedbackLearner, LearningResult
from tnsai_eval.feedback._store import FeedbackStore

__all__ = ["AdaptivePromptEnricher"]


class AdaptivePromptEnricher:
    """Adds a ``## Learned Preferences`` section to prompts.

    ``enrich(prompt)`` returns ``prompt`` followed by the learner's rules
    (``### Rules``) and preferences (``### Preferences``) as bullets; a
    subsection with nothing in it is left out, and the prompt comes back
    unchanged when nothing was learned. ``learner.learn()`` runs again only
    when ``store.count()`` has changed since the last time (so a failed model
    call is retried only once new feedback arrives, or on ``refresh()``).
    ``store`` is normally the learner's own store. Thread-safe.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> from tnsai_eval.feedback import Feedback, FeedbackLearner
    >>> store = FeedbackStore.in_memory()
    >>> llm = ScriptedLLM(default="RULE: Quote the order number.")
    >>> learner = FeedbackLearner(llm, store, ["prompt_adjustment"], min_feedback_for_learning=1)
    >>> store.save(Feedback.correction("You forgot the order number."))
    >>> print(AdaptivePromptEnricher(learner, store).enrich("You are a support agent."))
    You are a support agent.
    <BLANKLINE>
    ## Learned Preferences
    <BLANKLINE>
    ### Rules
    - Quote the order number.
    """

    def __init__(self, learner: FeedbackLearner, store: FeedbackStore) -> None:
        if not isinstance(learner, FeedbackLearner):
            raise ConfigError(f"learner must be a FeedbackLearner, got {type(learner).__name__}")
        if not isinstance(store, FeedbackStore):
            raise ConfigError(f"store must be a FeedbackStore, got {type(store).__name__}")
        self.learner = learner
        self.store = store
        self._learned_at_count: int | None = None
        self._result = LearningResult()
        self._lock = threading.Lock()

    @property
    def last_result(self) -> LearningResult:
        """The result the next ``enrich`` uses unless the store has changed."""
        return self._result

    def refresh(self) -> LearningResult:
        """Learn again now, whatever the store's count."""
        with self._lock:
            return self._relearn(self.store.count())

    def _relearn(self, count: int) -> LearningResult:
        self._result = self.learner.learn()
        self._learned_at_count = count
        return self._result

    def enrich(self, prompt: str) -> str:
        """``prompt`` with the learned rules and preferences appended."""
        if not isinstance(prompt, str):
            raise ConfigError(f"prompt must be a str, got {type(prompt).__name__}")
        with self._lock:
            count = self.store.count()
            result = self._result if count == self._learned_at_count else self._relearn(count)
        parts = [
            title + "\n" + "\n".join(f"- {item}" for item in items)
            for title, items in (
                ("### Rules", result.prompt_adjustments),
                ("### Preferences", result.preferences),
            )
            if items
        ]
        if not parts:
            return prompt
        section = "## Learned Preferences\n\n" + "\n\n".join(parts)
        return f"{prompt.rstrip()}\n\n{section}" if prompt.strip() else section
