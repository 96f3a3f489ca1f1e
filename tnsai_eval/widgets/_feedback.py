"""``FeedbackPanel``: rate a reply, correct it, state a preference; watch the prompt learn."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from tnsai_eval import frames
from tnsai_eval.feedback import Feedback, FeedbackStore, learned_behavior_section
from tnsai_eval.widgets._common import DisplayMixin, pre_html, table_html

__all__ = ["FeedbackPanel"]


class FeedbackPanel(DisplayMixin):
    """Buttons and inputs that write ``Feedback`` to a ``FeedbackStore``.

    Thumbs up / down rate the reply shown (``set_reply``); a correction becomes
    a rule and a preference a preference in the learned prompt section, which
    is re-rendered after every item. With ``agent``, feedback also goes to the
    agent's collector and the panel shows the agent's whole effective system
    prompt; without one it shows the ``# Learned Behavior`` section the store's
    feedback would add. With ``learner`` (a ``FeedbackLearner`` over the same
    store), a "learn" button runs ``learn()`` (model calls) and lists what it
    learned.

    ::

        panel = FeedbackPanel(FeedbackStore.in_memory(), agent=agent)
        panel.set_reply(agent.chat("Where is my order?"))
        panel
    """

    def __init__(
        self,
        store: FeedbackStore,
        *,
        agent: Any = None,
        learner: Any = None,
        reply: str = "",
        session_id: str | None = None,
    ) -> None:
        self.store = store
        self.agent = agent
        self.learner = learner
        self.session_id = session_id
        self._reply_text = ""
        self.reply = w.HTML()
        # Icons from the Font Awesome set that Jupyter ships, beside words: an
        # emoji needs an emoji font, which many browsers lack (an empty box).
        self.thumbs_up = w.Button(
            description="good", icon="thumbs-up", tooltip="save POSITIVE feedback"
        )
        self.thumbs_down = w.Button(
            description="bad", icon="thumbs-down", tooltip="save NEGATIVE feedback"
        )
        self.correction = w.Text(placeholder="a rule the reply broke, e.g. Quote the order id")
        self.add_correction = w.Button(description="add correction")
        self.preference = w.Text(placeholder="how replies should be, e.g. Answer in one line")
        self.add_preference = w.Button(description="add preference")
        self.status = w.HTML()
        self.prompt = w.HTML()
        self.history = w.HTML()
        self.learned = w.HTML()
        self.thumbs_up.on_click(lambda _: self._save(Feedback.thumbs_up, self._reply_text))
        self.thumbs_down.on_click(lambda _: self._save(Feedback.thumbs_down, self._reply_text))
        self.add_correction.on_click(lambda _: self._submit(self.correction, Feedback.correction))
        self.add_preference.on_click(lambda _: self._submit(self.preference, Feedback.preference))
        rows: list[Any] = [
            w.HTML("<b>Reply</b>"),
            self.reply,
            w.HBox([self.thumbs_up, self.thumbs_down]),
            w.HBox([self.correction, self.add_correction]),
            w.HBox([self.preference, self.add_preference]),
        ]
        if learner is not None:
            self.learn_button = w.Button(description="learn", tooltip="FeedbackLearner.learn()")
            self.learn_button.on_click(lambda _: self.learn())
            rows.append(self.learn_button)
        rows += [self.status, w.HTML("<b>Prompt</b>"), self.prompt, self.learned]
        rows += [w.HTML("<b>Feedback so far</b>"), self.history]
        self.widget = w.VBox(rows)
        self.set_reply(reply)
        self.refresh()

    def set_reply(self, text: str) -> None:
        """The reply that the thumbs rate."""
        self._reply_text = text
        self.reply.value = pre_html(text) if text else "<i>(no reply yet)</i>"

    def _submit(self, box: Any, factory: Any) -> None:
        text = str(box.value).strip()
        if not text:
            self.status.value = "<i>type something first: nothing saved</i>"
            return
        self._save(factory, text)
        box.value = ""

    def _save(self, factory: Any, content: str) -> None:
        if not content:
            self.status.value = "<i>no reply to rate yet: nothing saved</i>"
            return
        feedback: Feedback = factory(content)
        if self.session_id is not None:
            feedback = feedback.with_session_id(self.session_id)
        self.store.save(feedback)
        if self.agent is not None:
            self.agent.feedback_collector.record(feedback)
        self.status.value = f"saved {feedback.type.name.lower()} feedback"
        self.refresh()

    def refresh(self) -> None:
        """Re-render the prompt section and the feedback table from the store."""
        if self.agent is not None:
            self.prompt.value = pre_html(str(self.agent.system_prompt))
        else:
            section = learned_behavior_section(self.store.get_all())
            self.prompt.value = pre_html(section) if section else "<i>nothing learned yet</i>"
        # Oldest first, without the timestamp: the order says when, and a table of
        # clock times would make every re-run of a notebook a diff.
        frame = frames.feedback_frame(self.store)
        table = frame.drop(columns=[c for c in ("id", "session_id", "timestamp") if c in frame])
        self.history.value = table_html(table, empty="no feedback yet")

    def learn(self) -> Any:
        """Run the learner (model calls) and show what it learned; returns its LearningResult."""
        if self.learner is None:
            self.status.value = "<i>no learner given</i>"
            return None
        result = self.learner.learn()
        learned = frames.learning_frame(result)
        errors = list(getattr(result, "errors", ()))
        note = f" ({len(errors)} strategy call(s) failed)" if errors else ""
        self.learned.value = (
            "<b>Learned</b>"
            + note
            + table_html(learned, empty=f"nothing learned from {result.feedback_analyzed} item(s)")
        )
        return result
