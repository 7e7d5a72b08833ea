"""Raw proto files -> npz graphs: a pure-Python port of the TpuGraphs featurizer (docs/featurizer.md;
docs/competition.md, Raw protos -> npz).

The released npz files were made by a C++ featurizer (tpu_graphs ``process_data/xla``) from
``TuningData`` protos (tile kernels) and ``ModuleTuningData`` protos (layout graphs). The kit follows its
rules with a hand-written wire decoder (``wire.py``) and no TensorFlow, one module per job:

- ``module.py``: one ``HloModuleProto`` -> nodes, the 140 node features, edges and splits (both kinds);
- ``layout.py``: a ``ModuleTuningData`` -> a ``LayoutGraph`` (and the configurable nodes of a plain module);
- ``tile.py``: a ``TuningData`` -> one ``TileGraph`` per kernel;
- this module: which message a file holds, reading it, and ``featurize_file`` / ``featurize_files``.

Each task kind's tuning files are described once, in ``FORMATS`` (one ``TuningFormat`` per task): the
top-level message and how it becomes graphs. A file's kind is the task it is detected as (``detect_kind``), so
nothing here branches on a kind's name. Configs keep proto order (the released files were shuffled;
nothing here is random).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from competition.data.graphs import Graph, save_graph
from competition.data.protos.layout import featurize_layout
from competition.data.protos.module import Message
from competition.data.protos.tile import featurize_tile
from competition.data.protos.wire import (
    LENGTH_DELIMITED,
    VARINT,
    WireFormatError,
    decode_message,
    iter_fields,
)
from competition.errors import DataFormatError
from competition.tasks import LAYOUT, TILE, Task, get_task

# ----------------------------------------------------------------------------------------------------
# What each task kind's tuning files hold


@dataclass(frozen=True)
class TuningFormat:
    """The tuning files of one task kind: their top-level message and how a decoded one becomes graphs."""

    task: Task
    message: str  # a message of schema.SCHEMAS
    # decoded message, file stem -> [(name, graph)] and one line per part left out (why)
    featurize: Callable[[Message, str], tuple[list[tuple[str, Graph]], list[str]]]
    many: bool  # a file holds many graphs (named <stem>_<fingerprint>) rather than one (named <stem>)


def _featurize_layout(tuning: Message, stem: str) -> tuple[list[tuple[str, Graph]], list[str]]:
    return [(stem, featurize_layout(tuning))], []


FORMATS: tuple[TuningFormat, ...] = (
    TuningFormat(TILE, "TuningData", featurize_tile, many=True),
    TuningFormat(LAYOUT, "ModuleTuningData", _featurize_layout, many=False),
)
#: The messages of a plain HLO module (no tuning runs): XLA's dump (``HloProto``, the module in field 1)
#: and the module itself (``HloModuleProto``, e.g. TensorFlow's ``hlo_serialized``).
MODULE_MESSAGES = ("HloProto", "HloModuleProto")
_EXPECTED = "a TuningData, a ModuleTuningData, an HloProto or an HloModuleProto"


def tuning_format(kind: Task | str) -> TuningFormat:
    """The tuning files of a task (or task name); ValueError for a kind without them."""
    task = get_task(kind) if isinstance(kind, str) else kind
    found = next((fmt for fmt in FORMATS if fmt.task is task), None)
    if found is None:
        raise ValueError(f"no tuning proto format for task {task.name!r}; "
                         f"expected one of {', '.join(fmt.task.name for fmt in FORMATS)}")
    return found


# ----------------------------------------------------------------------------------------------------
# Errors


class ProtoFormatError(DataFormatError):
    """A proto file that cannot be featurized: corrupt bytes or a rule of the featurizer broken.

    ``offset`` is the byte position in the file when the problem is in the bytes, else None.
    """

    def __init__(self, path: str | Path, problem: str, offset: int | None = None) -> None:
        self.offset = offset
        super().__init__(path, problem)


def wire_error(path: Path, exc: WireFormatError) -> ProtoFormatError:
    """The file's error for bytes the decoder refused: the byte offset and the field path."""
    return ProtoFormatError(
        path, f"corrupt or truncated proto at byte {exc.offset} (in {exc.path}): {exc.problem}", exc.offset
    )


# ----------------------------------------------------------------------------------------------------
# Which message a file holds


def _is_message(buf: memoryview, span: tuple[int, int]) -> bool:
    try:
        list(iter_fields(buf, *span, "probe"))
    except WireFormatError:
        return False
    return True


