"""``python -m tnsai_eval.cli``: the same as the ``tnsai-eval`` command."""

import sys

from tnsai_eval.cli._main import main

__all__: list[str] = []

# Guarded so that walking the package (the doctest sweep, pydoc) never runs the command.
if __name__ == "__main__":
    sys.exit(main())
