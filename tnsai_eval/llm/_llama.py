"""How tnsai-eval loads a llama.cpp model: the one place that builds a ``llama_cpp.Llama``.

``LocalLLM``, the probe's subprocess, the served model's entry point and the
benchmark all load through ``new_llama``, so each runs the same configuration
the probe vouched for.

The one setting beyond ``llama_cpp.Llama``'s own is ``extra_bufts``: llama.cpp's
"extra buffer types" (``use_extra_bufts`` in its model parameters), through
which its CPU backend repacks the weights for faster kernels (AMX tiles on
recent Intel Xeons, wider SIMD elsewhere). It is on by default. A native build
on a machine whose kernel refuses those tile instructions to llama.cpp's worker
threads dies with SIGILL there; loading with ``extra_bufts=False`` avoids the
repacked kernels, at some speed (bench/local_model.py measures how much).

``llama_cpp.Llama`` has no keyword for it (llama-cpp-python 0.3.x; its
``**kwargs`` are ignored). Its constructor takes its model parameters from the
public low-level function ``llama_cpp.llama_cpp.llama_model_default_params()``
at the moment it loads, so ``new_llama(extra_bufts=False)`` swaps in a function
returning those defaults with ``use_extra_bufts = False`` for the duration of
the constructor, under a lock, and restores the original afterwards. The
alternative, driving llama.cpp's low-level API ourselves, would mean
re-implementing the chat templates, grammars and sampling that ``Llama`` gives.
A ``Llama`` built by other code in another thread during those milliseconds
would load without the extra buffer types too: slower, never broken.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tnsai_eval._util.secrets import is_secret_env_name
from tnsai_eval.errors import LocalModelUnavailable
from tnsai_eval.llm._model_path import INSTALL_HINT, package_dirs

__all__ = [
    "build_features",
    "child_env",
    "extra_bufts_setting",
    "import_llama_cpp",
    "library_files",
    "new_llama",
    "run_python",
    "supports_extra_bufts_switch",
]

_DEFAULTS_LOCK = threading.Lock()
# Suffixes of the shared libraries llama-cpp-python ships (Linux, macOS, Windows).
_LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module, or ``LocalModelUnavailable`` with the install command."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise LocalModelUnavailable(
            f"the embedded model needs llama-cpp-python, which is not installed "
            f"({exc}); install it with: {INSTALL_HINT}"
        ) from exc
    return llama_cpp


def supports_extra_bufts_switch() -> bool:
    """Whether the installed llama.cpp's model parameters have ``use_extra_bufts``.

    Older builds lack the field; they can only load with their defaults.
    """
    llama_cpp = import_llama_cpp()
    fields = getattr(llama_cpp.llama_cpp.llama_model_params, "_fields_", ())
    return any(field[0] == "use_extra_bufts" for field in fields)


def new_llama(
    path: Path,
    *,
    n_ctx: int,
    n_threads: int | None,
    seed: int = 0,
    logits_all: bool = False,
    extra_bufts: bool = True,
) -> Any:
    """A ``llama_cpp.Llama`` for ``path``, quiet, with or without the extra buffer types.

    Raises ``LocalModelUnavailable`` when llama-cpp-python is missing or cannot
    load the file.
    """
    llama_cpp = import_llama_cpp()
    with extra_bufts_setting(extra_bufts):
        try:
            return llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                seed=seed,
                logits_all=logits_all,
                # llama.cpp logs every tensor it loads to stderr otherwise.
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise LocalModelUnavailable(
                f"llama.cpp could not load the model file {str(path)!r}: {exc}"
            ) from exc


@contextmanager
def extra_bufts_setting(extra_bufts: bool) -> Iterator[None]:
    """Every ``llama_cpp.Llama`` built inside loads with (default) or without
    llama.cpp's extra buffer types; see the module docstring for how and why.

    Raises ``LocalModelUnavailable`` for ``False`` when the installed llama.cpp
    has no such switch.
    """
    if extra_bufts:
        yield
        return
    llama_cpp = import_llama_cpp()
    if not supports_extra_bufts_switch():
        raise LocalModelUnavailable(
            f"llama-cpp-python {llama_cpp.__version__} cannot load a model without "
            f"llama.cpp's extra buffer types (its model parameters have no "
            f"use_extra_bufts); upgrade it: pip install --upgrade llama-cpp-python"
        )
    low = llama_cpp.llama_cpp
    with _DEFAULTS_LOCK:
        original = low.llama_model_default_params

        def without_extra_bufts() -> Any:
            params = original()
            params.use_extra_bufts = False
            return params

        low.llama_model_default_params = without_extra_bufts
        try:
            yield
        finally:
            low.llama_model_default_params = original


def library_files() -> list[Path]:
    """The shared libraries of the installed llama-cpp-python, found without importing it.

    Empty when it is not installed. These are what a rebuild replaces, so their
    paths, sizes and modification times key the probe's cached verdict.
    """
    folders = [f / "lib" for f in package_dirs("llama_cpp") if (f / "lib").is_dir()]
    return sorted(
        p
        for folder in folders
        for p in folder.iterdir()
        if p.is_file() and any(s in p.name for s in _LIBRARY_SUFFIXES)
    )


def build_features(environ: Mapping[str, str] | None = None) -> str | None:
    """The CPU features the installed llama.cpp was built with (``AVX2 AMX_INT8
    REPACK ...``), read in a subprocess so that a broken build cannot take this
    one down; ``None`` when it cannot be read."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    try:
        done = run_python(code, [], environ, 120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    # "CPU : SSE3 = 1 | AVX = 1 | AVX512 = 0 | REPACK = 1 | ..." -> the ones that are on.
    on = []
    for part in done.stdout.replace("\n", "|").split("|"):
        name, _, value = part.rpartition("=")
        name = name.split(":")[-1].strip()
        if name and value.strip() == "1":
            on.append(name)
    return " ".join(on) or done.stdout.strip() or None


def run_python(
    code: str, args: Sequence[str], environ: Mapping[str, str] | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -c code *args`` in a ``child_env``, no stdin, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=child_env(environ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the subprocesses that run llama.cpp for us (the probe, the
    served model): this one without secrets, and with tnsai-eval importable.

    Secrets never travel: the children need the Python path, not the keys. The
    directory tnsai-eval is imported from goes first on ``PYTHONPATH``, so a
    child imports the same tnsai-eval even when this process found it through
    ``sys.path`` rather than an installation.
    """
    env = os.environ if environ is None else environ
    kept = {k: v for k, v in env.items() if not is_secret_env_name(k)}
    root = Path(__file__).resolve().parents[2]
    # An installed tnsai-eval is found by the child as by this process; putting
    # site-packages ahead of the standard library would be wrong.
    if root.name not in ("site-packages", "dist-packages"):
        paths = [p for p in kept.get("PYTHONPATH", "").split(os.pathsep) if p]
        kept["PYTHONPATH"] = os.pathsep.join([str(root), *(p for p in paths if p != str(root))])
    return kept
