"""A small decoder for the protocol-buffer wire format, driven by hand-written schemas.

The wire format is a sequence of fields, each a key varint ``(field_number << 3) | wire_type`` followed
by its value: wire type 0 a varint, 1 eight little-endian bytes, 2 a length varint and that many bytes
(a string, a nested message or a *packed* run of scalars), 5 four little-endian bytes. Groups (3, 4)
are long deprecated and refused. Fields a schema does not name are skipped, as protobuf does.

``decode_message(data, "TuningData")`` turns the bytes into plain dicts: every field of the schema is
present under its name, with proto3 defaults for scalars (0, False, ""), ``[]`` for repeated fields and
``None`` for an absent sub-message (so presence, which the featurizer's rules test, stays visible).
Fields marked ``lazy`` in the schema (the runs of a ``ModuleTuningData``) come back as a
``LazyMessages`` sequence that decodes one element per access, and the millions of small
``LayoutConfig`` messages of a big layout file go through a fast reader for their usual encoding
(anything unusual falls back to the general decoder). Any malformed input raises ``WireFormatError``
with the absolute byte offset and the field path, e.g.
``byte 51234: TuningData.modules[3].module.computations[0]: length 912 runs past the end (400 left)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

from competition.data.protos.schema import SCHEMAS, Field

VARINT, FIXED64, LENGTH_DELIMITED, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_WIRE_TYPE_NAMES = {
    0: "varint",
    1: "64-bit",
    2: "length-delimited",
    3: "start-group",
    4: "end-group",
    5: "32-bit",
}

_SCALAR_WIRE_TYPE = {
    "int64": VARINT,
    "uint64": VARINT,
    "int32": VARINT,
    "enum": VARINT,
    "bool": VARINT,
    "string": LENGTH_DELIMITED,
    "bytes": LENGTH_DELIMITED,
}
_SCALAR_DEFAULT: dict[str, Any] = {
    "int64": 0,
    "uint64": 0,
    "int32": 0,
    "enum": 0,
    "bool": False,
    "string": "",
    "bytes": b"",
}
_TWO_64 = 1 << 64
_TWO_63 = 1 << 63


class WireFormatError(ValueError):
    """Bytes that are not a valid encoding of the expected message.

    ``offset`` is the absolute byte position in the decoded buffer, ``path`` the field path
    (``TuningData.modules[2].runs[7]``).
    """

    def __init__(self, offset: int, path: str, problem: str) -> None:
        self.offset = offset
        self.path = path
        self.problem = problem
        super().__init__(f"byte {offset}: {path}: {problem}")


def read_varint(buf: bytes | memoryview, pos: int, end: int, path: str = "") -> tuple[int, int]:
    """Decode one base-128 varint starting at ``pos``; returns ``(value, next_pos)``.

    >>> read_varint(bytes([0xAC, 0x02]), 0, 2)
    (300, 2)
    """
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireFormatError(start, path, "truncated varint (the data ends inside it)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireFormatError(start, path, "varint longer than 10 bytes")


def encode_varint(value: int) -> bytes:
    """One base-128 varint, as ``read_varint`` reads it back; a negative int64 is written as protobuf
    writes it, in ten bytes of two's complement.

    >>> encode_varint(300).hex(), read_varint(encode_varint(300), 0, 2)
    ('ac02', (300, 2))
    """
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def iter_fields(buf: bytes | memoryview, start: int, end: int, path: str):
    """Yield ``(field_number, wire_type, value, key_offset)`` for each field in ``buf[start:end]``.

    ``value`` is an int for varint, 64-bit and 32-bit fields (unsigned) and a ``(begin, stop)``
    index pair for length-delimited ones, so nested messages keep absolute offsets.
    """
    pos = start
    while pos < end:
        key_offset = pos
        key, pos = read_varint(buf, pos, end, path)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireFormatError(key_offset, path, "field number 0 is invalid (not protobuf data?)")
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos, end, f"{path} field {number}")
        elif wire_type == LENGTH_DELIMITED:
            length, pos = read_varint(buf, pos, end, f"{path} field {number}")
            if length > end - pos:
                raise WireFormatError(
                    key_offset,
                    path,
                    f"field {number}: length {length} runs past the end ({end - pos} bytes left)",
                )
            value = (pos, pos + length)
            pos += length
        elif wire_type == FIXED64:
            if end - pos < 8:
                raise WireFormatError(key_offset, path, f"field {number}: truncated 64-bit value")
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire_type == FIXED32:
            if end - pos < 4:
                raise WireFormatError(key_offset, path, f"field {number}: truncated 32-bit value")
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        elif wire_type in (START_GROUP, END_GROUP):
            raise WireFormatError(
                key_offset, path, f"field {number}: groups (wire type {wire_type}) are not supported"
            )
        else:
            raise WireFormatError(key_offset, path, f"field {number}: invalid wire type {wire_type}")
        yield number, wire_type, value, key_offset


def _convert_varint(kind: str, raw: int) -> Any:
    if kind == "int64":
        # Negative values are sign-extended to ten bytes on the wire.
        return raw - _TWO_64 if raw >= _TWO_63 else raw
    if kind == "int32" or kind == "enum":
        low = raw & 0xFFFFFFFF  # a parser keeps the low 32 bits, as C++ protobuf does
        return low - (1 << 32) if low >= 1 << 31 else low
    if kind == "bool":
        return raw != 0
    return raw  # uint64


def _read_packed(buf, begin: int, stop: int, kind: str, path: str) -> list[Any]:
    values = []
    pos = begin
    while pos < stop:
        raw, pos = read_varint(buf, pos, stop, path)
        values.append(_convert_varint(kind, raw))
    return values


class LazyMessages(Sequence):
    """A repeated message field kept as byte spans; element ``i`` is decoded when it is accessed.

    Iterating decodes one element at a time, so a ``ModuleTuningData`` with 100,000 runs costs a list of
    spans, not 100,000 nested dicts. Malformed bytes raise ``WireFormatError`` at access time.
    """

    def __init__(self, type_name: str, path: str) -> None:
        self.type_name = type_name
        self.path = path
        self._buf: memoryview | None = None
        self._spans: list[tuple[int, int]] = []

    def add(self, buf: memoryview, span: tuple[int, int]) -> None:
        self._buf = buf
        self._spans.append(span)

    def extend(self, other: LazyMessages) -> None:
        # Only ever called while merging messages of one decode, so both share one buffer.
        for span in other._spans:
            self.add(other._buf, span)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._spans)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        begin, stop = self._spans[index]
        return _decode(self._buf, begin, stop, self.type_name, f"{self.path}[{index}]")

    def __repr__(self) -> str:
        return f"LazyMessages({self.type_name}, {len(self)} elements)"


def empty_message(type_name: str, path: str = "") -> dict[str, Any]:
    """A message of ``type_name`` with every field at its default (what an absent message reads as)."""
    message: dict[str, Any] = {}
    for field in SCHEMAS[type_name].values():
        if field.lazy:
            message[field.name] = LazyMessages(field.kind, f"{path or type_name}.{field.name}")
        elif field.repeated:
            message[field.name] = []
        elif field.kind in _SCALAR_DEFAULT:
            message[field.name] = _SCALAR_DEFAULT[field.kind]
        else:
            message[field.name] = None
    return message


def _merge(into: dict[str, Any], other: dict[str, Any], type_name: str) -> None:
    # A non-repeated message field seen twice is merged, as protobuf parsers do.
    for field in SCHEMAS[type_name].values():
        value = other[field.name]
        if field.repeated:
            into[field.name].extend(value)
        elif field.kind in _SCALAR_DEFAULT:
            into[field.name] = value
        elif value is not None:
            if into[field.name] is None:
                into[field.name] = value
            else:
                _merge(into[field.name], value, field.kind)


def _fast_layout_config(buf, start: int, end: int) -> dict[str, Any] | None:
    """``LayoutConfig`` in its usual encoding, or None to let the general decoder handle it.

    A layout run holds one node message per configurable node (12 million in the largest file), each a
    few tensors with one packed field of small dims: ``0a 12 | 0a 04 0a 02 01 00 | ...``. This reads
    exactly that shape (one-byte keys, lengths and values) several times faster than the general path;
    anything else (other fields, long or negative values, malformed bytes) returns None so the general
    decoder, which owns every error message, takes over.
    """
    data = bytes(buf[start:end])  # indexing bytes is faster than a memoryview
    size = len(data)
    nodes = []
    pos = 0
    while pos < size:
        if size - pos < 2 or data[pos] != 0x0A or data[pos + 1] >= 0x80:
            return None
        node_end = pos + 2 + data[pos + 1]
        if node_end > size:
            return None
        pos += 2
        tensors = []
        while pos < node_end:
            if node_end - pos < 2 or data[pos] != 0x0A or data[pos + 1] >= 0x80:
                return None
            stop = pos + 2 + data[pos + 1]
            if stop > node_end:
                return None
            dims: list[int] = []
            if stop > pos + 2:
                if stop - pos < 4 or data[pos + 2] != 0x0A or data[pos + 3] != stop - pos - 4:
                    return None
                values = data[pos + 4 : stop]
                if values and max(values) >= 0x80:
                    return None
                dims = list(values)
            tensors.append({"dims": dims})
            pos = stop
        nodes.append({"tensors": tensors})
    return {"nodes": nodes}


_FAST_DECODERS = {"LayoutConfig": _fast_layout_config}


def _decode(buf, start: int, end: int, type_name: str, path: str) -> dict[str, Any]:
    schema = SCHEMAS[type_name]
    message = empty_message(type_name, path)
    counts: dict[int, int] = {}
    for number, wire_type, value, key_offset in iter_fields(buf, start, end, path):
        field: Field | None = schema.get(number)
        if field is None:
            continue  # unknown field: skipped, as protobuf does
        kind = field.kind
        if kind in _SCALAR_WIRE_TYPE:
            expected = _SCALAR_WIRE_TYPE[kind]
            if field.repeated and wire_type == LENGTH_DELIMITED and expected == VARINT:
                message[field.name].extend(
                    _read_packed(buf, value[0], value[1], kind, f"{path}.{field.name}")
                )
                continue
            if wire_type != expected:
                raise WireFormatError(
                    key_offset,
                    path,
                    f"field {number} ({field.name}) has wire type {wire_type} "
                    f"({_WIRE_TYPE_NAMES.get(wire_type)}), "
                    f"expected {expected} ({_WIRE_TYPE_NAMES[expected]}) for a {kind}",
                )
            if kind == "string":
                try:
                    decoded: Any = bytes(buf[value[0] : value[1]]).decode("utf-8")
                except UnicodeDecodeError:
                    raise WireFormatError(
                        key_offset, path, f"field {number} ({field.name}) is not valid UTF-8"
                    ) from None
            elif kind == "bytes":
                decoded = bytes(buf[value[0] : value[1]])
            else:
                decoded = _convert_varint(kind, value)
            if field.repeated:
                message[field.name].append(decoded)
            else:
                message[field.name] = decoded
        else:
            if wire_type != LENGTH_DELIMITED:
                raise WireFormatError(
                    key_offset,
                    path,
                    f"field {number} ({field.name}) has wire type {wire_type} "
                    f"({_WIRE_TYPE_NAMES.get(wire_type)}), "
                    f"expected 2 (length-delimited) for a {kind} message",
                )
            if field.lazy:
                message[field.name].add(buf, value)
            elif field.repeated:
                index = counts.get(number, 0)
                counts[number] = index + 1
                message[field.name].append(
                    _decode(buf, value[0], value[1], kind, f"{path}.{field.name}[{index}]")
                )
            else:
                fast = _FAST_DECODERS.get(kind)
                child = fast(buf, value[0], value[1]) if fast is not None else None
                if child is None:
                    child = _decode(buf, value[0], value[1], kind, f"{path}.{field.name}")
                if message[field.name] is None:
                    message[field.name] = child
                else:
                    _merge(message[field.name], child, kind)
            if field.oneof is not None:
                # Setting one member of a oneof clears the others: the last one on the wire wins.
                for other in schema.values():
                    if other.oneof == field.oneof and other is not field:
                        message[other.name] = None
    return message


def decode_message(
    data: bytes | memoryview, type_name: str, *, start: int = 0, end: int | None = None
) -> dict:
    """Decode ``data[start:end]`` as a message of ``type_name`` (a key of ``schema.SCHEMAS``).

    Raises ``WireFormatError`` (byte offset and field path in the message) on malformed bytes.

    >>> decode_message(bytes([0x08, 0x96, 0x01]), "TensorLayoutConfig")  # field 1, varint 150
    {'dims': [150]}
    """
    buf = memoryview(data) if not isinstance(data, memoryview) else data
    stop = len(buf) if end is None else end
    return _decode(buf, start, stop, type_name, type_name)


def top_level_fields(data: bytes | memoryview, path: str = "message") -> list[tuple[int, int, Any, int]]:
    """The ``(field_number, wire_type, value, offset)`` of each top-level field, without decoding further."""
    buf = memoryview(data) if not isinstance(data, memoryview) else data
    return list(iter_fields(buf, 0, len(buf), path))


__all__ = [
    "LazyMessages",
    "WireFormatError",
    "decode_message",
    "empty_message",
    "iter_fields",
    "read_varint",
    "top_level_fields",
]
