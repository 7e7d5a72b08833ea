"""`tpugraphs` in a child process that a test may interrupt.

A process started in the background by a non-interactive shell (`make test &`, a CI runner) inherits
SIGINT ignored, and Python then installs no handler of its own: Ctrl-C would never reach the child. The
child here restores Python's own handler first, as an interactive terminal gives it.
"""

from __future__ import annotations

import sys

CODE = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from competition.cli import main; sys.exit(main(sys.argv[1:]))")


def argv(*arguments: str) -> list[str]:
    """The command line of a child running ``tpugraphs ARGUMENTS``."""
    return [sys.executable, "-c", CODE, *arguments]
