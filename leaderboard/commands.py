"""``tpugraphs leaderboard ...``: hosting a leaderboard (``tpugraphs submit``, for participants, is in
``competition/commands/submit.py``: it also submits to Kaggle, which needs no part of the server).

Standard library only at import time; the server's dependencies load inside the handlers.
"""

from __future__ import annotations

import argparse
import os
import sys

DB_ENV = "TPUGRAPHS_LEADERBOARD_DB"
# Under runs/, which git ignores: the database holds the hidden labels and must never be committed.
DEFAULT_DB = "sqlite:///runs/leaderboard.db"

LEADERBOARD_HELP = "host a leaderboard: init, add-team, serve, rescore, reveal, export, upgrade"
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

    def action(name: str, help_text: str, handler, epilog: str | None = None) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text + ".", epilog=epilog,
                                 formatter_class=_formatter())
        _add_db(sub)
        sub.set_defaults(handler=_default_db_folder_made(handler))
        return sub

    init = action("init", "create a competition from a solution file and the public test data", _init,
                  "The solution's IDs and config counts must match the public test files. The solution "
                  "is stored in the database\n(the server needs nothing else); keep the database private.\n\n"
                  "example:\n  tpugraphs leaderboard init --solution private/solution.csv --data public "
                  "--deadline 2030-06-30T23:59Z")
    init.add_argument("--solution", required=True, metavar="SOLUTION.csv",
                      help="hidden labels: ID,Runtimes,Normalizers,Usage")
    init.add_argument("--data", required=True, metavar="PUBLIC_DIR",
                      help="the participants' data directory (Kaggle layout) holding the test npz files")
    init.add_argument("--name", default="TpuGraphs leaderboard", metavar="TITLE", help="competition title")
    _add_rules(init, defaults=True)

    configure = action("configure", "change the title, limits, deadline or private intervals of a competition",
                       _configure,
                       "example:\n  tpugraphs leaderboard configure --deadline 2030-07-07T23:59Z --daily-limit 3\n"
                       "  tpugraphs leaderboard configure --private-intervals")
    configure.add_argument("--name", metavar="TITLE", help="competition title")
    _add_rules(configure, defaults=False)

    add_team = action("add-team", "register a team and print its token (last line)", _add_team,
                      "The token is shown once; only its hash is stored. Give it to the team privately.")
    add_team.add_argument("team", metavar="NAME", help="team name as shown on the leaderboard")

    reset = action("reset-token", "give a team a new token (the old one stops working); prints it last",
                   _reset_token)
    reset.add_argument("team", metavar="NAME", help="team name")

    serve = action("serve", "run the leaderboard web server (pages, HTTP API, its reference at /docs)", _serve,
                   "examples:\n  tpugraphs leaderboard serve\n"
                   "  tpugraphs leaderboard serve --db postgresql+psycopg://lb@dbhost/lb --host 0.0.0.0 --workers 4")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
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
    serve.add_argument("--public-url", default="", metavar="URL",
                       help="the address participants use (https://lb.example.org), when a proxy in front "
                            "rewrites the Host header: web forms are accepted only from this origin")
    serve.add_argument("--full-disclosure", action="store_true",
                       help="after the close, team pages show the private score of every scored submission "
                            "(default: only of each team's final ones, as on Kaggle)")
    serve.add_argument("--secure-cookies", action="store_true",
                       help="participants use HTTPS through a proxy that sends no X-Forwarded-Proto: give the "
                            "session cookie the __Host- prefix and Secure anyway (implied by an https "
                            "--public-url)")
    serve.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))

    action("rescore", "score every submission again with this kit's scorer", _rescore,
           "Run after upgrading the kit (a metric fix), then restart the servers. Every scored or "
           "invalid submission\nis scored again and records the scorer version that scored it. Failed "
           "and refused ones stay\nas they are (their teams were told to submit again); quotas are not "
           "touched.")

    action("reveal", "close the competition and show the private leaderboard", _reveal)

    action("upgrade", "bring a database made by an older kit to this kit's schema", _upgrade,
           "It only adds what the newer schema has (columns, in one transaction); run it once, with the "
           "servers stopped,\nafter upgrading the kit. A database made by a newer kit is refused.")

    disqualify = action("disqualify", "take a team off both leaderboards and refuse its uploads", _disqualify)
    disqualify.add_argument("team", metavar="TEAM", help="team name")
    disqualify.add_argument("--reason", help="recorded with the disqualification (host-side)")
    disqualify.add_argument("--undo", action="store_true", help="reinstate the team")

    export = action("export", "write a leaderboard as CSV (full-precision scores)", _export)
    export.add_argument("--board", choices=("public", "private"), default="public")
    export.add_argument("--out", required=True, metavar="FILE.csv")

    codabench = actions.add_parser(
        "export-codabench", help="write the scorer as a Codabench scoring program",
        description="Write the kit's scorer as a Codabench scoring program (score.py, metadata.yaml and a "
                    "copy of the scoring modules).", formatter_class=_formatter(),
        epilog="example:\n  tpugraphs leaderboard export-codabench --out codabench_program && "
               "(cd codabench_program && zip -r ../program.zip .)")
    codabench.add_argument("--out", required=True, metavar="DIR", help="new or empty folder")
    codabench.set_defaults(handler=_export_codabench)


