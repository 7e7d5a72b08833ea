"""Where a score would have placed on the real competition's final leaderboard (``tpugraphs grade``).

The final Kaggle leaderboard of "Google - Fast or Slow? Predict AI Model Runtime" (617 teams, private
and public scores, best first) ships with the kit as data: ``boards/kaggle-final-leaderboard.json``,
which names its public source. ``grade(score)`` gives the rank the score would have had among those
teams (ties share the better rank, as on Kaggle), the share of teams it beats, the medal it would
have earned by Kaggle's published rules (``medal_cutoffs``) and the teams just above and below it.
With a bootstrap interval (``tpugraphs report``) it also gives the range of ranks and medals.

Kaggle's medal rules (kaggle.com/progression, "Competition Medals"; percentages rounded down; the
same table as MLE-bench's grader, ``mlebench/grade_helpers.py``), for a competition of N teams:

======== ============ ============== ============== ===============
medal    0-99 teams   100-249 teams  250-999 teams  1000+ teams
======== ============ ============== ============== ===============
gold     top 10 %     top 10         top 10 + 0.2 % top 10 + 0.2 %
silver   top 20 %     top 20 %       top 50         top 5 %
bronze   top 40 %     top 40 %       top 100        top 10 %
======== ============ ============== ============== ===============

A score is only comparable with this board when it was computed on Kaggle's own test set (a late
submission). ``solution_origin`` says where a local solution file comes from, so that scores of the
embedded synthetic competition are refused (they measure another problem).
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

BOARDS = ("private", "public")
BOARD_FILE = "kaggle-final-leaderboard.json"
MEDALS = ("gold", "silver", "bronze")

Board = Literal["private", "public"]


@dataclass(frozen=True)
class Leaderboard:
    """One final leaderboard: every team's score, best first, and where the list comes from."""

    board: str
    scores: tuple[float, ...]
    competition: str
    url: str
    source: str
    source_url: str

    @property
    def teams(self) -> int:
        return len(self.scores)

    def rank_of(self, score: float) -> int:
        """The rank ``score`` would have had: 1 + the teams with a strictly better score (ties share it)."""
        return 1 + self.teams_above(score)

    def teams_above(self, score: float) -> int:
        # The scores are best first; bisect on the ascending list of their negatives.
        return bisect_left(self._ascending_negated, -score)

    def teams_below(self, score: float) -> int:
        return self.teams - bisect_right(self._ascending_negated, -score)

    @cached_property
    def _ascending_negated(self) -> list[float]:
        return [-s for s in self.scores]


