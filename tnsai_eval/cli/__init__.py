"""The ``tnsai-eval`` command: one private module per subcommand.

``chat``, ``report``, ``refine``, ``optimize`` and ``doctor`` each live in
``tnsai_eval/cli/_<name>.py`` and expose ``add_parser(subparsers)``; the
options several of them share live in ``_common``. ``SUBCOMMANDS`` maps each
name to its module and help line; a run imports only the module of the
subcommand it runs. ``main`` is the console
script (``tnsai-eval = "tnsai_eval.cli:main"``) and also runs as
``python -m tnsai_eval.cli``.

>>> build_parser().parse_args(["chat", "hello"]).command
'chat'
"""

from __future__ import annotations

from tnsai_eval.cli._main import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "build_parser", "main"]
