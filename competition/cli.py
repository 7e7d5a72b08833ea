"""The ``tpugraphs`` command line.

Each subcommand lives in its own module with ``register(subparsers)``; the module must import only
the standard library at import time (heavy imports go inside the handler) so that ``tpugraphs --help``
and ``tpugraphs score`` start fast. Optional parts of the kit (solutions, leaderboard) register their
commands only when their package is installed.

Exit codes (``competition.errors``): 0 success, 1 the input was checked and found wrong (invalid
submission, unreadable data), 2 usage errors (bad arguments, missing files). ``main`` is the one place
that turns a ``UsageError``, an interruption or a closed output pipe (``tpugraphs inspect ... | head``)
into its exit code. Commands import ``UsageError`` from ``competition.errors``, never from this module,
so registering them creates no import cycle.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from competition.errors import EXIT_USAGE, UsageError

# Order is the order of `tpugraphs --help`.
COMMAND_MODULES = (
    "competition.commands.synth",
    "competition.commands.prepare",
    "competition.commands.validate",
    "competition.commands.score",
    "competition.commands.report",
    "competition.commands.compare",
    "competition.commands.grade",
    "competition.commands.shakeup",
    "competition.commands.ensemble",
    "competition.commands.featurize",
    "competition.commands.inspect",
    "competition.commands.download",
    "competition.commands.cache",
    "competition.commands.stats",
    "competition.commands.submit",
    "solutions.commands",
    "solutions.rank_command",
    "leaderboard.commands",
)

EXIT_CLOSED_PIPE = 128 + 13  # 128 + SIGPIPE, what a shell reports for `yes | head`


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that Python's final flush of the dead pipe does not print a traceback."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a test's captured stream: nothing to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tpugraphs",
        description=(
            "Competition kit for Kaggle's 'Fast or Slow? Predict AI Model Runtime' (TpuGraphs): "
            "build the embedded competition, validate and score submissions, train reference "
            "solutions, host a leaderboard."
        ),
        epilog="Run 'tpugraphs COMMAND --help' for the options of one command.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # An optional part of the kit that is not present; anything else is a real bug.
            if exc.name is not None and name.startswith(exc.name):
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a closed pipe must fail here, inside the handler below, not at exit
        return code
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as `cat` and `grep` do, with the shell's
        # status for a command ended by SIGPIPE.
        _silence_stdout()
        return EXIT_CLOSED_PIPE
    except UsageError as exc:
        print(f"tpugraphs {args.command}: error: {exc}", file=sys.stderr)
        from competition.commands._json import message_problem, problems_document, wants_json

        if wants_json(args):  # --json: stdout still carries one document
            print(problems_document([message_problem(str(exc))], EXIT_USAGE))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as exc:
        # An optional part of the kit (a pyproject extra) that is not installed: say which to install.
        from competition.commands._extras import missing_extra_message

        message = missing_extra_message(exc)
        if message is None:
            raise
        print(f"tpugraphs {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
