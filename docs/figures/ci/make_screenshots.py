"""Re-make the HTML report screenshots linked from docs/ci.md.

    PYTHONPATH=. python docs/figures/ci/make_screenshots.py

Three runs of a 12-case labelling suite against one baseline (a regression, a
drop the paired sign test cannot call, an improvement), each written with
``tnsai-eval report --html`` and photographed by headless Chromium.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from tnsai_eval.cli import main
from tnsai_eval.reports import (
    CaseRecord,
    MetricStats,
    PromptRecord,
    Report,
    TestStatus,
    TrackedTest,
)

HERE = Path(__file__).resolve().parent
LABELS = ("billing", "shipping", "repair")
TICKETS = [
    "I was charged twice", "Where is my parcel?", "The screen cracked", "Refund my order",
    "Tracking says delivered", "It will not turn on", "Wrong invoice amount", "Package is late",
    "The hinge broke", "Cancel my subscription", "Sent to the wrong address", "Battery swells",
]  # fmt: skip
PROMPTS = {
    "base": "Label the support ticket.\nAnswer with one word: billing, shipping or repair.\n",
    "regression": "Label the support ticket.\nThink about it, then answer.\n",
    "dropped": "Label the ticket.\nAnswer with one word: billing, shipping or repair.\n",
    "improvement": "Label the support ticket.\nAnswer with exactly one of: billing, shipping, "
    "repair.\nNo other words.\n",
}
RIGHT = {
    "base": {0, 1, 2, 3, 4, 5, 6},
    "regression": {0, 1},
    "dropped": {0, 1, 2, 3},
    "improvement": set(range(12)),
}


def _run(version: str) -> Report:
    cases = []
    for i, text in enumerate(TICKETS):
        label = LABELS[i % 3]
        ok = i in RIGHT[version]
        reply = label if ok else f"{LABELS[(i + 1) % 3]}, maybe {label}?"
        cases.append(CaseRecord(f"t{i:02d}", text, label, output=reply, score=float(ok), passed=ok))
    mean = sum(c.score or 0.0 for c in cases) / len(cases)
    prompt = PROMPTS[version]
    test = TrackedTest(
        "tests/prompts/test_support.py::test_triage",
        TestStatus.PASSED,
        {"score": MetricStats("score", (mean,))},
        cases=tuple(cases),
        prompts=(
            PromptRecord("score", prompt, f"{sum(map(ord, prompt)):08x}", "prompts/support.txt"),
        ),
    )
    config = {"model": "gpt-4o-mini", "record_mode": "replay", "gate": "paired", "alpha": 0.05}
    return Report(tests=(test,), config=config, created="2026-12-01T16:00:00+00:00")


def main_() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = _run("base").save(folder / "baseline.json")
        for version in ("regression", "dropped", "improvement"):
            report = _run(version).save(folder / f"{version}.json")
            page = folder / f"{version}.html"
            main(["report", str(report), "--baseline", str(base), "--html", str(page)])
            subprocess.run(
                ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                 "--hide-scrollbars", "--window-size=1200,1500",
                 f"--screenshot={HERE / f'report_{version}.png'}", page.as_uri()],
                check=True, capture_output=True,
            )  # fmt: skip


if __name__ == "__main__":
    main_()
