"""What each ``tpugraphs leaderboard ACTION`` does, once ``leaderboard.commands`` has parsed it:
``HANDLERS`` maps an action to its handler. The server's dependencies load inside the handlers.
"""

from __future__ import annotations

import argparse
import os
import sys


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
def init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.collections import COLLECTIONS
    from competition.data.graphs import expected_from_data_dir
    from competition.data.locate import resolve_data_dir
    from competition.data.tree import split_dir
    from competition.errors import DataFormatError, SolutionFormatError, UsageError
    from leaderboard.service import Leaderboard, parse_solution, solution_mismatches

    _check_rules(args)
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
        # The folder the test files are really in (a synth OUT: its public/).
        data = resolve_data_dir(args.data)
        expected = expected_from_data_dir(data, covered)
    except (FileNotFoundError, DataFormatError) as exc:
        return _fail(f"cannot read the public test files: {exc}")
    uncovered = [c.name for c in COLLECTIONS
                 if c not in covered and any(split_dir(data, c, "test").glob("*.npz"))]
    mismatches = solution_mismatches(solution.expected_configs(), expected)
    if mismatches:
        return _fail(f"{args.solution} does not match the test files under {args.data}:\n  "
                     + "\n  ".join(mismatches))
    try:
        leaderboard = Leaderboard.initialise(
            _open(args.db, create=True).db, name=args.name, solution_csv=solution_csv,
            daily_limit=args.daily_limit, max_selected=args.max_selected, deadline=deadline,
            private_intervals=args.private_intervals,
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
        print("After the reveal the private board shows each team's private score with a 95% bootstrap "
              "interval.")
    print("The solution is stored in the database: keep the database and its backups private.")
    if uncovered:
        print(f"note: the competition covers {', '.join(solution.labels)} only; the public data also holds "
              f"test files of {', '.join(uncovered)}, whose rows submissions must leave out", file=sys.stderr)
    if not usage["Public"] or not usage["Private"]:
        print("warning: the solution has no " + ("Public" if not usage["Public"] else "Private")
              + " rows; that board will stay at 0.0", file=sys.stderr)
    print(f"Next: tpugraphs leaderboard add-team --db {args.db} NAME; "
          f"then tpugraphs leaderboard serve --db {args.db}")
    return 0


def _checked(check, *values):
    """``check(*values)``, a ValueError turned into a one-line UsageError."""
    from competition.errors import UsageError

    try:
        return check(*values)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _check_rules(args: argparse.Namespace) -> None:
    from leaderboard.service.competition import check_rule, check_title

    if args.name is not None:
        _checked(check_title, args.name)
    for key in ("daily_limit", "max_selected"):
        if getattr(args, key) is not None:
            _checked(check_rule, key, getattr(args, key))


@_guard
def configure(args: argparse.Namespace) -> int:
    from competition.errors import UsageError

    _check_rules(args)
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
def add_team(args: argparse.Namespace) -> int:
    from competition.errors import UsageError

    try:
        team, token = _open(args.db).add_team(args.team)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"Added team {team.name!r} (id {team.id}). Its token, shown only this once:", file=sys.stderr)
    print(token)
    return 0


@_guard
def rename_team(args: argparse.Namespace) -> int:
    from leaderboard.names import check_team_name

    _checked(check_team_name, args.new_name)
    team = _open(args.db).rename_team(args.team, args.new_name)
    print(f"Team {args.team!r} (id {team.id}) is now called {team.name!r}.")
    return 0


@_guard
def reset_token(args: argparse.Namespace) -> int:
    team, token = _open(args.db).reset_token(args.team)
    print(f"New token for team {team.name!r} (the old one and every signed-in browser of the team no longer "
          "work), shown only this once:",
          file=sys.stderr)
    print(token)
    return 0


