"""``tpugraphs grade`` and ``report --grade``: the real final leaderboard, Kaggle's medal rules, the
refusals."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.cli import main
from competition.data.grading import (
    BOARD_FILE,
    grade,
    load_leaderboard,
    medal_cutoffs,
    medal_for_rank,
    solution_origin,
)
from competition.data.locate import stamp_competition

ROOT = Path(__file__).resolve().parents[1]

# Kaggle's table (kaggle.com/progression), worked by hand: percentages rounded down.
#   teams  gold                     silver          bronze
HAND_CUTOFFS = [
    (1, 1, 1, 1),  # 10 % of 1 is 0: each medal still goes to the first team
    (5, 1, 1, 2),  # 0.5 -> 0 -> 1; 1.0; 2.0
    (99, 9, 19, 39),  # 9.9, 19.8, 39.6
    (100, 10, 20, 40),  # top 10; 20 %; 40 %
    (249, 10, 49, 99),  # top 10; 49.8; 99.6
    (250, 10, 50, 100),  # 10 + 0.5 -> 10; top 50; top 100
    (617, 11, 50, 100),  # this competition: 10 + 1.234 -> 11; top 50; top 100
    (999, 11, 50, 100),  # 10 + 1.998 -> 11
    (1000, 12, 50, 100),  # 10 + 2; 5 %; 10 %
    (4321, 18, 216, 432),  # 10 + 8.642 -> 18; 216.05; 432.1
]


@pytest.mark.parametrize(("teams", "gold", "silver", "bronze"), HAND_CUTOFFS)
def test_medal_cutoffs_match_hand_computed_ones(teams, gold, silver, bronze):
    assert medal_cutoffs(teams) == {"gold": gold, "silver": silver, "bronze": bronze}


@pytest.mark.parametrize("teams", [0, -3, 2.5, True, "617"])
def test_medal_cutoffs_refuse_a_non_positive_or_non_integer_team_count(teams):
    with pytest.raises(ValueError, match="teams must be a positive integer"):
        medal_cutoffs(teams)


def test_the_shipped_board_is_the_final_leaderboard_with_its_source():
    private, public = load_leaderboard("private"), load_leaderboard("public")
    assert private.teams == public.teams == 617
    assert private.scores[0] == 0.72608 and private.scores[10] == 0.69927  # 1st and 11th (last gold)
    assert private.scores[49] == 0.59098 and private.scores[99] == 0.36462  # 50th and 100th
    assert round(sorted(private.scores)[308], 3) == 0.189  # the median team
    assert "kaggle.com/competitions/predict-ai-model-runtime" in private.url
    assert "DSGym" in private.source
    with pytest.raises(ValueError, match="unknown board"):
        load_leaderboard("final")


def test_the_board_file_is_package_data():
    """An installed kit (not only a checkout) must carry the board: pyproject's package-data lists it."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    relative = f"boards/{BOARD_FILE}"
    assert (ROOT / "competition" / "data" / relative).is_file()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in package_data.get("competition.data", []))


# score -> (rank, medal, ties) on the private board, at and around every cut-off
GRADES = [
    (0.9, 1, "gold", 0),
    (0.72608, 1, "gold", 1),  # ties the winner: shares rank 1
    (0.69927, 11, "gold", 1),  # ties the last gold
    (0.69926, 12, "silver", 0),
    (0.59098, 50, "silver", 1),  # the last silver
    (0.59097, 51, "bronze", 0),
    (0.36462, 100, "bronze", 1),  # the last bronze
    (0.36461, 101, None, 0),
    (0.27447, 177, None, 12),  # twelve teams share this score; all rank 177
    (-5.0, 618, None, 0),  # below every team
]


@pytest.mark.parametrize(("score", "rank", "medal", "ties"), GRADES)
def test_grade_places_scores_by_rank_with_ties_sharing_the_better_rank(score, rank, medal, ties):
    graded = grade(score)
    assert (graded.rank, graded.medal, graded.ties, graded.teams) == (rank, medal, ties, 617)


def test_grade_names_the_neighbours_and_the_cutoffs():
    graded = grade(0.69)
    assert (graded.above.rank, graded.above.score) == (15, 0.6913)
    # The team just below is rank 16 on the board; with 0.69 placed at rank 16, it would be rank 17.
    assert load_leaderboard().rank_of(0.68885) == 16
    assert (graded.below.rank, graded.below.score) == (17, 0.68885)
    assert "just below rank 17 once this score is placed (16 on the board), 0.68885" in graded.format()
    assert {m: (c.rank, c.score) for m, c in graded.cutoffs.items()} == {
        "gold": (11, 0.69927), "silver": (50, 0.59098), "bronze": (100, 0.36462)}
    assert grade(1.0).above is None and grade(-5.0).below is None


def test_an_interval_gives_the_range_of_ranks_and_medals():
    graded = grade(0.6, interval=(0.55, 0.70))
    assert graded.rank_range == (grade(0.70).rank, grade(0.55).rank) == (11, 61)
    assert graded.medal_range == ("gold", "bronze")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"score": float("nan")}, "score must be a finite number"),
    ({"score": float("inf")}, "score must be a finite number"),
    ({"score": 1.5}, r"score 1.5 is not a possible score: .* is at most 1.0"),
    ({"score": 0.5, "interval": (0.4, 1.01)}, r"interval high 1.01 is not a possible score"),
    ({"score": 0.5, "interval": (0.6, 0.4)}, "low end 0.6 is above its high end 0.4"),
    ({"score": 0.5, "interval": (float("-inf"), 0.6)}, "interval low must be a finite number"),
    ({"score": 0.5, "board": "final"}, "unknown board"),
])
def test_grade_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        grade(**kwargs)