def _add_rules(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    parser.add_argument("--daily-limit", type=int, default=5 if defaults else None, metavar="N",
                        help="scored submissions per team per UTC day" + (" (default: 5)" if defaults else ""))
    parser.add_argument("--max-selected", type=int, default=2 if defaults else None, metavar="N",
                        help="final submissions a team may select" + (" (default: 2)" if defaults else ""))
    parser.add_argument("--deadline", metavar="ISO-8601",
                        help="end of submissions, e.g. 2030-06-30T23:59Z (no zone = UTC)"
                             + ("" if defaults else "; 'none' removes it"))
    intervals_help = ("after the reveal, show each team's private score with a 95%% bootstrap interval over the "
                      "Private test graphs")
    if defaults:
        parser.add_argument("--private-intervals", action="store_true", help=intervals_help + " (default: off)")
    else:
        parser.add_argument("--private-intervals", action=argparse.BooleanOptionalAction, default=None,
                            help=intervals_help + "; --no-private-intervals hides them")


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    from competition.errors import EXIT_USAGE

    return EXIT_USAGE


# ---------------------------------------------------------------------------------------------
# Handlers


def _fail(message: str) -> int:
    print(f"tpugraphs leaderboard: {message}", file=sys.stderr)
    return 1


def _open(url: str, *, create: bool = False):
    """A Leaderboard on ``url``; UsageError for a malformed URL or a missing driver.

    Only ``create`` (init) makes a new SQLite file; otherwise a missing one is refused (NotInitialised).
    """
    from competition.errors import UsageError
    from leaderboard.database import Database, DatabaseURLError
    from leaderboard.service import Leaderboard

    try:
        return Leaderboard(Database(url)) if create else Leaderboard.open_existing(url)
    except DatabaseURLError as exc:
        raise UsageError(str(exc)) from None


def _deadline(text: str | None, *, allow_none: bool = False):
    from competition.errors import UsageError
    from leaderboard.views import parse_deadline

    if text is None:
        return None
    if allow_none and text.strip().lower() == "none":
        return "none"
    try:
        deadline = parse_deadline(text)
    except ValueError as exc:
        raise UsageError(f"--deadline: {exc}") from None
    from leaderboard.models import utcnow

    if deadline <= utcnow():  # allowed (a competition closed at once), but rarely what a host means
        print(f"warning: the deadline {text} is in the past: the competition is closed, no upload will be "
              f"accepted; give a later --deadline (or 'tpugraphs leaderboard configure --deadline ...')",
              file=sys.stderr)
    return deadline


def _guard(handler):
    """Turn the errors every host command can meet into one clear line and exit 1."""
    import functools

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from sqlalchemy.exc import OperationalError, SQLAlchemyError

        from leaderboard.errors import LeaderboardError

        try:
            return handler(args)
        except LeaderboardError as exc:
            return _fail(exc.message)
        except OperationalError as exc:
            return _fail(f"cannot use the database {args.db}: {exc.orig}")
        except SQLAlchemyError as exc:
            return _fail(f"database error on {args.db}: {exc.__class__.__name__}: {exc}")

    return run


@_guard
def _init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.collections import COLLECTIONS
    from competition.data.graphs import expected_from_data_dir
    from competition.data.locate import resolve_data_dir, split_dir
    from competition.errors import DataFormatError, SolutionFormatError, UsageError
    from leaderboard.service import Leaderboard, parse_solution, solution_mismatches

    if not Path(args.solution).is_file():
        raise UsageError(f"{args.solution}: no such file")
    if not Path(args.data).is_dir():
        raise UsageError(f"{args.data}: no such directory")
    deadline = _deadline(args.deadline)
    solution_csv = Path(args.solution).read_bytes()
    try:
        solution = parse_solution(solution_csv)
    except SolutionFormatError as exc:
        return _fail(f"unusable solution file {args.solution}: {exc}")
    # The competition is the solution's collections (all five, or fewer for a partial one).
    covered = [c for c in COLLECTIONS if c.name in solution.labels]
    try:
        data = resolve_data_dir(args.data)  # the folder the test files are really in (a synth OUT: its public/)
        expected = expected_from_data_dir(data, covered)
    except (FileNotFoundError, DataFormatError) as exc:
        return _fail(f"cannot read the public test files: {exc}")
    uncovered = [c.name for c in COLLECTIONS if c not in covered and any(split_dir(data, c, "test").glob("*.npz"))]
    mismatches = solution_mismatches(solution.expected_configs(), expected)
    if mismatches:
        return _fail(f"{args.solution} does not match the test files under {args.data}:\n  "
                     + "\n  ".join(mismatches))
    try:
        leaderboard = Leaderboard.initialise(
            _open(args.db, create=True).db, name=args.name, solution_csv=solution_csv, daily_limit=args.daily_limit,
            max_selected=args.max_selected, deadline=deadline, private_intervals=args.private_intervals,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    usage = {"Public": 0, "Private": 0, "Ignored": 0}
    for labels in solution.labels.values():
        for code, name in enumerate(usage):
            usage[name] += int((labels.usage == code).sum())
    config = leaderboard.config()
    print(f"Created competition {config.name!r} in {args.db}: {solution.num_rows} test graphs "
          f"({usage['Public']} public, {usage['Private']} private, {usage['Ignored']} ignored).")
    print(f"Daily limit {config.daily_limit}, {config.max_selected} final selections, deadline "
          f"{args.deadline or 'none (close with: tpugraphs leaderboard reveal)'}.")
    if config.private_intervals:
        print("After the reveal the private board shows each team's private score with a 95% bootstrap interval.")
    print("The solution is stored in the database: keep the database and its backups private.")
    if uncovered:
        print(f"note: the competition covers {', '.join(solution.labels)} only; the public data also holds test "
              f"files of {', '.join(uncovered)}, whose rows submissions must leave out", file=sys.stderr)
    if not usage["Public"] or not usage["Private"]:
        print("warning: the solution has no " + ("Public" if not usage["Public"] else "Private")
              + " rows; that board will stay at 0.0", file=sys.stderr)
    print(f"Next: tpugraphs leaderboard add-team --db {args.db} NAME; then tpugraphs leaderboard serve --db {args.db}")
    return 0


@_guard
def _configure(args: argparse.Namespace) -> int:
    from competition.errors import UsageError

    changes: dict[str, object] = {}
    if args.name is not None:
        changes["name"] = args.name
    if args.daily_limit is not None:
        changes["daily_limit"] = args.daily_limit
    if args.max_selected is not None:
        changes["max_selected"] = args.max_selected
    deadline = _deadline(args.deadline, allow_none=True)
    if deadline is not None:
        changes["deadline"] = None if deadline == "none" else deadline
    if args.private_intervals is not None:
        changes["private_intervals"] = args.private_intervals
    if not changes:
        raise UsageError("nothing to change; give --name, --daily-limit, --max-selected, --deadline or "
                         "--[no-]private-intervals")
    leaderboard = _open(args.db)
    try:
        config = leaderboard.configure(**changes)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from leaderboard.views import iso

    print(f"{config.name!r}: daily limit {config.daily_limit}, {config.max_selected} final selections, "
          f"deadline {iso(config.deadline) or 'none'}, private score intervals "
          f"{'on' if config.private_intervals else 'off'}. Running servers pick this up within a second.")
    _fill_intervals(leaderboard, config)
    return 0


def _fill_intervals(leaderboard, config) -> None:
    """Once the private board is shown, compute the intervals it lacks now (the server would do it on
    its first private board, keeping that request waiting)."""
    import time

    from leaderboard.boards import private_board
    from leaderboard.models import utcnow

    if not (config.private_intervals and config.private_visible(utcnow())):
        return
    started = time.monotonic()
    board = private_board(leaderboard.db, config.max_selected, intervals=True)
    computed = leaderboard.fill_private_intervals([e.submission_id for e in board if e.interval is None])
    if computed:
        print(f"Computed the private score interval of {computed} counted submission(s) in "
              f"{time.monotonic() - started:.1f} s.")


@_guard
def _add_team(args: argparse.Namespace) -> int:
    from competition.errors import UsageError

    try:
        team, token = _open(args.db).add_team(args.team)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"Added team {team.name!r} (id {team.id}). Its token, shown only this once:", file=sys.stderr)
    print(token)
    return 0


@_guard
def _reset_token(args: argparse.Namespace) -> int:
    team, token = _open(args.db).reset_token(args.team)
    print(f"New token for team {team.name!r} (the old one no longer works), shown only this once:",
          file=sys.stderr)
    print(token)
    return 0


@_guard
def _serve(args: argparse.Namespace) -> int:
    from competition.errors import UsageError
    from leaderboard.settings import Settings

    if args.workers < 1 or args.scoring_slots < 1 or args.max_upload_mb <= 0 or args.scoring_timeout <= 0:
        raise UsageError("--workers, --scoring-slots, --max-upload-mb and --scoring-timeout must be positive")
    if args.board_cache < 0:
        raise UsageError("--board-cache must be 0 (no caching) or more")
    if args.max_uncounted_per_day < 1 or args.max_team_mb <= 0:
        raise UsageError("--max-uncounted-per-day and --max-team-mb must be positive")
    if args.public_url and not args.public_url.startswith(("http://", "https://")):
        raise UsageError(f"--public-url {args.public_url!r}: expected an http:// or https:// URL")
    from competition.errors import SolutionFormatError

    leaderboard = _open(args.db)
    config = leaderboard.config()  # clear refusals now rather than a traceback from a worker
    try:
        leaderboard.load_solution()
    except SolutionFormatError as exc:
        return _fail(f"the stored solution does not parse with this kit: {exc}")
    leaderboard.db.dispose()
    settings = Settings(db_url=args.db, max_upload_bytes=int(args.max_upload_mb * 2**20),
                        scoring_timeout_s=args.scoring_timeout, scoring_slots=args.scoring_slots,
                        board_cache_s=args.board_cache, max_uncounted_per_day=args.max_uncounted_per_day,
                        max_team_bytes=int(args.max_team_mb * 2**20), public_url=args.public_url.rstrip("/"),
                        secure_cookies=args.secure_cookies or args.public_url.startswith("https://"),
                        full_disclosure=args.full_disclosure)
    import uvicorn

    log_config = _log_config(args.log_level)
    print(f"Serving {config.name!r} on http://{args.host}:{args.port} ({args.workers} process"
          f"{'es' if args.workers > 1 else ''}); API reference at /docs", file=sys.stderr)
    if args.workers == 1:
        from leaderboard.app import create_app

        uvicorn.run(create_app(settings), host=args.host, port=args.port, log_config=log_config,
                    log_level=args.log_level)
    else:  # each worker process imports the app itself and reads its settings from the environment
        os.environ.update(settings.to_env())
        uvicorn.run("leaderboard.app:app_from_env", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_config=log_config, log_level=args.log_level)
    return 0


def _log_config(level: str) -> dict:
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["leaderboard"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    # No token sent in a URL reaches the log: query values are redacted (leaderboard.access_log).
    config.setdefault("filters", {})["redact_query"] = {"()": "leaderboard.access_log.RedactQuery"}
    config["handlers"]["access"]["filters"] = ["redact_query"]
    return config


@_guard
def _rescore(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from competition.errors import SolutionFormatError
    from leaderboard.version import SCORER_VERSION

    leaderboard = _open(args.db)
    leaderboard.config()
    try:
        solution = leaderboard.load_solution()
    except SolutionFormatError as exc:
        return _fail(f"the stored solution no longer parses with this kit: {exc}")

    def progress(ids, total):
        return tqdm(ids, total=total, desc="rescoring", unit="submission", disable=not sys.stderr.isatty())

    summary = leaderboard.rescore(solution, SCORER_VERSION, progress=progress)
    print(f"Rescored {summary.rescored} submissions with scorer {summary.version}: {summary.changed} changed.")
    for change, count in sorted(summary.status_changes.items()):
        print(f"  {change}: {count}")
    print("Restart running servers so that new uploads use this scorer too.")
    return 0


@_guard
def _reveal(args: argparse.Namespace) -> int:
    from leaderboard.boards import private_board

    leaderboard = _open(args.db)
    config = leaderboard.reveal()
    _fill_intervals(leaderboard, config)
    board = private_board(leaderboard.db, config.max_selected, intervals=config.private_intervals)
    print(f"Revealed: submissions are closed and the private leaderboard ({len(board)} teams) is public. "
          "Running servers show it within a second.")
    for entry in board[:10]:
        interval = f"  [{entry.interval['low']:.6f}, {entry.interval['high']:.6f}]" if entry.has_interval else ""
        print(f"  {entry.rank:>3}  {entry.score:.6f}{interval}  {entry.team}")
    return 0


@_guard
def _upgrade(args: argparse.Namespace) -> int:
    before, after = _open(args.db).upgrade()
    print(f"Schema version {before} -> {after}." if before != after else f"Already at schema version {after}.")
    return 0


@_guard
def _disqualify(args: argparse.Namespace) -> int:
    team = _open(args.db).disqualify(args.team, reason=args.reason, undo=args.undo)
    print(f"Team {team.name!r} {'reinstated' if args.undo else 'disqualified: off both leaderboards, uploads refused'}.")
    return 0


@_guard
def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from leaderboard.boards import board_csv, private_board, public_board
    from leaderboard.models import utcnow

    leaderboard = _open(args.db)
    config = leaderboard.config()
    if args.board == "public":
        entries = public_board(leaderboard.db)
    else:
        entries = private_board(leaderboard.db, config.max_selected)
        if not config.private_visible(utcnow()):
            print("warning: the private leaderboard is not revealed yet; this file holds private scores, "
                  "do not share it", file=sys.stderr)
    Path(args.out).write_text(board_csv(entries))
    print(f"Wrote the {args.board} leaderboard ({len(entries)} teams) to {args.out}")
    return 0


def _export_codabench(args: argparse.Namespace) -> int:
    from competition.errors import UsageError
    from leaderboard.codabench import export_scoring_program

    try:
        out = export_scoring_program(args.out)
    except FileExistsError as exc:
        raise UsageError(str(exc)) from None
    print(f"Wrote a Codabench scoring program to {out}; zip its contents: (cd {out} && zip -r ../program.zip .)")
    print(f"See {out}/README.md for the scores.json keys and the Docker image it needs.")
    return 0
