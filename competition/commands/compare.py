"""``tpugraphs compare A.csv B.csv --solution SOLUTION.csv``: is B really better than A?"""

from __future__ import annotations

import argparse

from competition.commands import _statistics as common
from competition.commands.arguments import non_negative_int

HELP = "paired comparison of two submissions: B - A with its interval, P(B better) and an exact test"
EPILOG = """\
Both submissions are scored graph by graph with the official metric and compared graph by graph
(paired: a graph hard for both does not widen the interval). The interval of B - A is the t interval
of the per-graph differences (final score: Welch-Satterthwaite). B is called better (or worse) only
when that interval excludes 0 AND the exact sign-flip test rejects "A and B interchangeable" (every
one of the 2^G sign patterns up to 12 graphs, else --bootstrap random ones): measured, that calls
two interchangeable submissions different at most about 5 % of the time at 8 graphs, where the 1.0
percentile bootstrap did 11-12 % (--interval percentile keeps it). P(B better) is the t
distribution's confidence that B - A > 0, uniform when there is no difference (with --interval
percentile: the share of bootstrap draws in which B scores higher). Identical files give 0 and 0.5.
p_value is the larger of the two tests' two-sided p values; beyond_noise the call.

JSON keys: diff, ci_low, ci_high, p_b_better, p_value, p_sign_flip, beyond_noise, a, b, confidence,
method, draws, seed, usage, verdict, collections {C: {diff, ci_low, ci_high, p_b_better, p_value,
p_sign_flip, beyond_noise, a, b, graphs, thin}}, thin_graphs, graphs_differing_most [...]; thin as in
'tpugraphs report'.

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
        result = compare(a, b, draws=args.bootstrap, seed=args.seed, confidence=args.confidence,
                         method=args.interval)
        print(json.dumps(result.to_json_dict(top=args.top)) if args.json else result.format(top=args.top))
        return 0

    return common.run_guarded("compare", body, as_json=args.json)