@settings(max_examples=200, deadline=None)
@given(score=st.floats(-3, 1, allow_nan=False), board=st.sampled_from(["private", "public"]))
def test_rank_is_one_plus_the_strictly_better_teams(score, board):
    """The bisection against the obvious count, and the medal against the rank's cut-offs."""
    scores = load_leaderboard(board).scores
    graded = grade(score, board=board)
    assert graded.rank == 1 + sum(s > score for s in scores)
    assert graded.ties == sum(s == score for s in scores)
    assert graded.percentile == round(100 * sum(s < score for s in scores) / len(scores), 2)
    assert graded.medal == medal_for_rank(graded.rank, len(scores))


@settings(max_examples=100, deadline=None)
@given(a=st.floats(-3, 1, allow_nan=False), b=st.floats(-3, 1, allow_nan=False))
def test_a_better_score_never_ranks_worse(a, b):
    low, high = min(a, b), max(a, b)
    assert grade(high).rank <= grade(low).rank
    graded = grade(low, interval=(low, high))
    assert graded.rank_range[0] <= graded.rank <= graded.rank_range[1]


# -- the command line --------------------------------------------------------------------------------


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_grade_json_has_the_documented_keys(capsys):
    code, out, _ = run_cli(capsys, "grade", "0.41", "--board", "public", "--json")
    result = json.loads(out)
    assert code == 0
    assert {"rank", "teams", "percentile", "medal", "board"} <= set(result)
    assert (result["board"], result["rank"], result["teams"], result["medal"]) == ("public", 115, 617, None)


def test_grade_text_states_rank_medal_and_interval(capsys):
    code, out, _ = run_cli(capsys, "grade", "0.6", "--interval", "0.55", "0.7")
    assert code == 0
    assert "rank       44 of 617" in out and "medal      silver" in out
    assert "ranks 11-61, medal gold to bronze" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["grade", "nan"], "argument SCORE: expected a finite number, got 'nan'"),
    (["grade", "abc"], "argument SCORE: expected a number, got 'abc'"),
    (["grade", "0.5", "--board", "final"], "invalid choice: 'final'"),
    (["grade", "0.5", "--interval", "0.6", "0.7"], "--interval 0.6 0.7 must hold SCORE 0.5"),
    (["grade", "1.5"], "error: score 1.5 is not a possible score: a final score, the mean of the five "
                       "collection scores (tile slowdown at most 1, Kendall's tau in [-1, 1]), is at most "
                       "1.0"),
    (["grade", "0.5", "--interval", "0.4", "1.2"], "error: interval high 1.2 is not a possible score"),
])
def test_grade_usage_errors_exit_2_naming_the_argument(capsys, argv, message):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("argv", "message"), [
    (["grade", "abc", "--json"], "argument SCORE: expected a number, got 'abc'"),
    (["grade", "1.5", "--json"], "score 1.5 is not a possible score"),
    (["grade", "--json"], "the following arguments are required: SCORE"),
    (["grade", "0.5", "--json", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_grade_usage_errors_with_json_print_one_json_error_on_stdout(capsys, argv, message):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert code == 2 and document["ok"] is False and document["exit_code"] == 2
    assert len(document["problems"]) == 1 and message in document["problems"][0]["message"]
    assert f"tpugraphs grade: error: {document['problems'][0]['message']}" in err


# -- report --grade: the solution's origin ------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from competition.data.synth import generate_competition

    out = tmp_path_factory.mktemp("grade") / "comp"
    generate_competition(out, scale="tiny", seed=0)
    return out


def report_grade(capsys, comp: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(capsys, "report", str(comp / "public" / "sample_submission.csv"), "--solution",
                   str(comp / "private" / "solution.csv"), "--grade", "--bootstrap", "50", *extra)


def test_report_grade_refuses_a_synth_solution_and_force_overrides(capsys, tiny):
    code, out, err = report_grade(capsys, tiny)
    assert code == 1 and out == ""
    assert "--grade refused" in err and "solution.csv has no 'tpugraphs prepare' audit" in err
    assert len(err.strip().splitlines()) == 1
    code, out, _ = report_grade(capsys, tiny, "--force", "--json")
    result = json.loads(out)
    assert code == 0
    assert result["grade"]["origin"] == "unknown" and result["grade"]["forced"] is True
    assert result["grade"]["rank_range"][0] <= result["grade"]["rank"] <= result["grade"]["rank_range"][1]
    assert result["grade"]["rank"] == grade(result["score"]).rank


def test_report_grade_refuses_the_embedded_competition_by_its_stamp(capsys, tiny, tmp_path):
    stamp_competition(tiny, scale="tiny", seed=0)
    try:
        assert solution_origin(tiny / "private" / "solution.csv").kind == "embedded"
        code, _, err = report_grade(capsys, tiny)
        assert code == 1 and "embedded synthetic competition (tiny scale, seed 0)" in err
    finally:
        for name in ("embedded.json", "generator-version"):
            (tiny / name).unlink()


def test_report_grade_grades_a_prepared_solution_on_the_board_of_its_usage(capsys, tiny):
    split = tiny / "private" / "split.json"
    split.write_text("{}\n")
    try:
        code, out, _ = report_grade(capsys, tiny, "--usage", "Public", "--json")
        result = json.loads(out)
        assert code == 0
        assert result["grade"]["origin"] == "prepared" and result["grade"]["board"] == "public"
        assert result["grade"]["rank"] == grade(result["score"], board="public").rank
        code, out, _ = report_grade(capsys, tiny)
        assert code == 0 and "on Kaggle's final private leaderboard" in out and "not Kaggle's" in out
    finally:
        split.unlink()
