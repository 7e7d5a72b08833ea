"""``tpugraphs grade SCORE``: where a score would have placed on the real competition's final leaderboard."""

from __future__ import annotations

import argparse

from competition.commands.arguments import finite_number

HELP = "place a score on the real competition's final Kaggle leaderboard: rank, percentile, medal"
EPILOG = """\
The final leaderboard of Kaggle's "Google - Fast or Slow? Predict AI Model Runtime" (617 teams, private
and public scores) ships with the kit. SCORE gets the rank it would have had (ties share the better
rank), the share of teams with a lower score, the medal by Kaggle's rules for a competition of that
size (250-999 teams: gold top 10 + 0.2 % of the teams, here 11; silver top 50; bronze top 100) and
the teams just above and below. --interval LOW HIGH (a bootstrap interval from 'tpugraphs report')
gives the range of ranks. Only a score on Kaggle's own test set (a late submission) is comparable;
scores of the kit's synthetic competition are not. 'tpugraphs report SUB.csv --solution S.csv --grade'
grades a file and refuses a synthetic solution. docs/grade.md has the rule and the sources.

JSON keys: score, board, rank, teams, percentile, medal ("gold", "silver", "bronze" or null), ties,
above {rank, score}, below {rank, score} (rank: the one that team would have with SCORE placed),
cutoffs {gold|silver|bronze: {rank, score}}, source; with --interval also interval, rank_range
[best, worst], medal_range [best, worst].

exit status: 0 graded, 2 usage error (also a score above 1, which no submission can reach)

examples:
  tpugraphs grade 0.69
  tpugraphs grade 0.41 --board public --json
  tpugraphs grade 0.52 --interval 0.47 0.56
"""


def add_board(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--board", choices=("private", "public"), default="private",
                        help="which final leaderboard (default: private, the final ranking)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("grade", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("score", type=finite_number, metavar="SCORE",
                        help="a competition score (the mean of the five collection scores)")
    add_board(parser)
    parser.add_argument("--interval", type=finite_number, nargs=2, metavar=("LOW", "HIGH"),
                        help="the score's confidence interval: gives the range of ranks")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.data.grading import grade
    from competition.errors import UsageError

    if args.interval is not None and not args.interval[0] <= args.score <= args.interval[1]:
        raise UsageError(f"--interval {args.interval[0]} {args.interval[1]} must hold SCORE {args.score} "
                         "(LOW <= SCORE <= HIGH)")
    try:
        result = grade(args.score, board=args.board, interval=tuple(args.interval) if args.interval else None)
    except ValueError as exc:  # a score no submission can reach
        raise UsageError(str(exc)) from None
    print(json.dumps(result.to_json_dict()) if args.json else result.format())
    return 0
