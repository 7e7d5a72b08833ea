"""Where each instruction of an HLO module came from: the framework's op name and the source file and line.

XLA keeps it in each instruction's ``metadata`` (``OpMetadata``): ``op_name`` (JAX:
``jit(loss)/transpose(jvp())/dot_general``) and either ``source_file``/``source_line`` (older writers,
TensorFlow) or ``stack_frame_id``, a 1-based frame of the module's ``stack_frame_index`` (current JAX):
the frame names a file location (file, function, line), and its parents the callers. The innermost
frame is the one an instruction names, so its file and line are where the operation was written; the
callers say from where (a helper's line is shared by every call of it).

Nothing is guessed: a module without metadata, or an id that points outside the index, gives no file and
no line, and ``SourceLocation.text`` says so.

>>> SourceLocation("model.py", 12, "jit(f)/dot_general").text
'model.py:12'
>>> SourceLocation(None, None, None).text
'no source location in the dump'
"""

from __future__ import annotations

from dataclasses import dataclass

from competition.data.protos.module import Message

__all__ = ["SourceLocation", "source_locations"]


@dataclass(frozen=True)
class SourceLocation:
    """An instruction's op name and the file and line it came from (None: not in the module)."""

    file: str | None
    line: int | None
    op_name: str | None
    function: str | None = None  # the function holding that line (stack frames only)
    callers: tuple[str, ...] = ()  # the frames that called it, innermost first, each ``file:line``

    @property
    def text(self) -> str:
        """``file:line``, or a plain statement that the dump does not say."""
        if self.file is None:
            return "no source location in the dump"
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def chain(self) -> str:
        """``text`` and, when a frame called it, the nearest caller (``f.py:19 < :24`` in the same file).

        >>> SourceLocation("f.py", 19, None, "conv", ("f.py:24", "main.py:3")).chain
        'f.py:19 < :24'
        """
        if not self.callers:
            return self.text
        caller = self.callers[0]
        if caller.startswith(f"{self.file}:"):
            caller = caller[len(self.file or ""):]
        return f"{self.text} < {caller}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "op_name": self.op_name, "function": self.function,
                "callers": list(self.callers)}


def _frame_location(index: Message | None, frame_id: int) -> tuple[str | None, int | None, str | None]:
    """The file, line and function of the 1-based ``frame_id`` of ``index``; Nones when not there."""
    if index is None or frame_id <= 0 or frame_id > len(index["stack_frames"]):
        return None, None, None
    location_id = index["stack_frames"][frame_id - 1]["file_location_id"]
    if location_id <= 0 or location_id > len(index["file_locations"]):
        return None, None, None
    location = index["file_locations"][location_id - 1]
    file_id, function_id = location["file_name_id"], location["function_name_id"]
    if file_id <= 0 or file_id > len(index["file_names"]):
        return None, None, None
    function = index["function_names"][function_id - 1] if 0 < function_id <= len(index["function_names"]) \
        else None
    return index["file_names"][file_id - 1], (location["line"] or None), function


def _callers(index: Message, frame_id: int) -> tuple[str, ...]:
    """``file:line`` of each frame above ``frame_id``, innermost first (a cycle or a bad id ends it)."""
    out, seen = [], {frame_id}
    while True:
        parent = index["stack_frames"][frame_id - 1]["parent_frame_id"]
        if parent <= 0 or parent in seen or parent > len(index["stack_frames"]):
            return tuple(out)
        file, line, _ = _frame_location(index, parent)
        if file is None:
            return tuple(out)
        out.append(f"{file}:{line}" if line else file)
        seen.add(parent)
        frame_id = parent


def instruction_location(instruction: Message, index: Message | None) -> SourceLocation:
    """The location of one decoded ``HloInstructionProto`` of a module whose stack-frame index is
    ``index`` (``HloModuleProto.stack_frame_index``; None when the module has none)."""
    metadata = instruction.get("metadata")
    if metadata is None:
        return SourceLocation(None, None, None)
    op_name = metadata["op_name"] or None
    frame = metadata["stack_frame_id"]
    file, line, function = _frame_location(index, frame)
    if file is not None:
        return SourceLocation(file, line, op_name, function, _callers(index, frame))
    if metadata["source_file"]:
        return SourceLocation(metadata["source_file"], metadata["source_line"] or None, op_name)
    return SourceLocation(None, None, op_name)


def source_locations(module: Message) -> list[SourceLocation]:
    """The location of every instruction of a decoded ``HloModuleProto``, in node order (computations in
    proto order, instructions in order within each: the featurizer's order)."""
    index = module.get("stack_frame_index")
    return [instruction_location(inst, index) for comp in module["computations"]
            for inst in comp["instructions"]]
