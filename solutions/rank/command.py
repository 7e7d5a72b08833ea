"""``tpugraphs rank PROGRAM --model MODEL_DIR``: which configurations a saved model picks for a program."""

from __future__ import annotations

import argparse
import sys

from competition.commands.arguments import positive_int

HELP = "rank the layout or tile configurations of your own XLA program with a model 'tpugraphs solve' saved"
EPILOG = """\
PROGRAM is one of:
  - a plain HLO module: an HloProto as XLA writes it with XLA_FLAGS="--xla_dump_to=DIR
    --xla_dump_hlo_as_proto" (*.before_optimizations.hlo.pb), or an HloModuleProto. Its configurable
    nodes are found by the dataset's rule: every convolution, dot and reshape, in node order. It has no
    measured configs: --sample N draws candidates from its layout space;
  - a ModuleTuningData proto (a layout program with the compiler's config_index_to_node; its measured
    runs are optional) or a layout npz of the released format;
  - a tile kernel: a tile npz of the released format, or a TuningData proto (--kernel NAME picks one of
    its kernels; tpugraphs featurize names them <stem>_<fingerprint>). A plain module is read as a tile
    kernel with --collection tile:xla.
Candidates: the program's measured configs (default); --configs FILE (an npz of the released format,
its node_config_feat or config_feat, or a .npy of shape (configs, nodes, 18) for layout, (configs, 24)
for tile), every config checked against the program (a layout: each tensor's dims exist, none twice,
only the slots the dataset sets: the 2 minor-most dims of a convolution's or dot's tensors, the whole
order of a reshape's); --sample N (layout only): N distinct configs, drawn from the settings of the
configs at hand (--configs FILE, else the measured ones) or, for a program without configs, from its
layout space (each tensor's valid orders, uniformly; docs/rank.md). A sample always holds the reference
(the default run, else the program's own layouts), added as candidate 0 when the draw missed it. Tile
configs cannot be sampled: the tile sizes a kernel may take come from the compiler's search, which no
public rule reproduces.
The model is the one a 'tpugraphs solve' run saved in MODEL_DIR for --collection; without it:
layout:xla:random (tile:xla for a tile kernel) when saved there, else the folder's only model of the
program's kind, or the one whose collection the program's path names (.../layout/xla/default/...). A
seed ensemble is blended as solve does, so the ranking of a program's configs equals what
'solve --predict-only' writes for the same graph.

The table lists the K best: predicted rank, candidate index, the model's score (lower = predicted
faster; a ranking score, not a runtime), for measured configs their measured rank, and what the config
changes against the reference, in the program's words: the instruction, the tensor's shape and the new
minor-to-major order by dimension names (N, H, W, C; I, O; B, M, K, N from the instruction's dimension
numbers; d<i>=<size> otherwise). Above it: where the reference ranks, and for measured configs the
model's Kendall tau against their runtimes.

JSON keys: program, task, format (npz, ModuleTuningData, TuningData, HloProto or HloModuleProto),
kernel (TuningData only), configurable_nodes (layout: their node positions), model {method, collection,
dir, models, chosen_because}, candidates, candidate_source, reference, reference_row {candidate, rank,
added}, measured_kendall_tau, top [{rank, candidate, predicted_score (null for a seed ensemble),
predicted_relative_runtime (always null: scores are not runtimes), measured_rank, config, changes
[{node, instruction, opcode, tensor, shape, dims, from, to, text} for layout; {tensor, from, to, text}
for tile]}].

exit status: 0 ranked, 1 an unreadable or foreign program, 2 usage error (candidates refused or
missing, no saved model for the collection, a collection of the other kind, --sample for a tile kernel,
bad options)

examples:
  tpugraphs solve --method gbdt --collection layout:xla:random --data data/demo/public --out sub.csv
  tpugraphs rank module_0014.jit__lambda.before_optimizations.hlo.pb --model sub.models --sample 1000
  tpugraphs rank module_tuning_data.pb --model sub.models --top 5
  tpugraphs rank module_0001.jit_f.before_optimizations.hlo.pb --model sub.models --configs cands.npy
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
                             "for a tile kernel, when saved there; else the folder's only one of that kind)")
    parser.add_argument("--kernel", metavar="NAME", help="the kernel of a TuningData proto to rank")
    parser.add_argument("--configs", metavar="FILE", help="candidate configs (.npz or .npy), each checked")
    parser.add_argument("--sample", type=positive_int, metavar="N",
                        help="layout: N distinct valid configs (see below)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of --sample (default: 0)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="K",
                        help="list the K best (default: 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.collections import get_collection
    from competition.errors import UsageError
    from solutions.rank.ranking import RankError, candidates, rank_program, read_program

    try:
        chosen = get_collection(args.collection) if args.collection else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        program = read_program(args.program, task=chosen.task if chosen else None, kernel=args.kernel)
    except RankError as exc:
        print(f"tpugraphs rank: {exc}", file=sys.stderr)
        if args.json:  # --json: stdout still carries one document
            from competition.commands.json_problems import message_problem, problems_document

            print(problems_document([message_problem(str(exc))], 1))
        return 1
    if args.sample and program.kind.sample_refusal:
        raise UsageError(f"{args.program}: {program.kind.sample_refusal}")
    try:  # the candidates and the model: refused as usage errors (what was asked cannot be done)
        configs, source, added = candidates(program, configs_file=args.configs, sample=args.sample,
                                            seed=args.seed)
        result = rank_program(program, args.model, collection=chosen.name if chosen else None,
                              configs=configs, candidate_source=source, top=args.top, reference_added=added)
    except (RankError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(result.to_json_dict()) if args.json else result.format())
    return 0
