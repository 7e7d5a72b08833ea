"""``tpugraphs submit SUB.csv``: send a submission to a leaderboard server of the kit, or to Kaggle.

Both destinations validate with the kit's validator first where they can. The server upload uses
``competition.data.remote.leaderboard_client`` (standard library only); ``--kaggle`` uses
``competition.data.remote.kaggle_api`` and needs no part of the leaderboard. Standard library only at
import time.
"""

from __future__ import annotations

import argparse
import os
import sys

TOKEN_ENV = "TPUGRAPHS_TOKEN"

SUBMIT_HELP = "upload a submission to a leaderboard server (its public score) or to Kaggle (--kaggle)"
SUBMIT_EPILOG = f"""\
The server validates the file, scores it and answers at once; an invalid file is refused with the
reason and does not count toward the daily limit. The token can also come from ${TOKEN_ENV}
(safer than the command line, which other users of the machine may see).

exit status: 0 scored, 1 refused by the server or server unreachable, 2 usage error

With --kaggle the file goes to Kaggle's competition (predict-ai-model-runtime) through the 'kaggle'
package and its credentials (see 'tpugraphs download --help'), after a local check: against the test
files of --data when given, otherwise format rules only (test IDs and config counts unknown).

If the connection drops after the file was sent, the upload may still have been scored and counted:
'tpugraphs submit --status' shows the team's latest submissions and what is left of today's limit.

examples:
  tpugraphs submit submission.csv --server http://localhost:8000 --token 3.Xf0... -m "GNN, 3 layers"
  tpugraphs submit --status --server http://localhost:8000 --token 3.Xf0...
  TPUGRAPHS_TOKEN=3.Xf0... tpugraphs submit submission.csv --server https://lb.example.org
  tpugraphs submit submission.csv --kaggle -m "GNN v2" --data data/kaggle
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("submit", help=SUBMIT_HELP, description=SUBMIT_HELP + ".",
                                   epilog=SUBMIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", metavar="SUB.csv", nargs="?",
                        help="the submission file (ID,TopConfigs)")
    parser.add_argument("--status", action="store_true",
                        help="upload nothing: show the team's latest submissions and today's remaining limit")
    parser.add_argument("--server", metavar="URL", help="leaderboard server, e.g. http://localhost:8000")
    parser.add_argument("--token", metavar="TOKEN", help=f"your team token (default: ${TOKEN_ENV})")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                        help="seconds to wait for the server's answer (default: 300)")
    parser.add_argument("--kaggle", action="store_true",
                        help="submit to the Kaggle competition instead of a leaderboard server")
    parser.add_argument("-m", "--message", metavar="MESSAGE",
                        help="submission description, shown in your history (required with --kaggle)")
    parser.add_argument("--data", metavar="PUBLIC_DIR",
                        help="with --kaggle: validate against the test files of this data directory first")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from competition.commands.arguments import SUBMISSION_FILE, require_file
    from competition.errors import UsageError

    if args.status and (args.submission or args.kaggle):
        raise UsageError("--status uploads nothing: leave out the file and --kaggle")
    if not args.status and not args.submission:
        raise UsageError("which file? give SUB.csv (or --status to see your submissions)")
    if not args.status:
        require_file(args.submission, SUBMISSION_FILE)
    if args.kaggle:
        return _submit_kaggle(args)
    return _submit_to_server(args)


def _submit_to_server(args: argparse.Namespace) -> int:
    from competition.data.remote.leaderboard_client import (
        ServerRefused,
        ServerUnreachable,
        format_answer,
        format_status,
        my_submissions,
        upload_submission,
    )
    from competition.errors import UsageError

    if args.data is not None:
        raise UsageError("--data goes with --kaggle")
    if not args.server:
        raise UsageError("where to? give --server URL (a leaderboard's address) or --kaggle (the Kaggle "
                         "competition)")
    if not args.server.startswith(("http://", "https://")):
        raise UsageError(f"--server {args.server!r}: expected an http:// or https:// URL")
    token = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise UsageError(f"give your team token with --token TOKEN or ${TOKEN_ENV}")
    try:
        if args.status:
            print(format_status(my_submissions(args.server, token, timeout=min(args.timeout, 60.0))))
            return 0
        answer = upload_submission(args.server, token, args.submission, timeout=args.timeout,
                                   description=args.message)
    except ServerUnreachable as exc:
        print(f"tpugraphs submit: {exc}", file=sys.stderr)
        return 1
    except ServerRefused as exc:
        print(f"tpugraphs submit: refused (HTTP {exc.status}):\n{exc.detail}", file=sys.stderr)
        return 1
    print(format_answer(answer))
    return 0


def _submit_kaggle(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.data.remote.kaggle_api import KaggleError, check_submission, submit
    from competition.errors import DataFormatError, UsageError

    if args.server or args.token:
        raise UsageError("--kaggle submits to Kaggle: leave out --server and --token")
    if not args.message or not args.message.strip():
        raise UsageError('--kaggle needs a description: -m "MESSAGE"')
    if args.data is not None and not Path(args.data).is_dir():
        raise UsageError(f"--data {args.data}: no such directory")
    try:
        valid, report = check_submission(Path(args.submission), Path(args.data) if args.data else None)
    except (FileNotFoundError, DataFormatError) as exc:
        print(f"tpugraphs submit: cannot read the test files: {exc}", file=sys.stderr)
        return 1
    if not valid:
        print(f"{report}\ntpugraphs submit: not submitted (fix the file first)", file=sys.stderr)
        return 1
    print(report, file=sys.stderr)
    try:
        answer = submit(Path(args.submission), args.message)
    except KaggleError as exc:
        print(f"tpugraphs submit: {exc}", file=sys.stderr)
        return 1
    print(f"Submitted to Kaggle: {answer}")
    return 0
