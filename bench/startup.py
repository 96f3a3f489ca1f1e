"""How long `tnsai-eval` takes to start, and how many modules it loads, beside a bare interpreter.

Each command runs ``--runs`` times (default 5) in a fresh interpreter of this
venv; the script prints the median wall time, the median CPU time of the child
(user + system), the modules loaded at exit, and each figure's ratio to a bare
``python -c pass``. ``--root`` puts another checkout first on ``sys.path``
(``--root /path/to/old/checkout`` measures it side by side).

    .venv/bin/python bench/startup.py
    .venv/bin/python bench/startup.py --root ../main
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Counted as the process exits, whatever way the code before it ends; atexit and
# sys are built in, so the probe itself loads nothing.
_PROBE = "import atexit, sys\natexit.register(lambda: print(len(sys.modules), file=sys.stderr))\n"
COMMANDS: dict[str, str] = {
    "python -c pass": "pass",
    "tnsai-eval --help": "from tnsai_eval.cli import main\nsys.exit(main(['--help']))",
    "tnsai-eval report --help": (
        "from tnsai_eval.cli import main\nsys.exit(main(['report', '--help']))"
    ),
    "tnsai-eval optimize --help": (
        "from tnsai_eval.cli import main\nsys.exit(main(['optimize', '--help']))"
    ),
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(code: str, runs: int, root: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(median wall s, median CPU s, modules at exit) of ``runs`` fresh interpreters."""
    walls, cpus, counts = [], [], []
    for _ in range(runs):
        cpu = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _PROBE + code],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,  # `python -c` puts the working directory first on sys.path
            check=False,
        )
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        counts.append(int(done.stderr.strip().splitlines()[-1]))
    return statistics.median(walls), statistics.median(cpus), int(statistics.median(counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", type=Path, help="a checkout to import tnsai_eval from")
    args = parser.parse_args()
    env = dict(os.environ)
    root = (args.root or Path(__file__).resolve().parents[1]).resolve()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    print(f"tnsai_eval from {root}; median of {args.runs} runs")
    print(f"{'command':<28} {'wall s':>7} {'cpu s':>7} {'modules':>8} {'added':>6} {'cpu x':>6}")
    bare: tuple[float, float, int] | None = None
    for name, code in COMMANDS.items():
        wall, cpu, modules = measure(code, args.runs, root, env)
        bare = bare or (wall, cpu, modules)
        print(
            f"{name:<28} {wall:>7.3f} {cpu:>7.3f} {modules:>8} {modules - bare[2]:>6} "
            f"{cpu / bare[1]:>6.1f}"
        )


if __name__ == "__main__":
    main()
