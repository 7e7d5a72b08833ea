"""An XLA dump folder and the modules in it: which file to rank, and the modules that are not it.

``XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_proto"`` writes, per compiled module,
``module_NNNN.NAME.before_optimizations.hlo.pb`` (the module as the framework built it) and
``module_NNNN.NAME.<platform>_after_optimizations.hlo.pb`` (after every pass of the backend: fused,
laid out, scheduled), plus text, reports and helper modules a framework compiles on the side (JAX
compiles one per small host-side operation). The cost models were trained on modules before fusion, so
``optimized_evidence`` says why a module is an optimized one (its file name, fusion instructions or
computations, a schedule) and ``before_optimizations_file`` names the dump file to use instead.
``dump_modules`` lists the before-optimizations modules of a folder, largest first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from competition.data.protos.module import Message

__all__ = ["BEFORE", "DumpModule", "before_optimizations_file", "dump_modules", "optimized_evidence"]

BEFORE = ".before_optimizations.hlo.pb"
_AFTER = re.compile(r"\.([A-Za-z0-9_.]*_)?after_optimizations\.hlo\.pb$")
_MODULE = re.compile(r"^(module_\d+)\.")


def optimized_evidence(path: Path, module: Message) -> tuple[str | None, bool]:
    """Why ``module`` (read from ``path``) looks like a module after XLA's optimizations, in a few words
    (None when nothing says so), and whether that is certain: its file name says
    ``after_optimizations`` or it is scheduled (XLA's last passes ran). Fusions alone are not: a
    hand-built or a partly lowered module may hold them."""
    reasons = []
    named = "after_optimizations" in path.name
    if named:
        reasons.append("its file name says after_optimizations")
    fusions = sum(inst["opcode"] == "fusion" for comp in module["computations"]
                  for inst in comp["instructions"])
    fused = sum(bool(comp.get("is_fusion_computation")) or comp["name"].startswith("fused_computation")
                for comp in module["computations"])
    if fusions or fused:
        reasons.append(f"it holds {fusions} fusion instruction{'s' * (fusions != 1)}"
                       + (f" and {fused} fusion computation{'s' * (fused != 1)}" if fused else ""))
    scheduled = bool(module.get("schedule"))
    if scheduled:
        reasons.append("it is scheduled")
    return "; ".join(reasons) or None, named or scheduled


def before_optimizations_file(path: Path) -> str:
    """The dump file of the same module before XLA's optimizations: the one next to ``path`` when the
    folder holds it, else the name XLA gives it (``module_NNNN.NAME.before_optimizations.hlo.pb``)."""
    name = path.name
    after = _AFTER.search(name)
    if after:
        return str(path.with_name(name[: after.start()] + BEFORE))
    number = _MODULE.match(name)
    if number and path.parent.is_dir():
        found = sorted(path.parent.glob(f"{number.group(1)}.*{BEFORE}"))
        if found:
            return str(found[0])
    return f"the *{BEFORE} file XLA dumps next to it (XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_proto)"


@dataclass(frozen=True)
class DumpModule:
    """One before-optimizations module of a dump folder."""

    path: Path
    name: str  # the module's name (jit_loss), else the file's
    instructions: int  # 0 when unreadable
    configurable: int  # its convolutions, dots and reshapes
    problem: str | None = None  # why it cannot be read

    @property
    def file_name(self) -> str:
        return self.path.name


def dump_modules(folder: Path) -> list[DumpModule]:
    """The ``*.before_optimizations.hlo.pb`` modules of ``folder`` (not its sub-folders), largest first."""
    from competition.data.protos.featurize import ProtoFormatError, read_proto
    from competition.data.protos.layout import configurable_nodes

    found = []
    for path in sorted(folder.glob(f"*{BEFORE}")):
        name = path.name[: -len(BEFORE)]
        numbered = _MODULE.match(name)
        name = name[numbered.end():] if numbered else name
        try:
            message, module = read_proto(path)
        except (ProtoFormatError, ValueError) as exc:
            found.append(DumpModule(path, name, 0, 0, str(exc)))
            continue
        if message not in ("HloProto", "HloModuleProto"):
            found.append(DumpModule(path, name, 0, 0, f"a {message}, not an HLO module"))
            continue
        count = sum(len(comp["instructions"]) for comp in module["computations"])
        found.append(DumpModule(path, module["name"] or name, count, len(configurable_nodes(module))))
    return sorted(found, key=lambda m: (-m.instructions, m.file_name))
