"""``tpugraphs report SUB.csv --solution SOLUTION.csv``: the score with bootstrap confidence intervals."""

from __future__ import annotations

import argparse

from competition.commands import _statistics as common

HELP = "score a submission with confidence intervals per collection and overall, and list its worst graphs"
EPILOG = """\
The submission is validated and every test graph scored once with the official metric; the graphs of
each collection are then resampled with replacement (--bootstrap draws) and each draw scored the way
the official score is (the mean of the collection means). The interval is the percentile interval of
the draws: how far the score could move on another test set drawn like this one. It does not include
retraining noise; compare two seeds' submissions with 'tpugraphs compare' for that.

JSON keys: score, ci_low, ci_high, confidence, draws, seed, usage, collections {C: {score, ci_low,
ci_high, graphs, metric}}, tile_best_in_top5, per_graph [{id, collection, score, configs, usage}]
(worst first).

exit status: 0 reported, 1 invalid submission or unusable solution, 2 usage error

examples:
  tpugraphs report submission.csv --solution data/demo/private/solution.csv
  tpugraphs report submission.csv --solution data/demo/private/solution.csv --usage Private --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", metavar="SUB.csv", help="the submission file (ID,TopConfigs)")
    common.add_solution(parser)
    common.add_bootstrap(parser)
    parser.add_argument("--worst", type=common.non_negative_int, default=10, metavar="N",
                        help="list the N worst graphs in the table (default: 10; JSON lists all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        import json

        from competition.stats import report

        common.check_files(args.submission, args.solution)
        solution = common.load_solution_or_fail(args.solution)
        (scores,) = common.load_scores([args.submission], solution, args.usage)
        result = report(scores, draws=args.bootstrap, seed=args.seed, confidence=args.confidence)
        print(json.dumps(result.to_json_dict()) if args.json else result.format(worst=args.worst))
        return 0

    return common.run_guarded("report", body, as_json=args.json)