@_guard
def serve(args: argparse.Namespace) -> int:
    from competition.errors import SolutionFormatError
    from leaderboard.database import read_only_reason, sqlite_file
    from leaderboard.settings import Settings

    _check_serve(args)
    trusted_proxies = _trusted_proxies(args.trusted_proxy)
    unavailable = _cannot_listen(args.host, args.port)
    if unavailable:
        return _fail(f"cannot listen on {args.host}:{args.port}: {unavailable}")
    leaderboard = _open(args.db)
    config = leaderboard.config()  # clear refusals now rather than a traceback from a worker
    try:
        leaderboard.load_solution()
    except SolutionFormatError as exc:
        return _fail(f"the stored solution does not parse with this kit: {exc}")
    leaderboard.db.dispose()
    path = sqlite_file(args.db)
    if path is not None and (reason := read_only_reason(path)):
        print(f"note: the database can only be read ({reason}): pages are served; uploads, sign-ins and "
              "selections answer 503 and /health says read-only until it is writable", file=sys.stderr)
    settings = Settings(db_url=args.db, max_upload_bytes=int(args.max_upload_mb * 2**20),
                        scoring_timeout_s=args.scoring_timeout, scoring_slots=args.scoring_slots,
                        board_cache_s=args.board_cache, max_uncounted_per_day=args.max_uncounted_per_day,
                        max_team_bytes=int(args.max_team_mb * 2**20), public_url=args.public_url.rstrip("/"),
                        secure_cookies=args.secure_cookies or args.public_url.startswith("https://"),
                        full_disclosure=args.full_disclosure, header_timeout_s=args.header_timeout,
                        body_timeout_s=args.body_timeout, trusted_proxies=trusted_proxies)
    import uvicorn

    log_config = _log_config(args.log_level)
    print(f"Serving {config.name!r} on http://{args.host}:{args.port} ({args.workers} process"
          f"{'es' if args.workers > 1 else ''}); API reference at /docs", file=sys.stderr)
    from leaderboard.server import deadline_protocol

    # Slow clients are closed (leaderboard.server); an idle kept-alive connection after 5 s (uvicorn's).
    # Who may name the client (X-Forwarded-For) and the scheme (X-Forwarded-Proto): only the trusted
    # proxies, set here explicitly (uvicorn would otherwise read $FORWARDED_ALLOW_IPS).
    proxies = {"proxy_headers": trusted_proxies != "none"}
    if trusted_proxies != "none":
        proxies["forwarded_allow_ips"] = trusted_proxies
    common = {"host": args.host, "port": args.port, "log_config": log_config, "log_level": args.log_level,
              **proxies}
    try:
        if args.workers == 1:
            from leaderboard.app import create_app

            uvicorn.run(create_app(settings), http=deadline_protocol(args.header_timeout, args.body_timeout),
                        **common)
        else:  # each worker process imports the app itself and reads its settings from the environment
            os.environ.update(settings.to_env())
            uvicorn.run("leaderboard.app:app_from_env", factory=True, workers=args.workers,
                        http="leaderboard.server:DeadlineProtocol", **common)
    except OSError as exc:  # the address is taken, or the host name does not resolve
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    return 0


