"""``tpugraphs report SUB.csv --solution SOLUTION.csv``: the score with confidence intervals over graphs."""

from __future__ import annotations

import argparse

from competition.commands import _statistics as common
from competition.commands.arguments import non_negative_int

HELP = "score a submission with confidence intervals per collection and overall, and list its worst graphs"
EPILOG = """\
The submission is validated and every test graph scored once with the official metric. The interval
says how far the score could move on another test set drawn like this one: per collection the t
interval over its graphs (mean +- t(G-1) s / sqrt(G)), on the final score (the mean of the collection
means) a t interval with Welch-Satterthwaite's degrees of freedom. It holds its level at the 8 graphs
of a Kaggle xla collection, where the 1.0 percentile bootstrap covered 89 % (--interval percentile
keeps it). A collection of fewer than 30 graphs is flagged, with the coverage measured there
(layout: about 95 % from 4 graphs on; tile scores are skewed and few tile graphs cover less: see
docs/statistics.md). It does not include retraining noise; compare two seeds' submissions with
'tpugraphs compare' for that.

--grade places the score and its interval on the real competition's final leaderboard ('tpugraphs
grade'; the private board unless --usage Public or --board says otherwise). Only a solution carved
from real labelled graphs by 'tpugraphs prepare' (its private/split.json beside it) is graded: the
embedded synthetic competition's scores, or a solution of unknown origin, are refused with the reason
(exit 1) unless --force is given.

JSON keys: score, ci_low, ci_high, confidence, method, df, draws, seed, usage, collections {C:
{score, ci_low, ci_high, graphs, metric, df, thin}}, thin_graphs, tile_best_in_top5, per_graph [{id,
collection, score, configs, usage}] (worst first); thin is null from 30 graphs on, else {graphs,
below, task, measured_graphs, measured_coverage, better_method, better_coverage, note}; with --grade
also grade {rank, teams, percentile, medal, board, rank_range, ..., origin}.

exit status: 0 reported, 1 invalid submission, unusable solution or a synthetic solution to grade,
2 usage error

examples:
  tpugraphs report submission.csv --solution data/demo/private/solution.csv
  tpugraphs report submission.csv --solution data/demo/private/solution.csv --usage Private --json
  tpugraphs report submission.csv --solution my_resplit/private/solution.csv --grade
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", metavar="SUB.csv", help="the submission file (ID,TopConfigs)")
    common.add_solution(parser)
    common.add_bootstrap(parser)
    parser.add_argument("--worst", type=non_negative_int, default=10, metavar="N",
                        help="list the N worst graphs in the table (default: 10; JSON lists all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--grade", action="store_true",
                        help="also place the score on the real competition's final leaderboard "
                             "(tpugraphs grade)")
    parser.add_argument("--board", choices=("private", "public"), default=None,
                        help="the leaderboard --grade uses (default: public for --usage Public, else "
                             "private)")
    parser.add_argument("--force", action="store_true",
                        help="grade even a solution the kit takes for synthetic (not comparable; "
                             "for research)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        import json

        from competition.stats import report

        common.check_files([args.submission], args.solution)
        origin = _gradable_origin(args) if args.grade else None
        solution = common.load_solution_or_fail(args.solution)
        (scores,) = common.load_scores([args.submission], solution, args.usage)
        result = report(scores, draws=args.bootstrap, seed=args.seed, confidence=args.confidence,
                        method=args.interval)
        if not args.grade:
            print(json.dumps(result.to_json_dict()) if args.json else result.format(worst=args.worst))
            return 0
        from competition.data.grading import grade

        board = args.board or ("public" if args.usage == "Public" else "private")
        graded = grade(result.overall.estimate, board=board,
                       interval=(result.overall.low, result.overall.high))
        if args.json:
            print(json.dumps({**result.to_json_dict(),
                              "grade": {**graded.to_json_dict(), "origin": origin.kind,
                                        "forced": args.force}}))
        else:
            note = f"\n  note       {origin.reason}"
            print(f"{result.format(worst=args.worst)}\n\n{graded.format()}{note}")
        return 0

    return common.run_guarded("report", body, as_json=args.json)


def _gradable_origin(args: argparse.Namespace):
    """The solution's origin; refused (exit 1) when its scores are not comparable and --force is absent."""
    from competition.data.grading import solution_origin

    origin = solution_origin(args.solution)
    if not origin.comparable and not args.force:
        raise common.InputRejected(f"--grade refused: {origin.reason} (--force grades it anyway)")
    return origin
