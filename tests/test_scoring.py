"""The scorer and Kaggle's metric contract: one set of rules, finite numbers, the right error types."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from competition import ParticipantVisibleError, score
from competition.errors import SolutionFormatError
from competition.scoring import (
    SubmissionInvalid,
    format_report,
    load_solution,
    score_rows,
    score_submission,
)

SOLUTION = """\
ID,Runtimes,Normalizers,Usage
tile:xla:t1,50;40;30;20;10;60,100;100;100;100;100;100,Public
tile:xla:t2,10;20;30,10;10;20,Private
layout:xla:random:l1,30;10;20;40,,Public
layout:xla:random:l2,5;5;6;7,,Private
layout:nlp:default:n1,1;2;3,,Ignored
"""

PERFECT = """\
ID,TopConfigs
tile:xla:t1,4;3;2;1;0
tile:xla:t2,0;1;2
layout:xla:random:l1,1;2;0;3
layout:xla:random:l2,0;1;2;3
layout:nlp:default:n1,0;1;2
"""


@pytest.fixture
def solution():
    return load_solution(SOLUTION.encode())


def test_hand_worked_scores(solution):
    # t1 lists configs 0..4 (runtimes 50,40,30,20,10): best 10 listed -> 1.0.
    # t2 lists 2;1;0 normalised y = 1,2,1.5 -> min listed = min all -> 1.0.
    # l1 ordering 3;0;2;1 -> ranks of configs [1,3,2,0] vs runtimes [30,10,20,40].
    rows = {
        "tile:xla:t1": np.array([0, 1, 2, 3, 4, 5]),
        "tile:xla:t2": np.array([2, 1, 0]),
        "layout:xla:random:l1": np.array([3, 0, 2, 1]),
        "layout:xla:random:l2": np.array([3, 2, 1, 0]),
        "layout:nlp:default:n1": np.array([2, 1, 0]),
    }
    report = score_rows(rows, solution)
    l1 = kendalltau([1, 3, 2, 0], [30, 10, 20, 40]).statistic
    l2 = kendalltau([3, 2, 1, 0], [5, 5, 6, 7]).statistic  # ties in runtimes: tau-b
    assert report.collections["tile:xla"] == pytest.approx(1.0)
    assert report.public_collections["layout:xla:random"] == pytest.approx(l1)
    assert report.private_collections["layout:xla:random"] == pytest.approx(l2)
    assert report.collections["layout:xla:random"] == pytest.approx((l1 + l2) / 2)
    # Ignored rows are validated but never scored: nlp:default has no Public/Private row.
    assert "layout:nlp:default" not in report.collections
    assert report.graph_counts["layout:nlp:default"] == {"Public": 0, "Private": 0, "Ignored": 1}
    assert report.score == pytest.approx((1.0 + (l1 + l2) / 2) / 2)
    assert report.public == pytest.approx((1.0 + l1) / 2)
    assert report.private == pytest.approx((1.0 + l2) / 2)
    as_json = report.to_json_dict()
    assert set(as_json) == {"score", "public", "private", "collections", "public_collections",
                            "private_collections", "graphs", "metrics"}
    # The per-collection split the table prints: layout:xla:random has a Public and a Private graph.
    assert as_json["public_collections"]["layout:xla:random"] == pytest.approx(l1)
    assert as_json["private_collections"]["layout:xla:random"] == pytest.approx(l2)
    assert as_json["graphs"]["layout:xla:random"] == {"public": 1, "private": 1}
    assert as_json["metrics"] == {"tile:xla": "tile_slowdown", "layout:xla:random": "kendall_tau"}
    assert set(as_json["collections"]) == set(as_json["public_collections"]) == set(as_json["graphs"])
    assert "private" not in report.public_view()
    table = format_report(report)
    assert "tile:xla" in table and "final (mean of collections)" in table


def test_tile_slowdown_below_one(solution):
    rows = {
        "tile:xla:t1": np.array([5, 0, 1, 2, 3, 4]),  # the 6th listed (10) does not count: min listed 20
        "tile:xla:t2": np.array([1, 2, 0]),
        "layout:xla:random:l1": np.array([1, 2, 0, 3]),
        "layout:xla:random:l2": np.array([0, 1, 2, 3]),
        "layout:nlp:default:n1": np.array([0, 1, 2]),
    }
    report = score_rows(rows, solution)
    assert report.public_collections["tile:xla"] == pytest.approx(2 - 0.2 / 0.1)


def test_perfect_submission_file_and_kaggle_contract_agree(solution):
    report = score_submission(PERFECT.encode(), solution)
    assert report.public_collections["layout:xla:random"] == pytest.approx(1.0)
    frame_solution = pd.read_csv(__import__("io").StringIO(SOLUTION))
    frame_submission = pd.read_csv(__import__("io").StringIO(PERFECT))
    public = frame_solution[frame_solution.Usage == "Public"].drop(columns="Usage")
    kaggle_public = score(public, frame_submission[frame_submission.ID.isin(public.ID)], "ID")
    assert kaggle_public == pytest.approx(report.public)
    kaggle_all = score(frame_solution[frame_solution.Usage != "Ignored"],
                       frame_submission[
                           frame_submission.ID.isin(frame_solution.ID[frame_solution.Usage != "Ignored"])],
                       "ID")
    assert kaggle_all == pytest.approx(report.score)
    assert math.isfinite(kaggle_all)


def test_kaggle_contract_other_id_column_name_and_int_cells():
    solution = pd.DataFrame({"row": ["tile:xla:a", "tile:xla:b"], "Runtimes": ["5", "3;4"],
                             "Normalizers": ["5", "3;3"]})
    submission = pd.DataFrame({"row": ["tile:xla:b", "tile:xla:a"], "TopConfigs": ["1;0", 0]})
    assert score(solution, submission, "row") == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("submission", "message"),
    [
        (pd.DataFrame({"ID": ["tile:xla:a"], "TopConfigs": ["0"]}), "tile:xla:b"),  # missing ID
        (pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b", "tile:xla:c"], "TopConfigs": ["0", "0;1", "0"]}),
         "tile:xla:c"),  # unknown ID
        (pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "TopConfigs": ["0", None]}), "tile:xla:b"),
        (pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "TopConfigs": ["0", "0;7"]}), "7"),
        (pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "Top": ["0", "0;1"]}), "TopConfigs"),
        (pd.DataFrame({"Id": ["tile:xla:a"], "TopConfigs": ["0"]}), "exactly the columns ID,TopConfigs"),
    ],
)
def test_kaggle_contract_raises_participant_visible_errors(submission, message):
    solution = pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "Runtimes": ["5", "3;4"],
                             "Normalizers": ["5", "3;3"]})
    with pytest.raises(ParticipantVisibleError, match=message):
        score(solution, submission, "ID")


def test_bad_solution_is_a_host_error_not_a_participant_error():
    solution = pd.DataFrame({"ID": ["tile:xla:a"], "Runtimes": ["0"], "Normalizers": ["5"]})
    submission = pd.DataFrame({"ID": ["tile:xla:a"], "TopConfigs": ["0"]})
    with pytest.raises(SolutionFormatError) as info:
        score(solution, submission, "ID")
    assert not isinstance(info.value, ParticipantVisibleError)


BAD_SOLUTIONS = [
    ("ID,Runtimes,Usage\n", r"line 1: header must be ID,Runtimes,Normalizers,Usage"),
    ("ID,Runtimes,Normalizers,Usage\n", r"the solution has no rows"),
    ("ID,Runtimes,Normalizers,Usage\nfoo:bar,1,,Public\n",
     r"line 2: ID 'foo:bar' is not '<collection>:<file stem>'"),
    ("ID,Runtimes,Normalizers,Usage\ntile:xla:a,1;x,1;1,Public\n",
     r"line 2: Runtimes is not a ';'-separated list"),
    ("ID,Runtimes,Normalizers,Usage\ntile:xla:a,1;2,1,Public\n",
     r"line 2: tile row tile:xla:a needs one positive normalizer per runtime \(2\), got 1"),
    ("ID,Runtimes,Normalizers,Usage\nlayout:xla:default:a,1;2,1;1,Public\n",
     r"line 2: layout row .* must leave Normalizers empty"),
    ("ID,Runtimes,Normalizers,Usage\nlayout:xla:default:a,0;0,,Public\n",
     r"must be positive integers.*zeros"),
    ("ID,Runtimes,Normalizers,Usage\nlayout:xla:default:a,1;2,,Hidden\n",
     r"line 2: Usage 'Hidden' is not one of Public, Private, Ignored"),
    ("ID,Runtimes,Normalizers,Usage\nlayout:xla:default:a,1;2,,Public\nlayout:xla:default:a,1;2,,Public\n",
     r"line 3: ID layout:xla:default:a already on line 2"),
    ("ID,Runtimes,Normalizers,Usage\nlayout:xla:default:a,1;2,Public\n",
     r"line 2: expected 4 columns, got 3"),
]


@pytest.mark.parametrize(("text", "message"), BAD_SOLUTIONS)
def test_bad_solution_files(text, message):
    with pytest.raises(SolutionFormatError, match=message):
        load_solution(text.encode())


def test_solution_file_errors(tmp_path):
    with pytest.raises(SolutionFormatError, match="cannot read the solution file"):
        load_solution(tmp_path / "absent.csv")
    path = tmp_path / "latin1.csv"
    path.write_bytes("ID,Runtimes,Normalizers,Usage\nlayout:xla:default:\xe9,1,,Public\n".encode("latin-1"))
    with pytest.raises(SolutionFormatError, match="not UTF-8"):
        load_solution(path)


def test_invalid_submission_raises_with_every_problem(solution):
    bad = PERFECT.replace("tile:xla:t2,0;1;2\n", "").replace("1;2;0;3", "1;2;0")
    with pytest.raises(SubmissionInvalid) as info:
        score_submission(bad.encode(), solution)
    assert isinstance(info.value, ParticipantVisibleError)
    assert len(info.value.result.problems) == 2
    assert "tile:xla:t2" in str(info.value) and "layout:xla:random:l1" in str(info.value)


def test_expected_configs(solution):
    assert solution.expected_configs() == {
        "tile:xla:t1": 6, "tile:xla:t2": 3, "layout:xla:random:l1": 4, "layout:xla:random:l2": 4,
        "layout:nlp:default:n1": 3,
    }
    assert solution.num_rows == 5


def test_kaggle_contract_float_column_from_pandas():
    """A column pandas made float (integers plus an empty cell) is judged by value, not as '3.0'."""
    solution = pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "Runtimes": ["5", "7"],
                             "Normalizers": ["5", "7"]})
    submission = pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "TopConfigs": [0.0, 0.0]})
    assert score(solution, submission, "ID") == pytest.approx(1.0)
    with pytest.raises(ParticipantVisibleError, match="tile:xla:b"):
        score(solution,
              pd.DataFrame({"ID": ["tile:xla:a", "tile:xla:b"], "TopConfigs": [0.0, float("nan")]}), "ID")
    with pytest.raises(ParticipantVisibleError, match="exactly the columns ID,TopConfigs"):
        score(solution, submission.assign(Extra=1), "ID")
