"""What ``report``, ``compare``, ``shakeup`` and ``ensemble`` share: options, reading the inputs, errors.

Standard library only at import time (the CLI's rule); numpy and the scorer load inside the functions.
"""

from __future__ import annotations

import argparse
import sys

from competition.commands.arguments import non_negative_int, open_fraction, positive_int


class InputRejected(Exception):
    """An input was read and found wrong; the message is printed and the command exits 1."""


def add_solution(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument("--solution", required=required, metavar="SOLUTION.csv",
                        help="hidden labels (ID,Runtimes,Normalizers,Usage), e.g. OUT/private/solution.csv")


def add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N",
                        help="seed of the resampling: the same seed gives the same numbers (default: 0)")


INTERVAL_CHOICES = ("t", "bootstrap-t", "percentile")  # competition.stats.INTERVAL_METHODS (numpy-free here)


def add_bootstrap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--interval", choices=INTERVAL_CHOICES, default="t",
                        help="interval method: t (default; Welch-Satterthwaite on the final score), "
                             "bootstrap-t (studentized bootstrap: the best for few skewed tile scores), "
                             "percentile (the 1.0 default; too narrow under 30 graphs)")
    parser.add_argument("--bootstrap", type=positive_int, default=2000, metavar="DRAWS",
                        help="bootstrap draws of the bootstrap intervals, and random sign patterns of "
                             "compare's sign-flip test beyond 12 graphs (default: 2000)")
    parser.add_argument("--confidence", type=open_fraction, default=0.95, metavar="LEVEL",
                        help="confidence level of the intervals (default: 0.95)")
    add_seed(parser)
    parser.add_argument("--usage", choices=("all", "Public", "Private"), default="all",
                        help="score the Public rows, the Private rows, or both (default: all)")


def check_files(submissions: list[str], solution: str | None) -> None:
    """Each submission and the solution (when given) is a file; else a UsageError saying what it is."""
    from competition.commands.arguments import SOLUTION_FILE, SUBMISSION_FILE, require_file

    for path in submissions:
        require_file(path, SUBMISSION_FILE)
    if solution is not None:
        require_file(solution, SOLUTION_FILE)


def load_solution_or_fail(path: str):
    from competition.errors import SolutionFormatError
    from competition.scoring import load_solution

    try:
        return load_solution(path)
    except SolutionFormatError as exc:
        raise InputRejected(f"unusable solution file: {exc}") from None


def load_scores(paths: list[str], solution, usage: str, max_problems: int = 50) -> list:
    """Validate and score every submission; InputRejected lists the problems of every invalid one."""
    from competition.scoring import SubmissionInvalid
    from competition.stats import load_graph_scores

    scored, problems = [], []
    for path in paths:
        try:
            scored.append(load_graph_scores(path, solution, usage=usage, name=path,
                                            max_problems=max_problems))
        except SubmissionInvalid as exc:
            problems.append(str(exc))
    if problems:
        raise InputRejected("\n".join(problems))
    if not scored[0].collections:
        raise InputRejected(f"the solution has no {usage} rows to score")
    return scored


def run_guarded(command: str, body, *, as_json: bool = False) -> int:
    """Run ``body()``; InputRejected -> its message on stderr and exit 1 (with ``as_json``, also the
    problems as one JSON document on stdout, one per line of the message: ``json_problems``)."""
    try:
        return body()
    except InputRejected as exc:
        print(f"tpugraphs {command}: {exc}", file=sys.stderr)
        if as_json:
            from competition.commands.json_problems import message_problem, problems_document

            print(problems_document([message_problem(line) for line in str(exc).splitlines()], 1))
        return 1
