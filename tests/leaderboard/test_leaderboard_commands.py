"""``tpugraphs leaderboard ...`` and ``tpugraphs submit`` as a host and a participant use them."""

from __future__ import annotations

import csv
import io
import json
import zlib
from pathlib import Path

import pytest
from lb_support import LiveServer, free_port, init_competition

from competition.cli import main
from competition.scoring import load_solution, score_submission
from leaderboard.database import Database
from leaderboard.models import FAILED, INVALID, REFUSED, Submission, Team
from leaderboard.service import Leaderboard
from leaderboard.settings import Settings
from leaderboard.version import SCORER_VERSION


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def initialised(sqlite_url, tiny, capsys) -> str:
    code, out, err = run(capsys, "leaderboard", "init", "--db", sqlite_url, "--solution",
                         str(tiny.solution_path), "--data", str(tiny.data_dir), "--name", "Practice",
                         "--daily-limit", "4", "--deadline", "2099-01-01T12:00+02:00")
    assert code == 0, err
    return sqlite_url


def test_init_stores_the_competition(initialised, tiny):
    config = Leaderboard(Database(initialised)).config()
    assert (config.name, config.daily_limit, config.max_selected) == ("Practice", 4, 2)
    assert config.deadline.isoformat() == "2099-01-01T10:00:00"  # stored as UTC
    assert Leaderboard(Database(initialised)).solution_csv() == tiny.solution_csv


def test_init_refuses_a_second_time(initialised, tiny, capsys):
    code, _, err = run(capsys, "leaderboard", "init", "--db", initialised, "--solution",
                       str(tiny.solution_path), "--data", str(tiny.data_dir))
    assert code == 1 and "already holds a competition" in err


def test_init_refuses_a_solution_that_does_not_match_the_data(tmp_path, tiny, capsys):
    lines = tiny.solution_path.read_text().splitlines()
    row_id, runtimes, normalizers, usage = lines[1].split(",")
    lines[1] = ",".join([row_id, runtimes + ";1234", normalizers + (";1" if normalizers else ""), usage])
    del lines[-1]
    bad = tmp_path / "solution.csv"
    bad.write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "leaderboard", "init", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--solution",
                       str(bad), "--data", str(tiny.data_dir))
    assert code == 1
    assert "has no row in the solution" in err
    assert f"{row_id}: the solution has {len(runtimes.split(';')) + 1} runtimes" in err


@pytest.mark.parametrize("argv, message", [
    (["--solution", "missing.csv", "--data", "."], "missing.csv: no such file"),
    (["--solution", "{solution}", "--data", "{solution}", "--deadline", "soon"], "no such directory"),
    (["--solution", "{solution}", "--data", "{data}", "--deadline", "soon"], "not an ISO-8601"),
    (["--solution", "{solution}", "--data", "{data}", "--db", "nonsense"], "is not a database URL"),
])
def test_init_usage_errors(tiny, capsys, argv, message):
    argv = [a.format(solution=tiny.solution_path, data=tiny.data_dir) for a in argv]
    code, _, err = run(capsys, "leaderboard", "init", *argv)
    assert code == 2 and message in err


def test_add_team_prints_the_token_last_and_stores_only_a_hash(initialised, capsys):
    code, out, _ = run(capsys, "leaderboard", "add-team", "--db", initialised, "Team <A>")
    assert code == 0
    token = out.strip().splitlines()[-1]
    team = Leaderboard(Database(initialised)).authenticate(token)
    assert team.name == "Team <A>"
    db_bytes = Path(initialised.removeprefix("sqlite:///")).read_bytes()
    assert token.split(".")[1].encode() not in db_bytes
    code, _, err = run(capsys, "leaderboard", "add-team", "--db", initialised, "team <a>")
    assert code == 1 and "already exists" in err


def test_reset_token_replaces_the_old_one(initialised, capsys):
    old = run(capsys, "leaderboard", "add-team", "--db", initialised, "Alpha")[1].strip().splitlines()[-1]
    code, out, _ = run(capsys, "leaderboard", "reset-token", "--db", initialised, "Alpha")
    new = out.strip().splitlines()[-1]
    leaderboard = Leaderboard(Database(initialised))
    assert code == 0 and new != old and leaderboard.authenticate(new).name == "Alpha"
    with pytest.raises(Exception, match="valid team token"):
        leaderboard.authenticate(old)
    assert run(capsys, "leaderboard", "reset-token", "--db", initialised, "Nobody")[0] == 1


