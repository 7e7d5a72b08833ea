"""Write an HLO module back with some instructions' layouts set, every other byte as read.

``set_layouts(data, message, {node: minor_to_major})`` rewrites the ``minor_to_major`` field of each
named instruction's ``shape.layout`` (nodes are positions in node order: computations in proto order,
instructions in order within each, as the featurizer counts them). Nothing is decoded and re-encoded:
the bytes are edited on the wire. The ``minor_to_major`` field is replaced in place, as one packed run
where the first one stood (the way XLA writes it, so a layout of the same rank keeps its length); a
shape without a layout gets one, placed where field 5 belongs; then the length prefix of each enclosing
message (layout, shape, instruction, computation, module) is written again for its new length. Every
other field, unknown ones included, keeps its bytes and its place.

>>> module = bytes([0x1A, 0x0A, 0x12, 0x08, 0x1A, 0x06, 0x2A, 0x04, 0x0A, 0x02, 0x01, 0x00])
>>> set_layouts(module, "HloModuleProto", {0: [0, 1]}).hex(" ")
'1a 0a 12 08 1a 06 2a 04 0a 02 00 01'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from competition.data.protos.wire import (
    FIXED32,
    FIXED64,
    LENGTH_DELIMITED,
    encode_varint,
    iter_fields,
    read_varint,
)

__all__ = ["set_layouts"]

_MODULE, _COMPUTATIONS, _INSTRUCTIONS, _SHAPE, _LAYOUT, _MINOR_TO_MAJOR = 1, 3, 2, 3, 5, 1


class _Span(NamedTuple):
    key: int  # where the field's key starts
    key_end: int  # where its length prefix starts
    begin: int  # where its content starts
    stop: int  # where it ends


def _spans(buf: memoryview, begin: int, stop: int, number: int, path: str) -> list[_Span]:
    """Every length-delimited occurrence of field ``number`` in ``buf[begin:stop]``."""
    found = []
    for field, wire_type, value, key in iter_fields(buf, begin, stop, path):
        if field == number and wire_type == LENGTH_DELIMITED:
            found.append(_Span(key, read_varint(buf, key, stop)[1], value[0], value[1]))
    return found


def _single(buf: memoryview, parent: _Span, number: int, what: str, where: str) -> _Span | None:
    spans = _spans(buf, parent.begin, parent.stop, number, where)
    if len(spans) > 1:  # merged on read: editing one occurrence would not set the layout alone
        raise ValueError(f"{where}: its {what} is written {len(spans)} times (merged on reading); "
                         "not rewritten")
    return spans[0] if spans else None


def _instruction_chain(buf: memoryview, message: str, node: int) -> list[_Span]:
    """The spans from the outermost message down to node ``node``'s instruction."""
    chain = []
    module = _Span(0, 0, 0, len(buf))
    if message == "HloProto":
        outer = _spans(buf, 0, len(buf), _MODULE, "HloProto")
        if len(outer) != 1:
            raise ValueError(f"HloProto: {len(outer)} modules in field 1; expected one")
        module = outer[0]
        chain.append(module)
    position = 0
    for computation in _spans(buf, module.begin, module.stop, _COMPUTATIONS, "HloModuleProto"):
        instructions = _spans(buf, computation.begin, computation.stop, _INSTRUCTIONS, "HloComputationProto")
        if node < position + len(instructions):
            return chain + [computation, instructions[node - position]]
        position += len(instructions)
    raise ValueError(f"node {node}: the module has {position} instructions")


def _layout_content(buf: memoryview, layout: _Span | None, order: Sequence[int]) -> bytes:
    """A ``LayoutProto``'s content with ``minor_to_major`` set to ``order``, its other fields as read."""
    packed = bytes([(_MINOR_TO_MAJOR << 3) | LENGTH_DELIMITED])
    values = b"".join(encode_varint(int(d)) for d in order)
    run = packed + encode_varint(len(values)) + values
    if layout is None:
        return run
    out, placed, pos = bytearray(), False, layout.begin
    for field, _, _, key in iter_fields(buf, layout.begin, layout.stop, "LayoutProto"):
        out += buf[pos:key]
        pos = key
        if field == _MINOR_TO_MAJOR:
            if not placed:
                out += run
                placed = True
            pos = _field_end(buf, key, layout.stop)
    out += buf[pos:layout.stop]
    return bytes(out) if placed else run + bytes(out)


def _field_end(buf: memoryview, key: int, stop: int) -> int:
    """Where the field whose key starts at ``key`` ends (its key, length and value read again)."""
    tag, pos = read_varint(buf, key, stop)
    wire_type = tag & 7
    if wire_type == LENGTH_DELIMITED:
        length, pos = read_varint(buf, pos, stop)
        return pos + length
    if wire_type == FIXED64:
        return pos + 8
    if wire_type == FIXED32:
        return pos + 4
    return read_varint(buf, pos, stop)[1]


def _set_one(data: bytes, message: str, node: int, order: Sequence[int]) -> bytes:
    buf = memoryview(data)
    chain = _instruction_chain(buf, message, node)
    where = f"node {node}"
    shape = _single(buf, chain[-1], _SHAPE, "shape", where)
    if shape is None:
        raise ValueError(f"{where}: the instruction has no shape to lay out")
    chain.append(shape)
    layout = _single(buf, shape, _LAYOUT, "layout", where)
    new = _layout_content(buf, layout, order)
    if layout is not None:
        chain.append(layout)
    else:  # a shape without a layout: the layout field goes before the first field numbered above 5
        field = bytes([(_LAYOUT << 3) | LENGTH_DELIMITED]) + encode_varint(len(new)) + new
        at = next((key for number, _, _, key in iter_fields(buf, shape.begin, shape.stop, "ShapeProto")
                   if number > _LAYOUT), shape.stop)
        new = bytes(buf[shape.begin:at]) + field + bytes(buf[at:shape.stop])
    for i in range(len(chain) - 1, -1, -1):
        span = chain[i]
        piece = bytes(buf[span.key:span.key_end]) + encode_varint(len(new)) + new
        outer = chain[i - 1] if i else _Span(0, 0, 0, len(buf))
        new = bytes(buf[outer.begin:span.key]) + piece + bytes(buf[span.stop:outer.stop])
    return new


def set_layouts(data: bytes, message: str, layouts: Mapping[int, Sequence[int]]) -> bytes:
    """``data`` (an ``HloProto`` or an ``HloModuleProto``, as ``message`` says) with the layout of each
    node of ``layouts`` set to its minor-to-major order; every other byte as read.

    Raises ``ValueError`` naming the node when it is not in the module, has no shape, or its shape or
    layout is written more than once (a merged encoding this edit could not set alone).
    """
    if message not in ("HloProto", "HloModuleProto"):
        raise ValueError(f"a {message} is not an HLO module; only an HloProto or HloModuleProto is written")
    for node, order in sorted(layouts.items()):
        data = _set_one(data, message, int(node), order)
    return data