def _check_serve(args: argparse.Namespace) -> None:
    """``serve``'s numbers and host, each refused in one line (UsageError) before anything starts."""
    import ipaddress
    import math
    import socket

    from competition.errors import UsageError

    numbers = (("--max-upload-mb", args.max_upload_mb), ("--scoring-timeout", args.scoring_timeout),
               ("--board-cache", args.board_cache), ("--max-team-mb", args.max_team_mb),
               ("--header-timeout", args.header_timeout), ("--body-timeout", args.body_timeout))
    for option, value in numbers:
        if not math.isfinite(value):
            raise UsageError(f"{option} {value}: expected a finite number")
    if args.workers < 1 or args.scoring_slots < 1 or args.max_upload_mb <= 0 or args.scoring_timeout <= 0:
        raise UsageError("--workers, --scoring-slots, --max-upload-mb and --scoring-timeout must be positive")
    if args.board_cache < 0:
        raise UsageError("--board-cache must be 0 (no caching) or more")
    if args.max_uncounted_per_day < 1 or args.max_team_mb <= 0:
        raise UsageError("--max-uncounted-per-day and --max-team-mb must be positive")
    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port is a number from 1 to 65535")
    if not (0 < args.header_timeout <= 3600 and 0 < args.body_timeout <= 3600):
        raise UsageError("--header-timeout and --body-timeout are seconds, more than 0 and at most 3600")
    if args.scoring_timeout > 3600 or args.board_cache > 3600:
        raise UsageError("--scoring-timeout and --board-cache are seconds, at most 3600")
    if args.max_upload_mb > 1024 or args.max_team_mb > 1024 * 1024 or args.scoring_slots > 256 \
            or args.workers > 256 or args.max_uncounted_per_day > 1_000_000:
        raise UsageError("--max-upload-mb is at most 1024, --max-team-mb at most 1048576, --workers and "
                         "--scoring-slots at most 256, --max-uncounted-per-day at most 1000000")
    if args.public_url and not args.public_url.startswith(("http://", "https://")):
        raise UsageError(f"--public-url {args.public_url!r}: expected an http:// or https:// URL")
    try:
        ipaddress.ip_address(args.host)
    except ValueError:
        try:  # a name: it must resolve here (999.1.1.1 is no address and resolves to nothing)
            socket.getaddrinfo(args.host, args.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise UsageError(f"--host {args.host!r}: not an IP address, nor a name this machine resolves "
                             "(e.g. 127.0.0.1, 0.0.0.0, ::, localhost)") from None


def _cannot_listen(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (an address of another machine, a port in use),
    found by binding a socket as uvicorn will; None when it can."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            probe.bind(address)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _trusted_proxies(text: str) -> str:
    """``--trusted-proxy``'s value, checked: 'none', '*', or comma-separated addresses and networks."""
    import ipaddress

    from competition.errors import UsageError

    value = text.strip()
    if value.lower() == "none" or value == "*":
        return value.lower()
    items = [item.strip() for item in value.split(",") if item.strip()]
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise UsageError(f"--trusted-proxy {item!r}: expected an IP address or network (10.0.0.0/8), "
                             "comma-separated, or 'none'") from None
    if not items:
        raise UsageError("--trusted-proxy: give addresses or networks, or 'none'")
    return ",".join(items)


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
def rescore(args: argparse.Namespace) -> int:
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
    print(f"Rescored {summary.rescored} submissions with scorer {summary.version}: "
          f"{summary.changed} changed.")
    for change, count in sorted(summary.status_changes.items()):
        print(f"  {change}: {count}")
    print("Restart running servers so that new uploads use this scorer too.")
    return 0


@_guard
def reveal(args: argparse.Namespace) -> int:
    from leaderboard.boards import private_board

    leaderboard = _open(args.db)
    config = leaderboard.reveal()
    _fill_intervals(leaderboard, config)
    board = private_board(leaderboard.db, config.max_selected, intervals=config.private_intervals)
    print(f"Revealed: submissions are closed and the private leaderboard ({len(board)} teams) is public. "
          "Running servers show it within a second.")
    for entry in board[:10]:
        interval = (f"  [{entry.interval['low']:.6f}, {entry.interval['high']:.6f}]" if entry.has_interval
                    else "")
        print(f"  {entry.rank:>3}  {entry.score:.6f}{interval}  {entry.team}")
    return 0


@_guard
def disqualify(args: argparse.Namespace) -> int:
    team = _open(args.db).disqualify(args.team, reason=args.reason, undo=args.undo)
    outcome = "reinstated" if args.undo else "disqualified: off both leaderboards, uploads refused"
    print(f"Team {team.name!r} {outcome}.")
    return 0


@_guard
def export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.errors import UsageError
    from leaderboard.boards import board_csv, private_board, public_board
    from leaderboard.models import utcnow

    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {args.out}: the folder {out.parent} does not exist")
    if out.is_dir():
        raise UsageError(f"--out {args.out}: that is a folder; give a file name")
    leaderboard = _open(args.db)
    config = leaderboard.config()
    if args.board == "public":
        entries = public_board(leaderboard.db)
    else:
        entries = private_board(leaderboard.db, config.max_selected)
        if not config.private_visible(utcnow()):
            print("warning: the private leaderboard is not revealed yet; this file holds private scores, "
                  "do not share it", file=sys.stderr)
    try:
        out.write_text(board_csv(entries))
    except OSError as exc:
        raise UsageError(f"--out {args.out}: cannot write it ({exc.strerror})") from None
    print(f"Wrote the {args.board} leaderboard ({len(entries)} teams) to {args.out}")
    return 0


class _Refusal(Exception):
    """An input that cannot be exported: one line, exit 1."""


def _codabench_source(args: argparse.Namespace):
    """``(solution CSV, where it came from, title, daily limit, final selections, deadline)`` from --db or
    from --solution, with the options' overrides."""
    from pathlib import Path

    from competition.errors import UsageError
    from leaderboard.errors import NotInitialised
    from leaderboard.service.competition import check_rule, check_title

    name, daily_limit, max_selected, deadline = "TpuGraphs leaderboard", 5, 1, None
    if args.solution is not None:
        if not Path(args.solution).is_file():
            raise UsageError(f"--solution {args.solution}: no such file")
        solution_csv, source = Path(args.solution).read_bytes(), args.solution
    else:
        try:
            leaderboard = _open(args.db)
            config = leaderboard.config()
        except NotInitialised as exc:
            raise UsageError(f"{exc.message}. export-codabench writes a whole Codabench bundle of a "
                             "competition: give --db of one made by 'tpugraphs leaderboard init', or "
                             "--solution SOLUTION.csv with --deadline, and --data PUBLIC_DIR") from None
        solution_csv, source = leaderboard.verified_solution_csv(), args.db
        name, daily_limit, max_selected, deadline = (config.name, config.daily_limit, config.max_selected,
                                                     config.deadline)
    name = _checked(check_title, args.name if args.name is not None else name)
    if args.daily_limit is not None:
        daily_limit = _checked(check_rule, "daily_limit", args.daily_limit)
    if args.deadline is not None:
        deadline = _deadline(args.deadline)
    if deadline is None:
        raise UsageError("the competition has no deadline, and Codabench's phases need one: give --deadline")
    return solution_csv, source, name, daily_limit, max_selected, deadline


def _codabench_data(args: argparse.Namespace, solution_csv: bytes, source: str):
    """The public data folder (checked against the solution), or None with --data-url."""
    from competition.data.graphs import expected_from_data_dir
    from competition.data.locate import resolve_data_dir
    from competition.errors import DataFormatError, SolutionFormatError
    from leaderboard.service import parse_solution, solution_mismatches

    try:
        solution = parse_solution(solution_csv)
    except SolutionFormatError as exc:
        raise _Refusal(f"unusable solution ({source}): {exc}") from None
    if args.data is None:
        return None
    try:
        data_dir = resolve_data_dir(args.data, "--data")
        covered = [labels.collection for labels in solution.labels.values()]
        expected = expected_from_data_dir(data_dir, covered)
    except (FileNotFoundError, DataFormatError) as exc:
        raise _Refusal(f"cannot read the public test files: {exc}") from None
    mismatches = solution_mismatches(solution.expected_configs(), expected)
    if mismatches:
        raise _Refusal(f"the solution ({source}) does not match the test files under {args.data}:\n  "
                       + "\n  ".join(mismatches))
    return data_dir


def _check_codabench(bundle: str) -> int:
    from pathlib import Path

    from competition.errors import UsageError
    from leaderboard.codabench.check import check_bundle

    if not Path(bundle).exists():
        raise UsageError(f"--check {bundle}: no such file or folder")
    try:
        problems = check_bundle(Path(bundle))
    except ImportError:
        raise UsageError("--check reads competition.yaml with PyYAML, as Codabench does: "
                         "pip install pyyaml") from None
    for problem in problems:
        print(f"{bundle}: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"{bundle}: passes Codabench's rules for a version-2 bundle and the kit's privacy rule.")
    return 0


@_guard
def export_codabench(args: argparse.Namespace) -> int:
    """The competition (from --db, or from --solution and the options) as a Codabench bundle."""
    from datetime import UTC
    from pathlib import Path

    from competition.errors import UsageError
    from leaderboard.codabench import DEFAULT_DOCKER_IMAGE, BundleError, HostRules, export_bundle
    from leaderboard.codabench.backport import BackportError
    from leaderboard.codabench.bundle import notebooks_folder
    from leaderboard.models import utcnow
    from leaderboard.views import parse_deadline

    if args.check is not None:
        return _check_codabench(args.check)
    if args.out is None:
        raise UsageError("give --out BUNDLE.zip (the bundle to write) or --check BUNDLE.zip")
    if args.data is None and args.data_url is None:
        raise UsageError("give --data PUBLIC_DIR (bundled as the public data) or --data-url URL (where "
                         "participants download it)")
    if args.data_url is not None and not args.data_url.startswith(("http://", "https://")):
        raise UsageError(f"--data-url {args.data_url!r}: expected an http:// or https:// URL")
    solution_csv, source, name, daily_limit, max_selected, deadline = _codabench_source(args)
    start = (_checked(parse_deadline, args.start) if args.start is not None
             else utcnow().replace(second=0, microsecond=0))
    rules = HostRules(title=name, start=start.replace(tzinfo=UTC), deadline=deadline.replace(tzinfo=UTC),
                      daily_limit=daily_limit, max_selected=max_selected)
    try:
        data_dir = _codabench_data(args, solution_csv, source)
        summary = export_bundle(Path(args.out), solution_csv=solution_csv, rules=rules, data_dir=data_dir,
                                data_url=args.data_url, notebooks=notebooks_folder(),
                                docker_image=args.docker_image or DEFAULT_DOCKER_IMAGE)
    except FileExistsError as exc:
        raise UsageError(f"--out {exc}") from None
    except (_Refusal, BundleError, BackportError) as exc:
        return _fail(str(exc))
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if deadline <= utcnow():
        print("warning: the deadline has passed: on Codabench the competition is closed from the start",
              file=sys.stderr)
    if max_selected > 1:
        print(f"note: the competition lets teams select {max_selected} final submissions; on Codabench "
              "one submission per participant reaches the private phase, the best public one "
              "(docs/leaderboard.md, Codabench)", file=sys.stderr)
    megabytes = summary.size / 1e6
    print(f"Wrote the Codabench bundle {summary.path} ({megabytes:,.1f} MB): {name!r}, "
          f"{summary.public_rows} public and {summary.private_rows} private test graphs, deadline "
          f"{deadline:%Y-%m-%d %H:%M} UTC, {daily_limit} submissions a day, public data "
          f"{summary.public_data}, {summary.notebooks} starter notebooks.")
    print(f"Uploading it uses about {2 * megabytes:,.0f} MB of your Codabench storage quota (15 GB by "
          "default): the bundle, and the datasets made from it.")
    print("Before publishing, check the pages and terms, the dates and the Docker image on Codabench "
          "(docs/leaderboard.md, Codabench); run the sample submission on both tasks.")
    return 0


HANDLERS = {"init": init, "configure": configure, "add-team": add_team, "reset-token": reset_token,
            "rename-team": rename_team, "serve": serve, "rescore": rescore, "reveal": reveal,
            "disqualify": disqualify, "export": export, "export-codabench": export_codabench}
