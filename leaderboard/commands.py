"""``tpugraphs leaderboard ...``: hosting a leaderboard (``tpugraphs submit``, for participants, is in
``competition/commands/submit.py``: it also submits to Kaggle, which needs no part of the server).

This module builds the parser (standard library only at import time); what each action does is in
``leaderboard.actions``, imported when the action runs.
"""

from __future__ import annotations

import argparse
import os

DB_ENV = "TPUGRAPHS_LEADERBOARD_DB"
# Under runs/, which git ignores: the database holds the hidden labels and must never be committed.
DEFAULT_DB = "sqlite:///runs/leaderboard.db"

LEADERBOARD_HELP = "host a leaderboard: init, add-team, serve, rescore, reveal, export"
LEADERBOARD_EPILOG = f"""\
A competition in five commands:
  tpugraphs synth data/comp --scale small                      # or your own public/private split
  tpugraphs leaderboard init --solution data/comp/private/solution.csv --data data/comp/public \\
      --name "TpuGraphs practice" --deadline 2030-06-30T23:59Z
  tpugraphs leaderboard add-team "Team A"                      # prints the team's token
  tpugraphs leaderboard serve --host 0.0.0.0 --port 8000
  tpugraphs submit submission.csv --server http://HOST:8000 --token TOKEN

--db takes a SQLAlchemy URL (default: ${DB_ENV} or {DEFAULT_DB}); PostgreSQL:
  --db postgresql+psycopg://USER:PASSWORD@HOST/DBNAME
The database holds the hidden solution: keep it (and its backups) away from participants.
Host guide: docs/leaderboard.md
"""

def register(subparsers: argparse._SubParsersAction) -> None:
    _register_leaderboard(subparsers)


def _formatter() -> type[argparse.HelpFormatter]:
    return argparse.RawDescriptionHelpFormatter


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", default=os.environ.get(DB_ENV, DEFAULT_DB), metavar="URL",
                        help=f"SQLAlchemy database URL (default: ${DB_ENV} or {DEFAULT_DB})")


def _default_db_folder_made(handler):
    """``handler`` that first makes the default database's folder (``runs/``) when that database is used."""

    def run(args: argparse.Namespace) -> int:
        if args.db == DEFAULT_DB:
            os.makedirs(DEFAULT_DB.removeprefix("sqlite:///").rpartition("/")[0], exist_ok=True)
        return handler(args)

    return run


def _register_leaderboard(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("leaderboard", help=LEADERBOARD_HELP, description=LEADERBOARD_HELP + ".",
                                   epilog=LEADERBOARD_EPILOG, formatter_class=_formatter())
    parser.set_defaults(handler=lambda args: _print_help(parser))
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    def action(name: str, help_text: str, epilog: str | None = None) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text + ".", epilog=epilog,
                                 formatter_class=_formatter())
        _add_db(sub)
        sub.set_defaults(handler=_default_db_folder_made(_handler(name)))
        return sub

    _add_setup_actions(action)
    _add_team_actions(action)
    _add_serve(action("serve", "run the leaderboard web server (pages, HTTP API, its reference at /docs)",
                      "examples:\n  tpugraphs leaderboard serve\n"
                      "  tpugraphs leaderboard serve --db postgresql+psycopg://lb@dbhost/lb "
                      "--host 0.0.0.0 --workers 4"))
    _add_closing_actions(action)
    _add_export_codabench(actions)