def _holds_runs(buf: memoryview, span: tuple[int, int]) -> bool:
    """Whether a field-3 payload is a tuning run (``ConfigProfile``) rather than XLA's buffer assignment."""
    try:
        run = decode_message(buf, "ConfigProfile", start=span[0], end=span[1])
    except WireFormatError:
        return False
    return any(run[name] is not None for name in ("op_config", "module_config", "profile")) \
        or run["error"] or run["is_default"]


def detect_message(data: bytes | memoryview) -> str:
    """The top-level message of a file, judged from its bytes: ``TuningData``, ``ModuleTuningData``,
    ``HloProto`` or ``HloModuleProto``.

    - An ``HloModuleProto`` names itself in field 1 (a string, not a message) and its entry computation
      in field 2 (a string); the other three hold a message in field 1 and stop at field 4.
    - ``ModuleTuningData``: a fingerprint (field 2), configurable nodes (field 4) or runs (field 3, each
      a ``ConfigProfile``). With none of them, or with field 3 holding XLA's buffer assignment, the file
      is an ``HloProto``: the module alone, as XLA's ``--xla_dump_hlo_as_proto`` writes it.
    - With field 1 alone, its payload decides: an ``HloModuleProto`` (string field 2 or varint fields 5/6:
      an ``HloProto``) or a ``ModuleTuningData`` (varint field 2: a ``TuningData``); failing both, the
      payload's own field 1 is a string (a module's name) or a message (the module of a kernel).

    Raises ``WireFormatError`` on bytes that are not protobuf and ``ValueError`` when the fields fit none.
    """
    buf = memoryview(data)
    top = list(iter_fields(buf, 0, len(buf), "top level"))
    if not top:
        raise ValueError(f"empty message: expected {_EXPECTED}")
    numbers = {number for number, _, _, _ in top}
    wires = {(number, wire_type) for number, wire_type, _, _ in top}
    for number, wire_type, _, offset in top:
        if number == 1 and wire_type != LENGTH_DELIMITED:
            raise WireFormatError(offset, "top level",
                                  f"field 1 has wire type {wire_type}, expected a nested message")
    firsts = [value for number, _, value, _ in top if number == 1]
    named = (2, LENGTH_DELIMITED) in wires and numbers & {5, 6}  # an entry computation's name, ids
    if not all(_is_message(buf, span) for span in firsts) or (named and (3, LENGTH_DELIMITED) in wires):
        return "HloModuleProto"
    if numbers - {1, 2, 3, 4}:
        raise ValueError(f"top-level fields {sorted(numbers)}")
    if numbers - {1}:
        if numbers & {2, 4} or not firsts:
            return "ModuleTuningData"
        runs = [value for number, wire_type, value, _ in top if number == 3 and wire_type == LENGTH_DELIMITED]
        return "ModuleTuningData" if not runs or _holds_runs(buf, runs[0]) else "HloProto"
    inner = list(iter_fields(buf, *firsts[0], "top level field 1"))
    kinds = {(number, wire_type) for number, wire_type, _, _ in inner}
    if (2, LENGTH_DELIMITED) in kinds or any(number in (5, 6) for number, _ in kinds):
        return "HloProto"
    if (2, VARINT) in kinds:
        return "TuningData"
    first = next((value for number, _, value, _ in inner if number == 1), None)
    if first is None or _is_message(buf, first):
        return "TuningData"
    return "HloProto"  # field 1.1 is not a message: the name string of an HloModuleProto


def message_task(message: str) -> Task | None:
    """The task whose tuning files hold ``message`` at their top level; None for a plain module's messages."""
    return next((fmt.task for fmt in FORMATS if fmt.message == message), None)


def detect_kind(data: bytes | memoryview) -> Task:
    """The task of a tuning file (``TILE`` for a ``TuningData``, ``LAYOUT`` for a ``ModuleTuningData``),
    judged from its bytes. Raises ``ValueError`` for a plain HLO module, which has no tuning runs, and
    as ``detect_message`` does."""
    message = detect_message(data)
    task = message_task(message)
    if task is not None:
        return task
    raise ValueError(f"a plain HLO module ({message}) without tuning runs or configurable nodes; the "
                     "featurizer needs a TuningData or ModuleTuningData (tpugraphs rank takes a plain "
                     "module)")


# ----------------------------------------------------------------------------------------------------
# Files