def test_commands_on_a_database_without_competition(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    for argv in (["add-team", "X"], ["serve"], ["reveal"], ["rescore"], ["export", "--out", "x.csv"]):
        code, _, err = run(capsys, "leaderboard", argv[0], "--db", url, *argv[1:])
        assert code == 1 and "run 'tpugraphs leaderboard init' first" in err, argv


def test_configure_changes_rules(initialised, capsys):
    code, out, _ = run(capsys, "leaderboard", "configure", "--db", initialised, "--daily-limit", "2",
                       "--deadline", "none")
    assert code == 0 and "daily limit 2" in out and "deadline none" in out
    assert run(capsys, "leaderboard", "configure", "--db", initialised)[0] == 2
    assert run(capsys, "leaderboard", "configure", "--db", initialised, "--max-selected", "0")[0] == 2


def _submit(url: str, tiny, seeds) -> tuple[Leaderboard, str]:
    from leaderboard.scorer import Scorer

    leaderboard = Leaderboard(Database(url))
    team, token = leaderboard.add_team("Alpha")
    scorer = Scorer(load_solution(tiny.solution_csv))
    for seed in seeds:
        leaderboard.submit(team, tiny.submission(seed), "s.csv", scorer.score, scorer_version="old")
    return leaderboard, token


def test_rescore_records_the_scorer_version_and_fixes_scores(initialised, tiny, capsys):
    leaderboard, _ = _submit(initialised, tiny, [1, 2])
    with leaderboard.db.writer() as session:
        first = session.get(Submission, 1)
        first.public_score = 0.123  # as an older, buggy metric had it
        for status in (REFUSED, FAILED):  # their teams were told to submit again: left alone
            session.add(Submission(team_id=1, created_at=first.created_at, file_name="r.csv", size_bytes=1,
                                   sha256="", content=first.content, status=status))
        session.add(Submission(team_id=1, created_at=first.created_at, file_name="i.csv", size_bytes=1,
                               sha256="", content=zlib.compress(tiny.invalid_submission()), status=INVALID))
    code, out, _ = run(capsys, "leaderboard", "rescore", "--db", initialised)
    assert code == 0
    assert f"Rescored 3 submissions with scorer {SCORER_VERSION}: 1 changed." in out
    expected = score_submission(tiny.submission(1), load_solution(tiny.solution_csv))
    with leaderboard.db.reader() as session:
        rows = {s.id: s for s in session.query(Submission)}
    assert rows[1].public_score == expected.public and rows[1].private_score == expected.private
    assert {rows[1].scorer_version, rows[2].scorer_version} == {SCORER_VERSION}
    assert [(rows[i].status, rows[i].scorer_version) for i in (3, 4)] == [(REFUSED, None), (FAILED, None)]
    assert rows[5].status == INVALID and rows[5].scorer_version == SCORER_VERSION


def test_export_reveal_and_disqualify(initialised, tiny, tmp_path, capsys):
    _submit(initialised, tiny, [1])
    out_csv = tmp_path / "public.csv"
    assert run(capsys, "leaderboard", "export", "--db", initialised, "--out", str(out_csv))[0] == 0
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    expected = score_submission(tiny.submission(1), load_solution(tiny.solution_csv))
    assert rows[0]["team"] == "Alpha" and float(rows[0]["score"]) == expected.public

    code, _, err = run(capsys, "leaderboard", "export", "--db", initialised, "--board", "private",
                       "--out", str(tmp_path / "private.csv"))
    assert code == 0 and "not revealed yet" in err

    code, out, _ = run(capsys, "leaderboard", "reveal", "--db", initialised)
    assert code == 0 and "Alpha" in out and f"{expected.private:.6f}" in out

    code, out, _ = run(capsys, "leaderboard", "disqualify", "--db", initialised, "Alpha", "--reason", "x")
    assert code == 0 and "disqualified" in out
    with Database(initialised).reader() as session:
        assert session.query(Team).one().disqualified_reason == "x"
    assert run(capsys, "leaderboard", "disqualify", "--db", initialised, "Nobody")[0] == 1


# ---------------------------------------------------------------------------------------------
# tpugraphs submit


@pytest.fixture
def server(sqlite_url, tiny):
    from leaderboard.app import create_app

    leaderboard = init_competition(sqlite_url, tiny, daily_limit=1)
    _, token = leaderboard.add_team("Alpha")
    with LiveServer(create_app(Settings(db_url=sqlite_url, max_upload_bytes=32 * 1024))) as live:
        yield live.url, token


def test_submit_prints_the_public_score(server, tiny, tmp_path, capsys):
    url, token = server
    path = tmp_path / "submission.csv"
    path.write_bytes(tiny.submission(2))
    code, out, _ = run(capsys, "submit", str(path), "--server", url + "/", "--token", token)
    assert code == 0
    expected = score_submission(path, load_solution(tiny.solution_csv))
    assert f"Public score: {expected.public:.10f}" in out
    assert "0 of 1 submissions left today" in out

    code, _, err = run(capsys, "submit", str(path), "--server", url, "--token", token)
    assert code == 1 and "refused (HTTP 429)" in err and "Daily limit reached" in err


def test_submit_refusals_and_usage(server, tiny, tmp_path, capsys, monkeypatch):
    url, token = server
    bad = tmp_path / "bad.csv"
    bad.write_bytes(tiny.invalid_submission())
    code, _, err = run(capsys, "submit", str(bad), "--server", url, "--token", token)
    assert code == 1 and "refused (HTTP 422)" in err and "bad.csv: line 1" in err

    code, _, err = run(capsys, "submit", str(bad), "--server", url, "--token", "1.wrong")
    assert code == 1 and "HTTP 401" in err

    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * (64 * 1024))
    code, _, err = run(capsys, "submit", str(big), "--server", url, "--token", token)
    assert code == 1 and "accepts at most" in err

    monkeypatch.setenv("TPUGRAPHS_TOKEN", token)
    code, _, err = run(capsys, "submit", str(bad), "--server", url)  # token from the environment
    assert code == 1 and "HTTP 422" in err

    unreachable = f"http://127.0.0.1:{free_port()}"
    code, _, err = run(capsys, "submit", str(bad), "--server", unreachable, "--token", token)
    assert code == 1 and f"cannot reach the leaderboard server at {unreachable}" in err

    assert run(capsys, "submit", str(bad), "--token", token)[0] == 2  # no --server
    assert run(capsys, "submit", str(bad), "--server", "localhost:8000", "--token", token)[0] == 2
    assert run(capsys, "submit", str(tmp_path / "none.csv"), "--server", url, "--token", token)[0] == 2
    monkeypatch.delenv("TPUGRAPHS_TOKEN")
    assert run(capsys, "submit", str(bad), "--server", url)[0] == 2