def _add_export_codabench(actions: argparse._SubParsersAction) -> None:
    codabench = actions.add_parser(
        "export-codabench", help="write the competition as a Codabench bundle (competition.yaml v2)",
        description="Write the competition as a Codabench competition bundle: competition.yaml (version\n"
                    "2), pages, logo, a public and a private phase around the deadline, the scoring\n"
                    "program, each phase's reference data, a sample submission, the public data and a\n"
                    "starting kit.\n"
                    "The public phase never scores a private row.",
        formatter_class=_formatter(),
        epilog="examples:\n"
               "  tpugraphs leaderboard export-codabench --db sqlite:///runs/leaderboard.db "
               "--data data/comp/public --out bundle.zip\n"
               "  tpugraphs leaderboard export-codabench --solution data/comp/private/solution.csv "
               "--data data/comp/public --deadline 2030-06-30T23:59Z --out bundle.zip\n"
               "  tpugraphs leaderboard export-codabench --check bundle.zip\n"
               "Then upload bundle.zip on Codabench. Host guide: docs/leaderboard.md, Codabench")
    codabench.add_argument("--check", metavar="BUNDLE.zip",
                           help="only check a bundle (a zip or its folder, e.g. after editing it) against "
                                "Codabench's rules and the kit's privacy rule; exit 1 with one line per "
                                "problem")
    codabench.add_argument("--out", metavar="BUNDLE.zip",
                           help="the bundle to write: a new .zip file, or a new or empty folder for its "
                                "files")
    _add_db(codabench)
    codabench.add_argument("--solution", metavar="SOLUTION.csv",
                           help="take the labels from this file instead of --db (then give --deadline)")
    data = codabench.add_mutually_exclusive_group()
    data.add_argument("--data", metavar="PUBLIC_DIR",
                      help="the participants' data folder: bundled as the public data, checked against "
                           "the solution")
    data.add_argument("--data-url", metavar="URL",
                      help="leave the public data out of the bundle; the Data page sends participants here")
    codabench.add_argument("--name", metavar="TITLE", help="competition title (default: the database's)")
    codabench.add_argument("--start", metavar="ISO-8601", help="when submissions open (default: now)")
    codabench.add_argument("--deadline", metavar="ISO-8601",
                           help="end of submissions, e.g. 2030-06-30T23:59Z (default: the database's)")
    codabench.add_argument("--daily-limit", type=int, metavar="N",
                           help="submissions per participant per UTC day (default: the database's, else 5)")
    codabench.add_argument("--docker-image", metavar="IMAGE",
                           help="the image Codabench scores in: Python 3.8+ with numpy "
                                "(default: codalab/codalab-legacy:py312)")
    codabench.set_defaults(handler=_handler("export-codabench"))


def _add_setup_actions(action) -> None:
    """``init`` and ``configure``: the competition's title and rules."""
    init = action("init", "create a competition from a solution file and the public test data",
                  "The solution's IDs and config counts must match the public test files. The solution "
                  "is stored in the database\n(the server needs nothing else); keep the database private.\n\n"
                  "example:\n  tpugraphs leaderboard init --solution private/solution.csv --data public "
                  "--deadline 2030-06-30T23:59Z")
    init.add_argument("--solution", required=True, metavar="SOLUTION.csv",
                      help="hidden labels: ID,Runtimes,Normalizers,Usage")
    init.add_argument("--data", required=True, metavar="PUBLIC_DIR",
                      help="the participants' data directory (Kaggle layout) holding the test npz files")
    init.add_argument("--name", default="TpuGraphs leaderboard", metavar="TITLE",
                      help="competition title (one line, at most 200 characters)")
    _add_rules(init, defaults=True)

    configure = action("configure",
                       "change the title, limits, deadline or private intervals of a competition",
                       "example:\n"
                       "  tpugraphs leaderboard configure --deadline 2030-07-07T23:59Z --daily-limit 3\n"
                       "  tpugraphs leaderboard configure --private-intervals")
    configure.add_argument("--name", metavar="TITLE",
                           help="competition title (one line, at most 200 characters)")
    _add_rules(configure, defaults=False)


def _add_team_actions(action) -> None:
    """Registering, renaming, re-keying and disqualifying teams."""
    add_team = action("add-team", "register a team and print its token (last line)",
                      "The token is shown once; only its hash is stored. Give it to the team privately.\n"
                      "A name that looks like an existing team's (case, spacing, look-alike letters such as "
                      "Cyrillic A) is refused.")
    add_team.add_argument("team", metavar="NAME", help="team name as shown on the leaderboard")

    rename = action("rename-team", "give a team another name (refused when it looks like another team's)")
    rename.add_argument("team", metavar="NAME", help="the team's current name")
    rename.add_argument("new_name", metavar="NEW_NAME", help="its new name")

    reset = action("reset-token", "give a team a new token (the old one and every signed-in browser stop "
                   "working); prints it last")
    reset.add_argument("team", metavar="NAME", help="team name")

    disqualify = action("disqualify", "take a team off both leaderboards and refuse its uploads")
    disqualify.add_argument("team", metavar="TEAM", help="team name")
    disqualify.add_argument("--reason", help="recorded with the disqualification (host-side)")
    disqualify.add_argument("--undo", action="store_true", help="reinstate the team")


