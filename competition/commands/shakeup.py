"""``tpugraphs shakeup SUB.csv [SUB2.csv ...] --solution SOLUTION.csv``: how much can the private board
move?"""

from __future__ import annotations

import argparse

from competition.commands import _statistics as common
from competition.commands.arguments import open_fraction, positive_int

HELP = "simulate random public/private splits: spread of the private score and which submission to select"
EPILOG = """\
Kaggle split the test rows at random into Public (the board during the competition) and Private (the
final ranking). This replays such splits (--draws of them) on the scored test graphs, within each
collection, and reports for each submission the spread of its private score, how often it has the
best public score (the pick a competitor makes) and how often the best private score (the pick they
should make), plus how often picking by the public board finds the private best and what it costs.
These probabilities hold given the full test set: they replay splits of these very graphs, and say
nothing of how the submissions would fare on other test graphs (use 'tpugraphs report' or 'compare'
for that).

JSON keys: public_share, draws, seed, submissions [{submission, actual_public, actual_private,
private_mean, private_sd, private_p05, private_p95, gap_sd, chosen_by_public, best_on_private}],
pick_is_best, mean_regret, advice (the last three null for one submission).

exit status: 0 reported, 1 invalid submission or unusable solution, 2 usage error

example:
  tpugraphs shakeup gbdt.csv gnn.csv ensemble.csv --solution data/demo/private/solution.csv
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("shakeup", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", nargs="+", metavar="SUB.csv", help="one or more submission files")
    common.add_solution(parser)
    parser.add_argument("--public-share", type=open_fraction, default=0.5, metavar="SHARE",
                        help="share of each collection's graphs on the public board (default: 0.5)")
    parser.add_argument("--draws", type=positive_int, default=1000, metavar="N",
                        help="simulated splits (default: 1000)")
    common.add_seed(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        import json

        from competition.errors import UsageError
        from competition.stats import shakeup

        if len(set(args.submissions)) != len(args.submissions):
            raise UsageError("the same submission is listed twice")
        common.check_files(args.submissions, args.solution)
        solution = common.load_solution_or_fail(args.solution)
        scored = common.load_scores(args.submissions, solution, "all")
        try:
            result = shakeup(scored, public_share=args.public_share, draws=args.draws, seed=args.seed)
        except ValueError as exc:  # e.g. a collection with a single test graph cannot be split
            raise common.InputRejected(str(exc)) from None
        print(json.dumps(result.to_json_dict()) if args.json else result.format())
        return 0

    return common.run_guarded("shakeup", body, as_json=args.json)
