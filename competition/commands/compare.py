"""``tpugraphs compare A.csv B.csv --solution SOLUTION.csv``: is B really better than A?"""

from __future__ import annotations

import argparse

from competition.commands import _statistics as common
from competition.commands.arguments import non_negative_int

HELP = "paired comparison of two submissions: B - A with a bootstrap interval and P(B better)"
EPILOG = """\
Both submissions are scored graph by graph with the official metric; the test graphs of each
collection are resampled with replacement, the same graphs for A and B in every draw (paired), and
each draw's difference is computed the way the official score is (mean of collection means).
P(B better) is the share of draws where B scores higher (ties count half: identical files give 0.5).
'within noise' means the interval of B - A contains 0.

JSON keys: diff, ci_low, ci_high, p_b_better, a, b, confidence, draws, seed, usage, verdict,
collections {C: {diff, ci_low, ci_high, p_b_better, a, b, graphs}}, graphs_differing_most [...].

exit status: 0 compared, 1 invalid submission or unusable solution, 2 usage error

example:
  tpugraphs compare seed0.csv seed1.csv --solution data/demo/private/solution.csv
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("compare", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", metavar="A.csv", help="the reference submission")
    parser.add_argument("b", metavar="B.csv", help="the challenger (differences are B - A)")
    common.add_solution(parser)
    common.add_bootstrap(parser)
    parser.add_argument("--top", type=non_negative_int, default=10, metavar="N",
                        help="list the N graphs where A and B differ most (default: 10; 0: no list)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        import json

        from competition.stats import compare

        common.check_files([args.a, args.b], args.solution)
        solution = common.load_solution_or_fail(args.solution)
        a, b = common.load_scores([args.a, args.b], solution, args.usage)
        result = compare(a, b, draws=args.bootstrap, seed=args.seed, confidence=args.confidence)
        print(json.dumps(result.to_json_dict(top=args.top)) if args.json else result.format(top=args.top))
        return 0

    return common.run_guarded("compare", body, as_json=args.json)