def _add_serve(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port, 1-65535 (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, metavar="N", help="server processes (default: 1)")
    serve.add_argument("--max-upload-mb", type=float, default=16.0, metavar="MB",
                       help="largest submission accepted, MiB (default: 16)")
    serve.add_argument("--scoring-timeout", type=float, default=60.0, metavar="S",
                       help="time limit of one scoring, seconds (default: 60)")
    serve.add_argument("--scoring-slots", type=int, default=2, metavar="N",
                       help="submissions scored at once per process (default: 2)")
    serve.add_argument("--board-cache", type=float, default=1.0, metavar="S",
                       help="seconds a computed leaderboard is reused; other processes' new scores show "
                            "within about this (default: 1)")
    serve.add_argument("--max-uncounted-per-day", type=int, default=20, metavar="N",
                       help="uploads per team per UTC day that may end invalid, failed or refused (they do "
                            "not count toward the daily limit); past it uploads get 429 (default: 20)")
    serve.add_argument("--max-team-mb", type=float, default=200.0, metavar="MB",
                       help="stored submission files per team, MiB compressed; past it uploads get 413 "
                            "(default: 200)")
    serve.add_argument("--header-timeout", type=float, default=10.0, metavar="S",
                       help="a request's line and headers must arrive within this; slower connections are "
                            "closed (default: 10)")
    serve.add_argument("--body-timeout", type=float, default=120.0, metavar="S",
                       help="a request's body must arrive within this; slower connections are closed "
                            "(default: 120)")
    serve.add_argument("--public-url", default="", metavar="URL",
                       help="the address participants use (https://lb.example.org), when a proxy in front "
                            "rewrites the Host header: web forms are accepted only from this origin")
    serve.add_argument("--full-disclosure", action="store_true",
                       help="after the close, team pages show the private score of every scored submission "
                            "(default: only of each team's final ones, as on Kaggle)")
    serve.add_argument("--secure-cookies", action="store_true",
                       help="participants use HTTPS through a proxy that sends no X-Forwarded-Proto: "
                            "give the session cookie the __Host- prefix and Secure anyway "
                            "(implied by an https --public-url)")
    serve.add_argument("--trusted-proxy", default="127.0.0.1,::1", metavar="ADDRESSES",
                       help="reverse proxies whose X-Forwarded-For (the client's address, for the token "
                            "throttle) and X-Forwarded-Proto are believed: comma-separated addresses or "
                            "networks, 'none' or '*' (default: 127.0.0.1,::1)")
    serve.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))


def _add_closing_actions(action) -> None:
    """Rescoring, the reveal and the exports."""
    action("rescore", "score every submission again with this kit's scorer",
           "Run after upgrading the kit (a metric fix), then restart the servers. Every scored or "
           "invalid submission\nis scored again and records the scorer version that scored it. Failed "
           "and refused ones stay\nas they are (their teams were told to submit again); quotas are not "
           "touched.")

    action("reveal", "close the competition and show the private leaderboard")

    export = action("export", "write a leaderboard as CSV (full-precision scores)")
    export.add_argument("--board", choices=("public", "private"), default="public")
    export.add_argument("--out", required=True, metavar="FILE.csv",
                        help="the file to write (its folder must exist)")


def _add_rules(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    parser.add_argument("--daily-limit", type=int, default=5 if defaults else None, metavar="N",
                        help="scored submissions per team per UTC day"
                             + (" (default: 5)" if defaults else ""))
    parser.add_argument("--max-selected", type=int, default=2 if defaults else None, metavar="N",
                        help="final submissions a team may select" + (" (default: 2)" if defaults else ""))
    parser.add_argument("--deadline", metavar="ISO-8601",
                        help="end of submissions, e.g. 2030-06-30T23:59Z (no zone = UTC)"
                             + ("" if defaults else "; 'none' removes it"))
    intervals_help = ("after the reveal, show each team's private score with a 95%% bootstrap interval "
                      "over the Private test graphs")
    if defaults:
        parser.add_argument("--private-intervals", action="store_true",
                            help=intervals_help + " (default: off)")
    else:
        parser.add_argument("--private-intervals", action=argparse.BooleanOptionalAction, default=None,
                            help=intervals_help + "; --no-private-intervals hides them")


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    from competition.errors import EXIT_USAGE

    return EXIT_USAGE


def _handler(action: str):
    """The handler of ``action`` (``leaderboard.actions.HANDLERS``), imported when the action runs."""

    def run(args: argparse.Namespace) -> int:
        from leaderboard.actions import HANDLERS

        return HANDLERS[action](args)

    return run