def test_help_texts(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["leaderboard", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for action in ("init", "add-team", "reset-token", "serve", "rescore", "reveal", "disqualify", "export",
                   "export-codabench"):
        assert action in out
    assert main(["leaderboard"]) == 2



def test_five_commands_on_the_synthetic_competition(tiny_competition, tmp_path, capsys):
    """synth (the session fixture), init, add-team, serve, submit: the host guide's walk-through."""
    from leaderboard.app import create_app

    public, solution = tiny_competition / "public", tiny_competition / "private" / "solution.csv"
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    assert run(capsys, "leaderboard", "init", "--db", url, "--solution", str(solution), "--data",
               str(public))[0] == 0
    token = run(capsys, "leaderboard", "add-team", "--db", url, "Team A")[1].strip().splitlines()[-1]
    sample = public / "sample_submission.csv"
    with LiveServer(create_app(Settings(db_url=url))) as server:
        code, out, err = run(capsys, "submit", str(sample), "--server", server.url, "--token", token)
    assert code == 0, err
    code, scored, _ = run(capsys, "score", str(sample), "--solution", str(solution), "--json")
    assert code == 0 and f"Public score: {json.loads(scored)['public']:.10f}" in out


def test_init_accepts_a_competition_of_some_collections(tmp_path, tiny, capsys):
    # A partial competition (e.g. `tpugraphs prepare --collection tile:xla`): the solution's collections
    # count.
    lines = tiny.solution_path.read_text().splitlines()
    tile_only = tmp_path / "solution.csv"
    tile_only.write_text("\n".join([lines[0],
                                    *(line for line in lines[1:] if line.startswith("tile:xla:"))]) + "\n")
    code, _, err = run(capsys, "leaderboard", "init", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--solution",
                       str(tile_only), "--data", str(tiny.data_dir))
    assert code == 0, err
    assert "covers tile:xla only" in err and "layout:xla:default" in err


def test_submit_without_a_destination_names_both(tmp_path, capsys):
    sub = tmp_path / "sub.csv"
    sub.write_text("ID,TopConfigs\n")
    code, _, err = run(capsys, "submit", str(sub))
    assert code == 2 and "--server URL" in err and "--kaggle" in err


def test_init_warns_about_a_deadline_in_the_past(tmp_path, tiny, capsys):
    code, _, err = run(capsys, "leaderboard", "init", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--solution",
                       str(tiny.solution_path), "--data", str(tiny.data_dir), "--deadline",
                       "2020-01-01T00:00Z")
    assert code == 0 and "warning: the deadline 2020-01-01T00:00Z is in the past" in err


def test_help_examples_use_a_deadline_in_the_future(capsys):
    import re
    from datetime import UTC, datetime

    with pytest.raises(SystemExit):
        main(["leaderboard", "--help"])
    out = capsys.readouterr().out
    years = [int(y) for y in re.findall(r"--deadline (\d{4})-", out)]
    assert years and min(years) > datetime.now(UTC).year