def _read_bytes(path: Path, expected: str) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ProtoFormatError(path, "no such file") from None
    except IsADirectoryError:
        raise ProtoFormatError(path, "is a directory, expected a .pb file") from None
    if not data:
        raise ProtoFormatError(path, f"empty file: expected {expected} proto")
    return data


def read_proto(path: str | Path) -> tuple[str, Message]:
    """Read and decode any file ``detect_message`` knows: ``(message name, decoded message)``; for the two
    messages of a plain module (``MODULE_MESSAGES``) the decoded message is the ``HloModuleProto`` itself.

    Raises ``ProtoFormatError`` naming the file, and the byte offset and field path for corrupt or
    truncated bytes; a module without a computation holding instructions is refused too.
    """
    path = Path(path)
    data = _read_bytes(path, _EXPECTED)
    try:
        message = detect_message(data)
        decoded = decode_message(data, message)
    except WireFormatError as exc:
        raise wire_error(path, exc) from None
    except ValueError as exc:
        raise ProtoFormatError(path, f"not {_EXPECTED} proto: {exc}") from None
    if message not in MODULE_MESSAGES:
        return message, decoded
    module = decoded["hlo_module"] if message == "HloProto" else decoded
    if module is None or not any(comp["instructions"] for comp in module["computations"]):
        raise ProtoFormatError(path, f"read as an {message}, but it holds no HLO instructions (an "
                               "HloModuleProto lists its computations in field 3)")
    return message, module


def read_tuning_proto(path: str | Path, kind: Task | str | None = None) -> tuple[Task, Message]:
    """Read and decode a ``TuningData`` (tile) or ``ModuleTuningData`` (layout) file: its task and message.

    ``kind`` (a task or its name) skips detection. Raises ``ProtoFormatError`` naming the file, and the
    byte offset and field path for corrupt or truncated bytes.
    """
    path = Path(path)
    data = _read_bytes(path, "a TuningData or ModuleTuningData")
    try:
        task = detect_kind(data) if kind is None else tuning_format(kind).task
        decoded = decode_message(data, tuning_format(task).message)
    except WireFormatError as exc:
        raise wire_error(path, exc) from None
    except ValueError as exc:
        raise ProtoFormatError(path, f"not a TuningData or ModuleTuningData proto: {exc}") from None
    return task, decoded


@dataclass
class FeaturizedFile:
    """What one proto file gave: its task, the graphs by name and the tile kernels left out (why)."""

    path: Path
    task: Task
    graphs: list[tuple[str, Graph]]
    skipped: list[str]

    @property
    def format(self) -> TuningFormat:
        return tuning_format(self.task)


def featurize_proto(path: str | Path, *, kind: Task | str | None = None) -> FeaturizedFile:
    """Featurize one proto file and say what was left out; ``featurize_file`` without the report."""
    path = Path(path)
    task, decoded = read_tuning_proto(path, kind)
    try:
        graphs, skipped = tuning_format(task).featurize(decoded, path.stem)
    except WireFormatError as exc:  # runs are decoded lazily, so their bytes are checked here
        raise wire_error(path, exc) from None
    except ValueError as exc:
        raise ProtoFormatError(path, str(exc)) from None
    return FeaturizedFile(path, task, list(graphs), skipped)


def featurize_file(path: str | Path, *, kind: Task | str | None = None) -> list[tuple[str, Graph]]:
    """Featurize one proto file: ``[(name, graph)]``, one per tile kernel or the single layout graph.

    Layout graphs are named after the file stem; tile kernels ``<stem>_<fingerprint hex>``.
    ``kind`` (a task or its name, ``'tile'`` / ``'layout'``) skips the detection of the message type.
    Raises ``ProtoFormatError`` (a ``DataFormatError``) naming the file and the problem.
    """
    return featurize_proto(path, kind=kind).graphs


def featurize_files(
    paths: Iterable[str | Path],
    out_dir: str | Path,
    *,
    kind: Task | str | None = None,
    compressed: bool = True,
) -> list[Path]:
    """Featurize each proto file and write ``<out_dir>/<name>.npz`` per graph; returns the paths written."""
    out_dir = Path(out_dir)
    written: list[Path] = []
    for path in paths:
        for name, graph in featurize_file(path, kind=kind):
            target = out_dir / f"{name}.npz"
            save_graph(graph, target, compressed=compressed)
            written.append(target)
    return written
