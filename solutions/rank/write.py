"""``tpugraphs rank --write FILE``: the program's module with a candidate's layouts set.

A layout config says, per configurable node, the minor-to-major order of its output, input and kernel
(the dataset sets the two minor-most dims of a convolution's or dot's tensors, a reshape's whole
order). In HLO a layout belongs to the instruction that produces a tensor: a node's output layout is its
own instruction's, its input's and kernel's those of the instructions producing its operands. Each
change is written there (``competition.data.protos.write.set_layouts``, every other byte as read), as a
full order: the dims the config sets, minor-most first, then the tensor's other dims in the order the
module had them.

Two changes may fall on one instruction (a dot's output is the next reshape's input). The first in
this order wins: outputs before inputs and kernels, then node order; a change that would overwrite a
different order already written is not written, and is listed so (``Written.skipped``). Reading the
written file back, ``rank`` takes the written layouts as the program's own.

XLA's own layout assignment keeps the layouts of the entry computation's parameters and result (its
entry computation layout, which this file leaves as read) and assigns every other one itself, so each
written layout comes with how to pin it from JAX (``Written.written[i]["note"]``): an argument or the
result through ``jax.jit``'s layout API, an intermediate with ``with_layout_constraint``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from solutions.kinds.layout_space import TENSORS
from solutions.kinds.program import Program, RankError

WRITABLE = ("HloProto", "HloModuleProto")


@dataclass
class Written:
    """What ``write_layouts`` wrote to ``path``: each change set, and each not set with why."""

    path: Path
    what: str  # which config: "the best candidate (candidate 12)", "--explain's minimal set ..."
    written: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"file": str(self.path), "config": self.what, "written": self.written, "skipped": self.skipped}

    def lines(self) -> list[str]:
        out = [f"wrote {self.path}: {self.what}, {len(self.written)} layout"
               f"{'s' * (len(self.written) != 1)} set, every other byte as read"]
        out += [f"  {w['instruction']} = {w['minor_to_major']} minor-to-major ({w['text']}){w['note']}"
                for w in self.written]
        out += [f"  not written: {s['text']}: {s['why']}" for s in self.skipped]
        return out


def check_writable(program: Program, path: str | Path) -> None:
    """Refuse ``--write`` before any ranking is done: a program that is not a plain module, or FILE being
    the program itself."""
    if program.form not in WRITABLE or program.space is None:
        article = "an" if program.form[0] in "AEIOU" else "a"
        raise RankError(f"--write writes a plain HLO module (an HloProto or HloModuleProto) with layouts "
                        f"set; {program.path} is {article} {program.form}")
    if Path(path).resolve() == program.path.resolve():
        raise RankError(f"--write {path}: that is the program itself; write the changed module to a new file")


def write_layouts(program: Program, config: np.ndarray, reference: np.ndarray, path: str | Path,
                  what: str) -> Written:
    """Write ``program``'s module to ``path`` with the changes of ``config`` against ``reference`` set."""
    from competition.data.protos.featurize import read_proto
    from competition.data.protos.locations import source_locations
    from competition.data.protos.write import set_layouts

    check_writable(program, path)
    assert program.space is not None
    _, module = read_proto(program.path)
    instructions = [inst for comp in module["computations"] for inst in comp["instructions"]]
    sources = source_locations(module)
    entry = next((c for c in module["computations"] if c["id"] == module["entry_computation_id"]),
                 module["computations"][-1])
    entry_ids = {inst["id"]: inst for inst in entry["instructions"]}
    changes = program.kind.changes(config, reference, program)
    layouts: dict[int, list[int]] = {}
    owner: dict[int, str] = {}
    result = Written(Path(path), what)
    for change in sorted(changes, key=lambda c: (TENSORS.index(c["tensor"]) > 0, c["node"])):
        node = next(n for n in program.space.nodes if n.node == change["node"])
        t = TENSORS.index(change["tensor"])
        position = node.node if t == 0 else node.producers[t - 1]
        tensor = node.tensors[t]
        if position is None or tensor is None:
            result.skipped.append({"text": change["text"], "why": "the module does not say which instruction "
                                   "produces that operand"})
            continue
        order = list(change["to"]) + [d for d in tensor.own if d not in change["to"]]
        if position in layouts and layouts[position] != order:
            why = f"that tensor is {owner[position]}, written as {layouts[position]}"
            result.skipped.append({"text": change["text"], "why": why})
            continue
        layouts[position] = order
        producer = instructions[position]
        owner[position] = f"{change['instruction']}'s {change['tensor']}"
        result.written.append({"instruction": producer["name"], "node": position, "minor_to_major": order,
                               "text": change["text"], "source": sources[position].to_json(),
                               "note": _note(producer, entry, entry_ids, order, sources[position].text)})
    data = set_layouts(program.path.read_bytes(), program.form, layouts)
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise RankError(f"--write {path}: cannot write ({exc.strerror or exc})") from None
    return result


def _note(instruction: dict, entry: dict, entry_ids: dict, order: list[int], where: str) -> str:
    """How a JAX user pins this layout themselves: an argument's or the result's through ``jax.jit``'s
    layout API, an intermediate with ``with_layout_constraint`` at its source line (JAX's ``Layout`` takes
    major-to-minor: the written order reversed)."""
    layout = f"Layout(major_to_minor={tuple(reversed(order))})"
    if instruction["id"] in entry_ids and instruction["opcode"] == "parameter":
        return (f"; flattened argument {instruction['parameter_number']} of the jitted function: "
                f"jax.jit(..., in_shardings=Format({layout}, sharding))")
    if instruction["id"] == entry["root_id"]:
        return f"; the jitted function's result: jax.jit(..., out_shardings=Format({layout}, sharding))"
    return f"; in JAX: with_layout_constraint(x, {layout}) on the value made at {where}"
