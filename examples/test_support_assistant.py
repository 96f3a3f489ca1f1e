"""Prompt regression tests for a customer-support assistant (see README.md)."""

from __future__ import annotations

from pytest_plugin import norm_check, refine_until
from tnsai_eval.feedback import Agent
from tnsai_eval.norms import NormType, norm
from tnsai_eval.scoring import LabelEvaluator

# Classification replies are one word: a few tokens are plenty, and a small
# bound keeps recording fast. Labels are scored with LabelEvaluator: a reply
# counts only when it names exactly one label, so "positive or negative?" (or a
# reply listing every label) is wrong, where a substring check would pass it.
SHORT = {"temperature": 0.0, "max_tokens": 8}

# The 135M model answers a question better after the text it is about, so the
# triage prompt comes after the message (a custom template).
TRIAGE_TEMPLATE = "Message: {input}\n\n{prompt}"
TRIAGE_PROMPT = (
    "Is this message praise (positive), a complaint (negative), a correction of a fact "
    "(correction), or a wish (preference)? Answer with one word."
)
TRIAGE_LABELS = ["positive", "negative", "correction", "preference"]
SENTIMENT_PROMPT = (
    "Is the customer's message positive or negative? Reply with one word: positive or negative."
)
POLITE_PROMPT = (
    "Rewrite the customer's message as one polite, formal sentence. Reply with the sentence only."
)


def test_feedback_triage(evaluate_prompt):
    result = evaluate_prompt(
        TRIAGE_PROMPT,
        "feedback_examples",
        evaluator=LabelEvaluator(TRIAGE_LABELS),
        template=TRIAGE_TEMPLATE,
        params=SHORT,
        min_score=0.1,
    )
    # Every message got some answer: an empty reply means the prompt broke.
    assert all(case.output for case in result.cases)


def test_customer_sentiment(evaluate_prompt):
    evaluate_prompt(
        SENTIMENT_PROMPT,
        "sentiment",
        evaluator=LabelEvaluator(["positive", "negative"]),
        params=SHORT,
        min_score=0.5,
    )


def test_polite_rewrites(evaluate_prompt):
    result = evaluate_prompt(
        POLITE_PROMPT, "formal_tone", params={"temperature": 0.0, "max_tokens": 48}, min_score=0.15
    )
    frame = result.to_dataframe()
    assert len(frame) == 15


@refine_until(
    task=(
        "Extract the customer's name, age and city from the note as a JSON object with "
        'the keys "name", "age" and "city". Reply with the JSON object only.'
    ),
    must_contain=['"name"', '"Alice"'],
    matches_pattern=r'"age":\s*30\b',
    max_iterations=3,
    chat_params={"temperature": 0.0, "max_tokens": 64},
)
def test_signup_note_is_extracted(refine):
    result = refine("Alice is 30 years old and lives in Paris.")
    assert result.iteration_count <= 3


# -- the refund policy --------------------------------------------------------------


@norm(
    type=NormType.PROHIBITION,
    action="issue_refund",
    condition="verified == false",
    description="Never refund a customer whose identity was not verified",
)
@norm(
    type=NormType.OBLIGATION,
    action="log_interaction",
    description="Every conversation is logged for quality review",
)
class SupportAgent(Agent):
    """The assistant: it reads the request with the model, then acts with its tools."""

    def handle(self, message: str, *, verified: bool) -> str:
        intent = self.chat(
            "Does this customer ask for their money back? Reply yes or no.\n\n" + message
        )
        self.call_tool("log_interaction", summary=message[:60])
        if "yes" in intent.lower():
            if verified:
                return str(self.call_tool("issue_refund", amount=20))
            return str(self.call_tool("request_verification"))
        return intent


def issue_refund(amount: int) -> str:
    return f"refunded {amount} EUR"


def request_verification() -> str:
    return "sent a verification link"


def log_interaction(summary: str) -> str:
    return f"logged: {summary}"


TOOLS = [issue_refund, request_verification, log_interaction]


@norm_check(SupportAgent, state={"verified": False})
def test_unverified_customers_are_not_refunded(agent):
    bot = agent("You are a careful support assistant.", TOOLS, llm_params=SHORT)
    bot.handle("I want my money back for order 1234, it arrived broken.", verified=False)