@cache
def load_leaderboard(board: str = "private") -> Leaderboard:
    """The shipped final leaderboard ``board`` ("private" or "public")."""
    if board not in BOARDS:
        raise ValueError(f"unknown board {board!r}; expected one of {', '.join(BOARDS)}")
    text = resources.files("competition.data").joinpath("boards", BOARD_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    scores = tuple(float(s) for s in data[f"{board}_scores"])
    if list(scores) != sorted(scores, reverse=True) or len(scores) != data["teams"]:
        raise ValueError(f"{BOARD_FILE}: the {board} scores must be {data['teams']} scores, best first")
    return Leaderboard(board=board, scores=scores, competition=data["competition"], url=data["url"],
                       source=data["source"], source_url=data["source_url"])


def medal_cutoffs(teams: int) -> dict[str, int]:
    """The last rank of each medal for a competition of ``teams`` teams, by Kaggle's published rules.

    >>> medal_cutoffs(617)
    {'gold': 11, 'silver': 50, 'bronze': 100}
    >>> medal_cutoffs(80), medal_cutoffs(200), medal_cutoffs(2000)
    ({'gold': 8, 'silver': 16, 'bronze': 32}, {'gold': 10, 'silver': 40, 'bronze': 80}, \
{'gold': 14, 'silver': 100, 'bronze': 200})
    """
    if isinstance(teams, bool) or not isinstance(teams, int) or teams < 1:
        raise ValueError(f"teams must be a positive integer, got {teams!r}")
    if teams < 100:
        gold, silver, bronze = teams * 10 // 100, teams * 20 // 100, teams * 40 // 100
    elif teams < 250:
        gold, silver, bronze = 10, teams * 20 // 100, teams * 40 // 100
    elif teams < 1000:
        gold, silver, bronze = 10 + teams * 2 // 1000, 50, 100
    else:
        gold, silver, bronze = 10 + teams * 2 // 1000, teams * 5 // 100, teams * 10 // 100
    # A tiny competition still awards each medal to its first team (MLE-bench's max(1, ...)).
    return {"gold": max(1, gold), "silver": max(1, silver), "bronze": max(1, bronze)}


def medal_for_rank(rank: int, teams: int) -> str | None:
    """The medal of ``rank`` among ``teams`` teams, or None."""
    for medal, last in medal_cutoffs(teams).items():
        if rank <= last:
            return medal
    return None


@dataclass(frozen=True)
class Neighbour:
    """A team of the leaderboard next to a graded score."""

    rank: int
    score: float

    def to_json_dict(self) -> dict:
        return {"rank": self.rank, "score": self.score}


@dataclass(frozen=True)
class Grade:
    """Where ``score`` would have placed on ``board`` (see ``grade``)."""

    score: float
    board: str
    rank: int
    teams: int
    percentile: float  # % of the teams with a strictly lower score
    medal: str | None
    ties: int  # teams with exactly this score
    above: Neighbour | None  # the team just above (the worst strictly better score)
    below: Neighbour | None  # the team just below (the best strictly lower score), ranked as it would
    # be with this score placed on the board (one below its own rank)
    cutoffs: dict[str, Neighbour]  # medal -> its last rank and that team's score
    interval: tuple[float, float] | None = None  # (low, high) of the score's bootstrap interval
    rank_range: tuple[int, int] | None = None  # (best, worst) rank over the interval
    medal_range: tuple[str | None, str | None] | None = None  # (best, worst) medal over the interval
    source: str = ""

    def to_json_dict(self) -> dict:
        out = {
            "score": self.score, "board": self.board, "rank": self.rank, "teams": self.teams,
            "percentile": self.percentile, "medal": self.medal, "ties": self.ties,
            "above": self.above.to_json_dict() if self.above else None,
            "below": self.below.to_json_dict() if self.below else None,
            "cutoffs": {m: n.to_json_dict() for m, n in self.cutoffs.items()},
            "source": self.source,
        }
        if self.interval is not None:
            out["interval"] = list(self.interval)
            out["rank_range"] = list(self.rank_range)
            out["medal_range"] = list(self.medal_range)
        return out

    def format(self) -> str:
        tie = f", tied with {self.ties} team{'s' if self.ties != 1 else ''}" if self.ties else ""
        lines = [
            f"{self.score:.5f} on Kaggle's final {self.board} leaderboard of predict-ai-model-runtime "
            f"({self.teams} teams):",
            f"  rank       {self.rank} of {self.teams}{tie} (ties share the better rank); "
            f"above {self.percentile:.1f} % of the teams",
            f"  medal      {self.medal or 'none'}",
        ]
        first = 1
        rules = []
        for medal, cut in self.cutoffs.items():
            rules.append(f"{medal} ranks {first}-{cut.rank} (>= {cut.score:.5f})")
            first = cut.rank + 1
        lines.append(f"  cut-offs   {'; '.join(rules)}")
        above = f"rank {self.above.rank}, {self.above.score:.5f}" if self.above else "none (best score)"
        below = (f"rank {self.below.rank} once this score is placed ({self.below.rank - 1} on the board), "
                 f"{self.below.score:.5f}" if self.below else "none (lowest score)")
        lines.append(f"  just above {above}")
        lines.append(f"  just below {below}")
        if self.interval is not None:
            low, high = self.interval
            best, worst = self.medal_range
            medals = best or "none" if best == worst else f"{best or 'none'} to {worst or 'none'}"
            lines.append(f"  interval   [{low:.5f}, {high:.5f}]: ranks "
                         f"{self.rank_range[0]}-{self.rank_range[1]}, medal {medals}")
        lines.append(f"  board from {self.source}")
        return "\n".join(lines)


def grade(score: float, *, board: str = "private", interval: tuple[float, float] | None = None) -> Grade:
    """Place ``score`` on the real competition's final ``board``.

    Args:
        score: a competition score (the mean of the five collection scores), finite.
        board: "private" (the final ranking, default) or "public".
        interval: (low, high) of the score's confidence interval, e.g. from ``tpugraphs report``;
            gives the best and worst rank and medal it allows.
    """
    _check_score(score, "score")
    leaderboard = load_leaderboard(board)
    teams = leaderboard.teams
    rank = leaderboard.rank_of(score)
    n_above, n_below = leaderboard.teams_above(score), leaderboard.teams_below(score)
    above = below = None
    if n_above:
        value = leaderboard.scores[n_above - 1]
        above = Neighbour(leaderboard.rank_of(value), value)
    if n_below:
        # The rank that team would have with this score placed on the board: one lower than its own.
        value = leaderboard.scores[teams - n_below]
        below = Neighbour(leaderboard.rank_of(value) + 1, value)
    cutoffs = {m: Neighbour(last, leaderboard.scores[last - 1]) for m, last in medal_cutoffs(teams).items()}
    rank_range = medal_range = None
    if interval is not None:
        low, high = (float(v) for v in interval)
        _check_score(low, "interval low")
        _check_score(high, "interval high")
        if low > high:
            raise ValueError(f"the interval's low end {low} is above its high end {high}")
        interval = (low, high)
        rank_range = (leaderboard.rank_of(high), leaderboard.rank_of(low))
        medal_range = (medal_for_rank(rank_range[0], teams), medal_for_rank(rank_range[1], teams))
    return Grade(
        score=float(score), board=board, rank=rank, teams=teams,
        percentile=round(100.0 * n_below / teams, 2), medal=medal_for_rank(rank, teams),
        ties=teams - n_above - n_below, above=above, below=below, cutoffs=cutoffs, interval=interval,
        rank_range=rank_range, medal_range=medal_range,
        source=f"{leaderboard.url} (the list: {leaderboard.source})",
    )


def score_range() -> tuple[float, float]:
    """(worst, best) final score: the mean of the five collections' metric ranges (-inf, 1.0).

    The tile slowdown is unbounded below and at most 1, Kendall's tau lies in [-1, 1].
    """
    from competition.collections import COLLECTIONS

    ranges = [c.task.metric.range for c in COLLECTIONS]
    return (sum(r[0] for r in ranges) / len(ranges), sum(r[1] for r in ranges) / len(ranges))


def _check_score(value: float, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    worst, best = score_range()
    if not worst <= value <= best:
        bounds = f"at most {best}" if worst == -math.inf else f"in [{worst}, {best}]"
        raise ValueError(f"{what} {value} is not a possible score: a final score, the mean of the five "
                         "collection scores (tile slowdown at most 1, Kendall's tau in [-1, 1]), is "
                         f"{bounds}")


# -- where a local solution file comes from ---------------------------------------------------------

Origin = Literal["embedded", "prepared", "unknown"]


@dataclass(frozen=True)
class SolutionOrigin:
    """Where a solution file's labels come from, as far as the files beside it tell.

    ``kind``: "embedded" (a stamped embedded synthetic competition), "prepared" (carved by
    ``tpugraphs prepare`` from labelled graphs; its ``private/split.json`` says so), or "unknown".
    ``comparable`` is whether its scores may be placed on the real leaderboard without ``--force``.
    """

    kind: Origin
    reason: str

    @property
    def comparable(self) -> bool:
        return self.kind == "prepared"


def solution_origin(solution_path: str | Path) -> SolutionOrigin:
    """Where the labels of ``solution_path`` (``OUT/private/solution.csv``) come from.

    Kaggle never released the test labels of the real competition, so a solution file the kit can
    score is either the synthetic competition's (``tpugraphs synth``, the embedded competition) or a
    competition carved from labelled graphs by ``tpugraphs prepare``, recognised by its audit
    ``private/split.json``. Anything else is taken as synthetic: the kit cannot tell it apart.
    """
    path = Path(solution_path).resolve()
    out = path.parent.parent if path.parent.name == "private" else path.parent
    from competition.data.locate import competition_stamp

    stamp = competition_stamp(out)
    if stamp is not None:
        return SolutionOrigin("embedded", (
            f"{path} belongs to the embedded synthetic competition ({stamp.get('scale')} scale, seed "
            f"{stamp.get('seed')}): its graphs and runtimes are generated, so its scores measure another "
            "problem than Kaggle's and cannot be placed on the real leaderboard"))
    if (path.parent / "split.json").is_file():
        return SolutionOrigin("prepared", (
            f"{path} was carved by 'tpugraphs prepare' from labelled graphs (private/split.json): its test "
            "set is not Kaggle's, so the rank is an estimate, and only if the source was the real data"))
    return SolutionOrigin("unknown", (
        f"{path} has no 'tpugraphs prepare' audit (private/split.json) beside it; Kaggle never released "
        "the real test labels, so a solution without one is taken to be the synthetic competition's "
        "('tpugraphs synth'), whose scores cannot be placed on the real leaderboard"))
