"""``tpugraphs rank PROGRAM --model MODEL_DIR``: which configurations a saved model picks for a program."""

from __future__ import annotations

import argparse
import sys

from competition.commands._statistics import positive_int

HELP = "rank the layout or tile configurations of your own XLA program with a model 'tpugraphs solve' saved"
EPILOG = """\
PROGRAM is one of:
  - a plain HLO module: an HloProto as XLA writes it with XLA_FLAGS="--xla_dump_to=DIR
    --xla_dump_hlo_as_proto" (*.hlo.pb), or an HloModuleProto. Its configurable nodes are found by the
    dataset's rule: every convolution, dot and reshape, in node order. It has no measured configs, so
    give candidates with --configs FILE (and --sample N to draw more from their menus);
  - a ModuleTuningData proto (a layout program with the compiler's config_index_to_node; its measured
    runs are optional) or a layout npz of the released format;
  - a tile kernel: a tile npz of the released format, or a TuningData proto (--kernel NAME picks one of
    its kernels; tpugraphs featurize names them <stem>_<fingerprint>). A plain module is read as a tile
    kernel with --collection tile:xla.
Candidates: the program's measured configs (default); --configs FILE (an npz of the released format,
its node_config_feat or config_feat, or a .npy of shape (configs, nodes, 18) for layout, (configs, 24)
for tile); --sample N (layout only): N distinct configs drawn as the dataset's random search draws them,
each layout group picking a setting of its menu (the settings its nodes take in the program's configs,
or in --configs FILE when given, and each with the two minor-most dims swapped). Tile configs cannot be
sampled: the tile sizes a kernel may take come from the compiler's search, which no public rule
reproduces. The model is the one a 'tpugraphs solve' run saved in MODEL_DIR for --collection (default:
layout:xla:random for a layout program, tile:xla for a tile kernel; a seed ensemble is blended as solve
does), so the ranking of a program's configs equals what 'solve --predict-only' writes for the same graph.

The table lists the K best: predicted rank, candidate index, the model's score (lower = predicted
faster; a ranking score, not a runtime) and what the config changes against the program's default
(the proto's default run) or, without one, each node's (tile: tensor's) most common setting.

JSON keys: program, task, format (npz, ModuleTuningData, TuningData, HloProto or HloModuleProto),
kernel (TuningData only), configurable_nodes (layout: their node positions), model {method, collection,
dir, models}, candidates, candidate_source, reference, top [{rank, candidate, predicted_score (null for
a seed ensemble), predicted_relative_runtime (always null: the models are trained to order configs; a
score is not a runtime, and nothing turns scores into runtime ratios), config, changes [{node, opcode,
tensor, from, to} for layout; {tensor, from, to} for tile]}].

exit status: 0 ranked, 1 an unreadable or foreign program or configs file, 2 usage error (no saved
model for the collection, a collection of the other kind, no candidates for a program without measured
configs, --sample for a tile kernel, bad options)

examples:
  tpugraphs solve --method gbdt --collection layout:xla:random --data data/demo/public --out sub.csv
  tpugraphs rank module_tuning_data.pb --model sub.models --top 5
  tpugraphs rank module_0001.jit_f.before_optimizations.hlo.pb --model sub.models --configs cands.npy
  tpugraphs rank my_program.npz --model sub.models --sample 1000 --json
  tpugraphs rank op_tuning_data.pb --kernel op_tuning_data_4ae805e53b8d2b8a --model tile.models
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rank", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", metavar="PROGRAM",
                        help="an HLO module (.hlo.pb), a ModuleTuningData or TuningData .pb, or an .npz")
    parser.add_argument("--model", required=True, metavar="MODEL_DIR",
                        help="the --model-dir of a 'tpugraphs solve' run (default there: SUB.models)")
    parser.add_argument("--collection", metavar="NAME",
                        help="whose saved model ranks the configs (default: layout:xla:random, or tile:xla "
                             "for a tile kernel)")
    parser.add_argument("--kernel", metavar="NAME", help="the kernel of a TuningData proto to rank")
    parser.add_argument("--configs", metavar="FILE", help="candidate configs: an .npz or a .npy")
    parser.add_argument("--sample", type=positive_int, metavar="N",
                        help="layout: sample N distinct configs as the dataset's random search does")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of --sample (default: 0)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="K",
                        help="list the K best (default: 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.collections import get_collection
    from competition.errors import UsageError
    from solutions.ranking import RankError, rank_program, read_configs, read_program, sample_configs

    try:
        chosen = get_collection(args.collection) if args.collection else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        program = read_program(args.program, task=chosen.task if chosen else None, kernel=args.kernel)
        if args.sample and program.kind.sample_refusal:
            raise UsageError(f"{args.program}: {program.kind.sample_refusal}")
        configs, source = None, ""
        if args.configs:
            configs = read_configs(args.configs, program.graph)
            source = f"from {args.configs}"
        if args.sample:
            menus = program.graph.configs if configs is None else configs
            configs = sample_configs(program, menus, args.sample, seed=args.seed)
            source = f"sampled, seed {args.seed}" + (f", menus from {args.configs}" if args.configs else "")
    except RankError as exc:
        print(f"tpugraphs rank: {exc}", file=sys.stderr)
        if args.json:  # --json: stdout still carries one document
            from competition.commands._json import message_problem, problems_document

            print(problems_document([message_problem(str(exc))], 1))
        return 1
    try:
        result = rank_program(program, args.model, collection=chosen.name if chosen else None,
                              configs=configs, candidate_source=source, top=args.top)
    except (RankError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(result.to_json_dict()) if args.json else result.format())
    return 0
