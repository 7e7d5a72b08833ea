"""The ``tpugraphs`` command line.

Each subcommand lives in its own module with ``register(subparsers)``; the module must import only
the standard library at import time (heavy imports go inside the handler) so that ``tpugraphs --help``
and ``tpugraphs score`` start fast. Optional parts of the kit (solutions, leaderboard) register their
commands only when their package is installed.

Exit codes (``competition.errors``): 0 success, 1 the input was checked and found wrong (invalid
submission, unreadable data), 2 usage errors (bad arguments, missing files), 130 Ctrl-C, 143 SIGTERM
(cleaned up the same way). ``main`` is the one place that turns a ``UsageError``, an interruption
(SIGINT or SIGTERM) or a closed output pipe (``tpugraphs inspect ... | head``)
into its exit code; with ``--json`` a usage error, argparse's own included, also prints one JSON
document on stdout (``competition.commands.json_problems``). Commands import ``UsageError`` from
``competition.errors``, never from this module, so registering them creates no import cycle.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

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
    "solutions.solve.command",
    "solutions.rank.command",
    "solutions.tune.command",
    "leaderboard.commands",
)

EXIT_CLOSED_PIPE = 128 + 13  # 128 + SIGPIPE, what a shell reports for `yes | head`
EXIT_INTERRUPTED = 128 + 2  # Ctrl-C (SIGINT)
EXIT_TERMINATED = 128 + 15  # SIGTERM: `kill`, a batch scheduler, a container stopping


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it cleans up exactly as after Ctrl-C (half-written
    files and staging folders removed, the previous results left whole)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


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


class ArgumentsRefused(Exception):
    """argparse refused the command line; ``parser`` is the (sub)parser that did, for its usage line."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors reach ``main`` (which also answers them in JSON for
    ``--json``) instead of exiting inside argparse. Subparsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentsRefused(self, message)


def _command_parser(parser: argparse.ArgumentParser, refusing: argparse.ArgumentParser,
                    argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``argv`` names; argparse reports an unrecognized argument from the
    top-level ``parser`` even when it follows a command (``tpugraphs leaderboard init ...`` included)."""
    if refusing is not parser:
        return refusing
    found = parser
    tokens = iter(argv)
    while found._subparsers is not None:
        commands = found._subparsers._group_actions[0].choices
        found = next((commands[token] for token in tokens if token in commands), None)
        if found is None:
            return refusing
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except ArgumentsRefused as exc:  # argparse's usage error, with its exit status 2
        refusing = _command_parser(parser, exc.parser, argv)
        refusing.print_usage(sys.stderr)
        print(f"{refusing.prog}: error: {exc.message}", file=sys.stderr)
        from competition.commands.json_problems import json_in_argv, message_problem, problems_document

        if json_in_argv(refusing, argv):  # --json: stdout still carries one document
            print(problems_document([message_problem(exc.message)], EXIT_USAGE))
        raise SystemExit(EXIT_USAGE) from None
    if not getattr(args, "handler", None):
        parser.print_help()
        return EXIT_USAGE
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
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
        return _usage_error(args, str(exc))
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        print("terminated" if terminated else "interrupted", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except ModuleNotFoundError as exc:
        # An optional part of the kit (a pyproject extra) that is not installed: say which to install.
        from competition.commands.extras import missing_extra_message

        message = missing_extra_message(exc)
        if message is None:
            raise
        return _usage_error(args, message)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _usage_error(args: argparse.Namespace, message: str) -> int:
    """A command's usage error: one line on stderr, and with --json one JSON document on stdout."""
    from competition.commands.json_problems import message_problem, problems_document, wants_json

    print(f"tpugraphs {args.command}: error: {message}", file=sys.stderr)
    if wants_json(args):
        print(problems_document([message_problem(message)], EXIT_USAGE))
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
