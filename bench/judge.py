"""The judge on the embedded model: does it give a usable score to every text?

Grades 40 texts written for this benchmark against "Is the text polite?" with
``llm_check``'s judge on ``LocalLLM`` (nothing configured) and prints:

* the score and method of each text (all 40 must get a score);
* the AUC of the scores on the 24 polite/rude texts (the chance that a random
  polite text scores above a random rude one);
* the calibration on 8 labelled ones (4 polite, 4 rude: fewer are refused):
  the fitted threshold, its leave-one-out accuracy on those 8 and the
  uncalibrated threshold's (0.5), and the threshold kept;
* the accuracy on the 16 other polite/rude texts at the uncalibrated 0.5 and
  at the kept threshold.

The other 16 texts are neither clearly polite nor rude (neutral statements,
code, numbers, other languages, very short or long): they check that the
judge scores whatever it is given. Then 20 more polite/rude texts, written
after every choice about the judge's request was made on the first 24
(``FRESH_POLITE``, ``FRESH_RUDE``): AUC and accuracy at both thresholds on
texts nothing was tuned on.

Run: ``.venv/bin/python bench/judge.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import itertools
import time

from tnsai_eval.llm import LocalLLM
from tnsai_eval.scoring import Judge

QUESTION = "Is the text polite?"

CALIBRATION_POLITE = [
    "Thank you so much for your help, I really appreciate it.",
    "Could you please send me the report when you have a moment? Many thanks.",
    "Good morning! I hope you are well. May I ask a quick question?",
    "Thanks for waiting, and sorry for the delay in getting back to you.",
]
CALIBRATION_RUDE = [
    "Shut up and do your job, you useless idiot.",
    "This is garbage. Are you stupid or just lazy?",
    "Get out of my way, moron.",
    "Nobody cares about your stupid opinion.",
]
POLITE = [
    "Would you mind closing the door, please? Thank you kindly.",
    "I am grateful for your patience while we fix the problem.",
    "Please let me know if there is anything else I can do for you.",
    "It was a pleasure meeting you, and thank you for your time.",
    "Excuse me, could you tell me the way to the station, please?",
    "We appreciate your feedback and will gladly look into it.",
    "Thank you for the lovely dinner, it was wonderful.",
    "Sorry to bother you, but could you help me with this form?",
]
RUDE = [
    "You are an idiot and your work is garbage.",
    "Stop wasting my time, you clueless fool.",
    "What a pathetic excuse for a report. Do it again, idiot.",
    "Shut your mouth, nobody asked you.",
    "Your service is crap and you are all incompetent morons.",
    "Move, you fat lazy slob.",
    "Are you deaf or just dumb? I said no.",
    "Go away and never talk to me again, loser.",
]
# Written after the judge's request was chosen on the texts above: nothing was tuned on these.
FRESH_POLITE = [
    "Thank you for fixing my bike so quickly, you made my day.",
    "Could I trouble you for a glass of water, please?",
    "Welcome aboard! Let us know if you need anything at all.",
    "I really enjoyed your talk; thank you for sharing your slides.",
    "Please accept my apologies for missing the call this morning.",
    "Your help with the move meant a lot to us. Thank you!",
    "May I suggest a small change to the second paragraph, if that is all right?",
    "Congratulations on the new job, you truly deserve it.",
    "Kindly find the signed form attached. Have a pleasant afternoon.",
    "Thanks again for your patience, it is much appreciated.",
]
FRESH_RUDE = [
    "Fix it yourself, I am not your servant.",
    "That was the dumbest idea I have heard all week.",
    "Quit whining and get back to work.",
    "Your cooking tastes like cardboard, honestly disgusting.",
    "Nobody invited you, so stop talking.",
    "Learn to read before you send me another useless email.",
    "Ugh, you again? Just leave.",
    "Keep your pathetic excuses to yourself.",
    "Are you really this slow, or are you doing it on purpose?",
    "Hand it over now and spare me your lies.",
]
OTHER = [
    "The train leaves at 9:15 from platform 4.",
    "def add(a, b):\n    return a + b",
    "42",
    "ok",
    "Le chat dort sur le canapé.",
    "Der Bericht ist fertig.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Meeting moved to Thursday.",
    "Send the file.",
    "SELECT name FROM users WHERE id = 7;",
    "The quarterly figures show a 3% rise in revenue, driven mainly by the new "
    "subscription plan, while costs stayed flat across all regions and teams.",
    "I disagree with the proposal, for three reasons that I will explain below.",
    "Hmm.",
    "Your order #1234 has shipped.",
    "The password must be at least 12 characters long.",
    "Lunch is in the fridge.",
]


def auc(positive: list[float], negative: list[float]) -> float:
    """The chance that a random positive scores above a random negative (ties: half)."""
    pairs = list(itertools.product(positive, negative))
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs)
    return wins / len(pairs)


def accuracy(scores: dict[str, list[float]], threshold: float) -> str:
    """``right/n``: polite at or above ``threshold``, rude below."""
    right = sum(s >= threshold for s in scores["polite"])
    right += sum(s < threshold for s in scores["rude"])
    return f"{right}/{len(scores['polite']) + len(scores['rude'])}"


def main() -> None:
    judge = Judge(LocalLLM())
    started = time.perf_counter()
    calibration = judge.calibrate(QUESTION, CALIBRATION_POLITE, CALIBRATION_RUDE)
    print(
        f"calibrated on {len(CALIBRATION_POLITE)} polite and {len(CALIBRATION_RUDE)} rude: "
        f"fitted {calibration.fitted:.3f}, {calibration.checked}; kept "
        f"{calibration.threshold:.3f} (polite "
        f"{', '.join(f'{s:.3f}' for s in calibration.good)}; rude "
        f"{', '.join(f'{s:.3f}' for s in calibration.bad)})"
    )
    texts = (
        [(t, "polite", "tuned") for t in CALIBRATION_POLITE + POLITE]
        + [(t, "rude", "tuned") for t in CALIBRATION_RUDE + RUDE]
        + [(t, "other", "tuned") for t in OTHER]
        + [(t, "polite", "fresh") for t in FRESH_POLITE]
        + [(t, "rude", "fresh") for t in FRESH_RUDE]
    )
    scores: dict[str, dict[str, list[float]]] = {
        key: {"polite": [], "rude": []} for key in ("tuned", "held out", "fresh")
    }
    scored = 0
    methods: set[str] = set()
    print(f"\n{'score':>6}  {'method':<11} {'label':<7} {'set':<6} {'call':<7} text")
    for text, label, group in texts:
        result = judge.grade(QUESTION, text)
        methods.add(result.method.value)
        if result.score is None:
            print(f"{'none':>6}  {result.method.value:<11} {label:<7} {group:<6} {text[:50]!r}")
            continue
        scored += 1
        call = ""
        if label != "other":
            scores[group][label].append(result.score)
            calibrating = text in CALIBRATION_POLITE or text in CALIBRATION_RUDE
            if group == "tuned" and not calibrating:
                scores["held out"][label].append(result.score)
            call = "polite" if result.score >= calibration.threshold else "rude"
        first_line = text.splitlines()[0]
        print(
            f"{result.score:6.3f}  {result.method.value:<11} {label:<7} {group:<6} {call:<7} "
            f"{first_line[:50]}"
        )
    elapsed = time.perf_counter() - started
    print(f"\nscored {scored}/{len(texts)} texts ({', '.join(sorted(methods))}) in {elapsed:.1f} s")
    tuned, held, fresh = scores["tuned"], scores["held out"], scores["fresh"]
    print(f"AUC polite vs rude, the 24 texts the request was chosen on: {auc(**_pr(tuned)):.3f}")
    print(f"AUC polite vs rude, 20 fresh texts: {auc(**_pr(fresh)):.3f}")
    for name, subset in (("the 16 not calibrated on", held), ("the 20 fresh", fresh)):
        print(
            f"accuracy on {name}: {accuracy(subset, calibration.uncalibrated)} at the "
            f"uncalibrated {calibration.uncalibrated:g}, {accuracy(subset, calibration.fitted)} "
            f"at the fitted {calibration.fitted:.3f}, {accuracy(subset, calibration.threshold)} "
            f"at the kept {calibration.threshold:.3f}"
        )


def _pr(group: dict[str, list[float]]) -> dict[str, list[float]]:
    return {"positive": group["polite"], "negative": group["rude"]}


if __name__ == "__main__":
    main()
