"""The one judge: which method it uses, how it falls back, calibration, and llm_check on it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tnsai_eval.errors import ClientRequestError, ConfigError
from tnsai_eval.llm import Completion, FrontClient, Message, TokenLogprob
from tnsai_eval.refinement import CompletionCriteria
from tnsai_eval.scoring import (
    Judge,
    JudgeCalibration,
    JudgeMethod,
    LLMJudgeEvaluator,
    fit_threshold,
)
from tnsai_eval.testing import ScriptedLLM


def yes_no(p_yes: float, p_no: float, first: str = "Yes") -> Completion:
    """A one-token reply with the log-probabilities a server would send."""
    top = (("Yes", math.log(p_yes)), ("No", math.log(p_no)), ("Maybe", math.log(0.01)))
    return Completion(first, logprobs=(TokenLogprob(first, dict(top)[first], top),))


def test_the_yes_share_of_the_first_token_is_the_score() -> None:
    llm = ScriptedLLM([yes_no(0.3, 0.1, first="Yes")])
    result = Judge(llm, method="logprobs").grade("Is it polite?", "Thanks!")
    assert result.score == pytest.approx(0.75)
    assert result.method is JudgeMethod.LOGPROBS
    [call] = llm.calls
    assert call.params == {
        "temperature": 0.0,
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": 20,
    }
    assert call.messages[0] == Message("system", "You judge texts. Answer only Yes or No.")
    # The text first, the question last: what the model reads before it answers.
    assert call.messages[1].content == "Thanks!\n\nIs it polite?"


def test_tokens_with_spaces_and_case_count_too() -> None:
    top = ((" yes", math.log(0.2)), ("NO", math.log(0.2)), (" No", math.log(0.4)))
    reply = Completion("NO", logprobs=(TokenLogprob("NO", math.log(0.2), top),))
    result = Judge(ScriptedLLM([reply]), method="logprobs").grade("q?", "t")
    assert result.score == pytest.approx(0.2 / 0.8)


def test_an_answer_missing_from_the_alternatives_counts_at_the_least_listed() -> None:
    # "No" is not among the alternatives: its probability is at most 0.05 (the
    # least likely listed), so the score is 0.6 / 0.65, not a certain 1.0.
    top = (("Yes", math.log(0.6)), ("Maybe", math.log(0.1)), ("Sure", math.log(0.05)))
    reply = Completion("Yes", logprobs=(TokenLogprob("Yes", math.log(0.6), top),))
    result = Judge(ScriptedLLM([reply]), method="logprobs").grade("q?", "t")
    assert result.score == pytest.approx(0.6 / 0.65)


def test_auto_falls_through_logprobs_then_json_then_the_score_line() -> None:
    class NoExtras:
        """A client like a server without logprobs or structured output."""

        inner = ScriptedLLM(["plain text, no logprobs", "not json", "Fine.\nSCORE: 40"])

        def chat(self, messages: Any, **params: Any) -> Completion:
            return self.inner.chat(messages, **params)

    # Treated like a real client (auto starts at logprobs): force the full chain.
    judge = Judge(NoExtras(), method="auto")
    judge.methods = [JudgeMethod.LOGPROBS, JudgeMethod.JSON_SCHEMA, JudgeMethod.SCORE_LINE]
    result = judge.grade("Is it polite?", "Thanks!")
    assert (result.score, result.method, result.reason) == (0.4, JudgeMethod.SCORE_LINE, "Fine.")
    sent = NoExtras.inner.calls
    assert [bool(c.params.get("logprobs")) for c in sent] == [True, False, False]
    assert "response_format" in sent[1].params
    # Each method that gave no score is tried again next time (it was not refused).
    assert judge.methods == [JudgeMethod.LOGPROBS, JudgeMethod.JSON_SCHEMA, JudgeMethod.SCORE_LINE]


def test_a_refused_method_is_dropped_for_good() -> None:
    refusal = ClientRequestError("the server rejected response_format", status=400)
    llm = ScriptedLLM([ConfigError("logprobs not supported"), refusal, "SCORE: 90", "SCORE: 80"])
    judge = Judge(llm)
    judge.methods = [JudgeMethod.LOGPROBS, JudgeMethod.JSON_SCHEMA, JudgeMethod.SCORE_LINE]
    assert judge.grade("q?", "a").score == 0.9
    assert judge.methods == [JudgeMethod.SCORE_LINE]
    assert judge.grade("q?", "b").score == 0.8
    assert len(llm.calls) == 4


def test_a_json_score_keeps_its_reason() -> None:
    llm = ScriptedLLM(['{"reason": "warm and thankful", "score": 85}'])
    result = Judge(llm, method="json_schema").grade("Is it polite?", "Thanks!")
    assert (result.score, result.reason) == (0.85, "warm and thankful")
    schema = llm.calls[0].params["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["reason", "score"]
    assert result.describe() == "score 0.85 (json_schema): warm and thankful"


def test_a_failed_call_on_the_last_method_is_raised() -> None:
    with pytest.raises(RuntimeError, match="down"):
        Judge(ScriptedLLM([RuntimeError("down")])).grade("q?", "t")


def test_auto_picks_by_client() -> None:
    assert Judge(ScriptedLLM()).methods == [JudgeMethod.SCORE_LINE]
    with pytest.raises(ConfigError, match="'vibes'"):
        Judge(ScriptedLLM(), method="vibes")


@pytest.mark.parametrize(
    ("good", "bad", "threshold"),
    [
        ([0.5, 0.45], [0.3, 0.2], 0.375),
        ([0.9], [0.1], 0.5),
        # Overlapping: 0.2 and 0.5 both get 3 of 4 right and are equally near
        # the centre of the means (0.35); the lower one wins.
        ([0.3, 0.6], [0.4, 0.1], 0.2),
    ],
)
def test_fit_threshold(good: list[float], bad: list[float], threshold: float) -> None:
    assert fit_threshold(good, bad) == pytest.approx(threshold)


def test_fit_threshold_needs_both_kinds() -> None:
    with pytest.raises(ConfigError, match="at least one good and one bad"):
        fit_threshold([0.5], [])


def test_llm_check_calibrates_once_and_says_how_it_scored() -> None:
    shares = {"kind": (0.30, 0.70), "nice": (0.28, 0.72), "rude": (0.10, 0.9), "mean": (0.12, 0.88)}
    shares |= {"warm": (0.33, 0.67), "glad": (0.29, 0.71), "rough": (0.08, 0.92)}
    shares |= {"cold": (0.11, 0.89), "thanks": (0.25, 0.75), "idiot": (0.15, 0.85)}

    def reply(messages: list[Message], params: dict[str, Any]) -> Completion:
        return yes_no(*shares[messages[-1].content.split("\n\n", 1)[0]])

    # A front client whose model offers log-probabilities (as a server's does).
    fake = ScriptedLLM(fn=reply)
    client = FrontClient(fake, offers_logprobs=True)
    criteria = (
        CompletionCriteria.builder()
        .with_llm(client)
        .llm_check(
            "Is the text polite?",
            good=["kind", "nice", "warm", "glad"],
            bad=["rude", "mean", "rough", "cold"],
        )
        .build()
    )
    [polite] = criteria.evaluate("thanks")
    [rude] = criteria.evaluate("idiot")
    assert polite.passed
    assert not rude.passed
    assert polite.score == pytest.approx(0.25)
    # Threshold halfway between the good (lowest 0.28) and bad (highest 0.12)
    # examples; the given threshold (0.7, the default) fails every polite one.
    assert (
        "threshold 0.20 (calibrated on 4 good and 4 bad examples; leave-one-out accuracy 8/8; "
        "the uncalibrated 0.7: 4/8) [logprobs]" in polite.message
    )
    assert len(fake.calls) == 8 + 2  # the examples once, then one call per output


def test_calibration_on_two_and_two_is_refused_before_any_call() -> None:
    llm = ScriptedLLM(default="SCORE: 50")
    with pytest.raises(ConfigError, match="at least 4 good and 4 bad examples, got 2 good"):
        Judge(llm).calibrate("Polite?", ["a", "b"], ["c", "d"])
    with pytest.raises(ConfigError, match="at least 4 good and 4 bad"):
        LLMJudgeEvaluator(llm).calibrate(good=[("a", "a!")] * 4, bad=[("b", "a")] * 3)
    assert llm.calls == []


def test_a_calibration_that_does_not_help_keeps_the_uncalibrated_threshold_and_warns() -> None:
    # What the issue measured on fresh texts: at 0.5 the judge already
    # separates most examples; the threshold fitted on these overlapping
    # scores classifies the examples left out of the fit worse.
    good = [0.56, 0.64, 0.44, 0.58]
    bad = [0.38, 0.47, 0.61, 0.42]
    with pytest.warns(UserWarning, match="calibrating the judge did not help"):
        fit = JudgeCalibration.fit(good, bad)
    assert fit.uncalibrated_accuracy == 6 / 8
    assert fit.cv_accuracy < fit.uncalibrated_accuracy
    assert fit.kept_uncalibrated
    assert fit.threshold == 0.5
    assert fit.fitted == pytest.approx(0.515)  # what was fitted, and not kept
    assert "kept: calibrating did not help" in fit.describe()


def test_a_calibration_that_hurts_leaves_the_evaluators_threshold_alone() -> None:
    scores = {"g1": 56, "g2": 64, "g3": 44, "g4": 58, "b1": 38, "b2": 47, "b3": 61, "b4": 42}

    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        answer = messages[-1].content.split("Answer: ")[1].split("\n")[0]
        return f"SCORE: {scores[answer]}"

    judge = LLMJudgeEvaluator(ScriptedLLM(fn=reply))
    with pytest.warns(UserWarning, match="keeping the uncalibrated threshold"):
        fit = judge.calibrate(
            good=[(f"g{i}", "x") for i in range(1, 5)], bad=[(f"b{i}", "x") for i in range(1, 5)]
        )
    assert fit.kept_uncalibrated
    assert judge.threshold is None  # raw scores, as before calibrating


def test_llm_check_calibration_needs_both_kinds() -> None:
    with pytest.raises(ConfigError, match="both good= and bad="):
        CompletionCriteria.builder().with_llm(ScriptedLLM()).llm_check("q?", good=["a"])


def test_judge_evaluator_calibrated_scores_are_accuracy() -> None:
    # A small judge's scores crowd low: at 0.5 three right answers fail; the
    # threshold fitted between the two groups classifies every example right
    # even when it is left out of the fit.
    replies = {"Paris": "SCORE: 45", "Paris.": "SCORE: 42", "paris": "SCORE: 48"}
    replies |= {"PARIS!": "SCORE: 60", "Lyon": "SCORE: 20", "Lille": "SCORE: 25"}
    replies |= {"Metz": "SCORE: 30", "Brest": "SCORE: 22", "Rome": "SCORE: 40", "Nice": "SCORE: 33"}

    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        answer = messages[-1].content.split("Answer: ")[1].split("\n")[0]
        return replies[answer]

    judge = LLMJudgeEvaluator(ScriptedLLM(fn=reply))
    fit = judge.calibrate(
        good=[("Paris", "Paris!"), ("Paris.", "Paris!"), ("paris", "Paris!"), ("PARIS!", "x")],
        bad=[("Lyon", "Paris"), ("Lille", "Paris"), ("Metz", "Paris"), ("Brest", "Paris")],
    )
    assert isinstance(fit, JudgeCalibration)
    assert (fit.cv_accuracy, fit.uncalibrated_accuracy) == (1.0, 5 / 8)
    assert judge.threshold == pytest.approx(0.36)
    assert judge.evaluate("Rome", "Paris") == 1.0
    assert judge.evaluate("Nice", "Paris") == 0.0
    assert judge.methods_used["score_line"] == 8 + 2
    explained = judge.explain("Nice", "Paris")
    assert explained is not None
    assert explained.score == pytest.approx(0.33)


def test_the_judges_reason_reaches_the_check_and_every_case_record() -> None:
    from tnsai_eval.evaluation import score_prompt
    from tnsai_eval.optimizer import PromptOptimizer
    from tnsai_eval.scoring import TestCase

    judge_llm = ScriptedLLM(default="Warm and thankful.\nSCORE: 90")
    criteria = CompletionCriteria.builder().with_llm(judge_llm).llm_check("Polite?", 0.5).build()
    [outcome] = criteria.evaluate("Thanks!")
    assert outcome.reason == "Warm and thankful."
    assert outcome.message.endswith("[score_line]: Warm and thankful.")

    # The optimizer's and score_prompt's case records keep it too.
    model = ScriptedLLM(default="Lyon")
    evaluator = LLMJudgeEvaluator(judge_llm)
    evaluation = score_prompt(model, "Capital?", [TestCase("France", "Paris")], evaluator=evaluator)
    assert evaluation.cases[0].reason == "Warm and thankful."
    result = PromptOptimizer(model, evaluator=evaluator, max_iterations=1, split=None).optimize(
        "Capital?", [TestCase("France", "Paris")]
    )
    assert {row.reason for row in result.case_results} == {"Warm and thankful."}
    assert set(result.to_dataframe()["reason"]) == {"Warm and thankful."}
    # An exact match needs no judge and has no reason.
    exact = score_prompt(
        ScriptedLLM(default="Paris"), "Capital?", [TestCase("France", "Paris")], evaluator=evaluator
    )
    assert exact.cases[0].reason is None
