"""The judge on the embedded model: does it give a usable score to every text?

Grades 40 texts written for this benchmark against "Is the text polite?" with
``llm_check``'s judge on ``LocalLLM`` (nothing configured) and prints:

* the score and method of each text (all 40 must get a score);
* the AUC of the scores on the 24 polite/rude texts (the chance that a random
  polite text scores above a random rude one);
* the accuracy on 20 held-out polite/rude texts after calibrating the
  threshold on 4 labelled ones (2 polite, 2 rude); the target is >= 16/20.

The other 16 texts are neither clearly polite nor rude (neutral statements,
code, numbers, other languages, very short or long): they check that the
judge scores whatever it is given.

Run: ``.venv/bin/python bench/judge.py`` (about half a minute on 2 cores).
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
]
CALIBRATION_RUDE = [
    "Shut up and do your job, you useless idiot.",
    "This is garbage. Are you stupid or just lazy?",
]
POLITE = [
    "Good morning! I hope you are well. May I ask a quick question?",
    "Thanks for waiting, and sorry for the delay in getting back to you.",
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
    "Get out of my way, moron.",
    "Nobody cares about your stupid opinion.",
    "You are an idiot and your work is garbage.",
    "Stop wasting my time, you clueless fool.",
    "What a pathetic excuse for a report. Do it again, idiot.",
    "Shut your mouth, nobody asked you.",
    "Your service is crap and you are all incompetent morons.",
    "Move, you fat lazy slob.",
    "Are you deaf or just dumb? I said no.",
    "Go away and never talk to me again, loser.",
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


def main() -> None:
    judge = Judge(LocalLLM())
    started = time.perf_counter()
    calibration = judge.calibrate(QUESTION, CALIBRATION_POLITE, CALIBRATION_RUDE)
    print(
        f"calibrated on {len(CALIBRATION_POLITE)} polite and {len(CALIBRATION_RUDE)} rude: "
        f"threshold {calibration.threshold:.3f} (polite "
        f"{', '.join(f'{s:.3f}' for s in calibration.good)}; rude "
        f"{', '.join(f'{s:.3f}' for s in calibration.bad)})"
    )
    texts = (
        [(t, "polite") for t in CALIBRATION_POLITE + POLITE]
        + [(t, "rude") for t in CALIBRATION_RUDE + RUDE]
        + [(t, "other") for t in OTHER]
    )
    scores: dict[str, list[float]] = {"polite": [], "rude": []}
    scored = right = held_out = 0
    methods: set[str] = set()
    print(f"\n{'score':>6}  {'method':<11} {'label':<7} {'call':<7} text")
    for text, label in texts:
        result = judge.grade(QUESTION, text)
        methods.add(result.method.value)
        if result.score is None:
            print(f"{'none':>6}  {result.method.value:<11} {label:<7} {'':<7} {text[:50]!r}")
            continue
        scored += 1
        call = ""
        if label != "other":
            scores[label].append(result.score)
            calibrating = text in CALIBRATION_POLITE or text in CALIBRATION_RUDE
            polite = result.score >= calibration.threshold
            call = "polite" if polite else "rude"
            if not calibrating:
                held_out += 1
                right += (label == "polite") == polite
        first_line = text.splitlines()[0]
        print(
            f"{result.score:6.3f}  {result.method.value:<11} {label:<7} {call:<7} {first_line[:50]}"
        )
    elapsed = time.perf_counter() - started
    print(f"\nscored {scored}/{len(texts)} texts ({', '.join(sorted(methods))}) in {elapsed:.1f} s")
    print(f"AUC polite vs rude (24 texts): {auc(scores['polite'], scores['rude']):.3f}")
    print(f"held-out accuracy after calibrating on 4: {right}/{held_out}")


if __name__ == "__main__":
    main()
