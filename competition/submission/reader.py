"""Reading a submission file: streaming, sniffing the encoding, splitting CSV lines, within size caps.

``validate_submission`` reads a path, bytes or a binary file 64 KiB at a time, one line in memory,
refuses what is not UTF-8 CSV text from its first bytes (encodings, archives, binary formats), splits
each line into fields with RFC 4180 quoting, and hands each row to the ID and row rules
(``ids.RowChecker``). Line-level faults are problems with the line number, never exceptions.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator, Mapping
from typing import BinaryIO

from competition.collections import SUBMISSION_HEADER, Collection, is_row_id
from competition.submission.ids import RowChecker
from competition.submission.rules import (
    DEFAULT_MAX_PROBLEMS,
    Problem,
    ProblemList,
    Truncated,
    ValidationResult,
)
from competition.text import format_bytes, plural, show

ID_COLUMN, TOP_CONFIGS_COLUMN = SUBMISSION_HEADER
_DIGITS = re.compile(r"[0-9]+")
DEFAULT_MAX_BYTES = 64 * 2**20

_CHUNK_BYTES = 1 << 16
# Control characters other than tab (judged by the row rule) and CR (judged as a line ending).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_UTF8_BOM = b"\xef\xbb\xbf"
_ENCODING_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
)
_BINARY_MAGIC = (
    (b"PK\x03\x04", "a zip archive (a zipped CSV, an .npz or an Excel .xlsx workbook?)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"PAR1", "a Parquet file"),
    (b"\x93NUMPY", "a NumPy .npy file"),
    (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook"),
    (b"%PDF", "a PDF document"),
)


class _Stop(Exception):
    """A problem after which the rest of the file cannot be read meaningfully."""

    def __init__(self, problem: Problem | None) -> None:
        super().__init__(str(problem))
        self.problem = problem


def validate_submission(
    source: str | os.PathLike | bytes | BinaryIO,
    expected: Mapping[str, int],
    *,
    max_problems: int = DEFAULT_MAX_PROBLEMS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_line_bytes: int | None = None,
) -> ValidationResult:
    """Validate a submission CSV against the test graphs it must cover.

    Args:
        source: a path, the file's bytes, or a binary file object (read, not closed).
        expected: every required ID -> its number of configs (see ``expected_from_data_dir``).
        max_problems: report at most this many problems; on one more, stop and set
            ``problems_truncated``.
        max_bytes: refuse larger files (``too-large``) without reading past the limit.
        max_line_bytes: refuse a line longer than this (``line-too-long``) as soon as it is crossed.
            Default: twice the longest valid row these graphs allow, plus 1 KiB.

    The file is read in 64 KiB chunks, one line in memory at a time. Unreadable paths raise OSError
    (a usage problem); anything wrong with the content is a Problem, never an exception.
    """
    problems = ProblemList(max_problems)
    checker = RowChecker(expected, problems)
    if max_line_bytes is None:
        max_line_bytes = _default_line_cap(checker.graphs)
    reader = _FileReader(checker, problems)
    try:
        with _open_source(source) as stream:
            size = _known_size(source, stream)
            if size is not None and size > max_bytes:
                raise _Stop(_too_large(max_bytes, checker.graphs))
            for line_no, raw in _physical_lines(stream, max_bytes, max_line_bytes, checker.graphs):
                reader.feed(line_no, raw)
        reader.finish()
    except Truncated:
        pass
    except _Stop as stop:
        if stop.problem is not None:
            with contextlib.suppress(Truncated):
                problems.add(stop.problem.line, stop.problem.row_id, stop.problem.rule, stop.problem.message)
    return ValidationResult(problems.items, checker.rows, problems.truncated)


class _open_source:
    """Context manager giving a binary stream for a path, bytes or a file object."""

    def __init__(self, source: str | os.PathLike | bytes | BinaryIO) -> None:
        self.source = source
        self.owned: BinaryIO | None = None

    def __enter__(self) -> BinaryIO:
        source = self.source
        if isinstance(source, bytes | bytearray | memoryview):
            return io.BytesIO(bytes(source))
        if isinstance(source, str | os.PathLike):
            self.owned = open(source, "rb")  # noqa: SIM115 - closed in __exit__
            return self.owned
        if hasattr(source, "read"):
            return source  # type: ignore[return-value]
        raise TypeError(f"source must be a path, bytes or a binary file object, not {type(source).__name__}")

    def __exit__(self, *exc: object) -> None:
        if self.owned is not None:
            self.owned.close()


def _known_size(source: object, stream: BinaryIO) -> int | None:
    """Size of a path or bytes source, to refuse a huge file before reading a byte of it."""
    if isinstance(source, bytes | bytearray | memoryview):
        return len(source)
    if isinstance(source, str | os.PathLike):
        try:
            return os.fstat(stream.fileno()).st_size
        except OSError:
            return None
    return None  # a file object: the streaming count decides


def _physical_lines(
    stream: BinaryIO, max_bytes: int, max_line_bytes: int, graphs: Mapping[str, tuple[Collection, int]]
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, bytes without the '\\n')`` reading 64 KiB at a time, within the caps."""
    total = 0
    pending = b""
    line_no = 0
    first = True
    while True:
        chunk = stream.read(min(_CHUNK_BYTES, max_bytes + 1 - total))
        if isinstance(chunk, str):
            raise TypeError("the submission file object must be opened in binary mode ('rb')")
        chunk = bytes(chunk or b"")
        total += len(chunk)
        if total > max_bytes:
            raise _Stop(_too_large(max_bytes, graphs))
        if not chunk:
            if pending:
                yield line_no + 1, pending
            return
        if first:
            _sniff(chunk)
            first = False
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for part in parts:
            line_no += 1
            if len(part) > max_line_bytes:
                raise _Stop(_line_too_long(line_no, part, max_line_bytes))
            yield line_no, part
        if len(pending) > max_line_bytes:
            raise _Stop(_line_too_long(line_no + 1, pending, max_line_bytes))


def _sniff(head: bytes) -> None:
    """Refuse, from the first bytes, files that are not UTF-8 text at all."""
    for bom, name in _ENCODING_BOMS:
        if head.startswith(bom):
            raise _Stop(Problem(
                None, None, "encoding",
                f"the file is encoded as {name}: it starts with that encoding's byte-order mark; save it as "
                f"UTF-8 (pandas' to_csv writes UTF-8 by default; in Excel choose 'CSV UTF-8')",
            ))
    for magic, name in _BINARY_MAGIC:
        if head.startswith(magic):
            raise _Stop(Problem(
                None, None, "binary",
                f"the file is {name}, not a CSV text file; submit the plain, uncompressed CSV",
            ))
    sample = head[:512]
    if len(sample) >= 4 and 0 in sample:
        even, odd = sample[0::2], sample[1::2]
        for zeros, text, order in ((odd, even, "little"), (even, odd, "big")):
            if zeros.count(0) >= 0.9 * len(zeros) and text.count(0) == 0:
                raise _Stop(Problem(
                    None, None, "encoding",
                    f"the file looks like UTF-16 ({order}-endian, without a byte-order mark): every other "
                    f"byte is NUL; save it as UTF-8",
                ))
        # A stray NUL in a text file is reported on its line; NULs in the header or everywhere mean binary.
        controls = sum(1 for byte in sample if byte < 9 or 13 < byte < 32)
        if 0 in sample.split(b"\n", 1)[0] or controls > len(sample) // 10:
            raise _Stop(Problem(
                None, None, "binary",
                f"the file contains NUL bytes (the first at byte {sample.index(0) + 1}): it is binary, not a "
                f"CSV text file",
            ))


def _too_large(max_bytes: int, graphs: Mapping[str, tuple[Collection, int]]) -> Problem:
    typical = sum(len(row_id) + 2 + _row_text_bytes(c, n) for row_id, (c, n) in graphs.items())
    return Problem(
        None, None, "too-large",
        f"the file is larger than the {format_bytes(max_bytes)} limit (stopped reading there); a complete "
        f"submission for these {len(graphs)} test graphs is about {format_bytes(typical)}",
    )


def _line_too_long(line_no: int, start: bytes, max_line_bytes: int) -> Problem:
    hint = ""
    if b"\r" in start.rstrip(b"\r"):
        hint = ("; it contains carriage returns but no newline: save the file with '\\n' or '\\r\\n' "
                "line endings")
    return Problem(
        line_no, None, "line-too-long",
        f"the line is longer than {format_bytes(max_line_bytes)}, more than any valid row for these graphs "
        f"(stopped reading there){hint}",
    )


def _row_text_bytes(collection: Collection, n_configs: int) -> int:
    """Bytes of the TopConfigs text of a plain row listing the required number of indices."""
    listed = collection.required_length(n_configs)
    return listed * (len(str(n_configs - 1)) + 1)


def _default_line_cap(graphs: Mapping[str, tuple[Collection, int]]) -> int:
    # Any row may list all configs (a full ranking of a tile graph is tolerated), with spaces.
    longest_id = max((len(row_id) for row_id in graphs), default=0)
    largest = max((n for _, n in graphs.values()), default=1)
    longest_row = longest_id + 5 + largest * (len(str(largest - 1)) + 1)
    return 2 * longest_row + 1024


class _FileReader:
    """Turns physical lines into header and rows, and line-level faults into problems."""

    def __init__(self, checker: RowChecker, problems: ProblemList) -> None:
        self.checker = checker
        self.problems = problems
        self.columns: tuple[int, int, int] | None = None  # (ID position, TopConfigs position, count)
        self.pending_blank: int | None = None  # a blank line is fine only as the very last line
        self.saw_content = False

    def feed(self, line_no: int, raw: bytes) -> None:
        if line_no == 1 and raw.startswith(_UTF8_BOM):
            raw = raw[len(_UTF8_BOM):]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._before_content(line_no)
            self._encoding_error(line_no, raw, exc)
            return
        if not text.strip(" "):
            if self.pending_blank is not None:
                self._blank_line(self.pending_blank)
            self.pending_blank = line_no
            return
        self._before_content(line_no)
        control = _CONTROL.search(text)
        if control is not None:
            char = control.group()
            name = "a NUL byte" if char == "\x00" else f"the control character 0x{ord(char):02X}"
            self._line_fault(line_no, text, "binary",
                             f"the line contains {name} at column {control.start() + 1}; a submission is "
                             f"plain text")
            return
        if "\r" in text:
            self._line_fault(line_no, text, "line-ending",
                             "the line contains a carriage return (\\r) at column "
                             f"{text.index(chr(13)) + 1}; lines end with '\\n' or '\\r\\n' "
                             "(old Mac line endings?)")
            return
        try:
            fields = _split_fields(text)
        except _QuoteError as exc:
            self._line_fault(line_no, text, "quoting", str(exc))
            return
        if self.columns is None:
            self._header(line_no, fields)
        else:
            self._row(line_no, fields)

    def finish(self) -> None:
        if self.columns is None:
            if not self.saw_content:
                self.problems.add(
                    None, None, "empty-file",
                    f"the file is empty; expected the header '{','.join(SUBMISSION_HEADER)}' and one row per "
                    f"test graph ({len(self.checker.graphs)} rows)",
                )
            return
        self.checker.report_missing()

    # ---- lines

    def _before_content(self, line_no: int) -> None:
        self.saw_content = True
        if self.pending_blank is not None:
            self._blank_line(self.pending_blank)
            self.pending_blank = None

    def _blank_line(self, line_no: int) -> None:
        self.problems.add(
            line_no, None, "empty-row",
            "the line is blank; remove blank lines (a single empty line is allowed only at the very end)",
        )

    def _encoding_error(self, line_no: int, raw: bytes, exc: UnicodeDecodeError) -> None:
        byte = raw[exc.start]
        guess = " (saved as Latin-1 or Windows-1252?)" if byte >= 0x80 else ""
        self._line_fault(
            line_no, raw.decode("utf-8", errors="replace"), "encoding",
            f"the line is not valid UTF-8: byte 0x{byte:02X} at byte {exc.start + 1} cannot be decoded"
            f"{guess}; save the file as UTF-8",
        )

    def _line_fault(self, line_no: int, text: str, rule: str, message: str) -> None:
        if self.columns is None:
            # Without a readable first line the columns are unknown: nothing after can be judged.
            self.problems.add(line_no, None, rule, message)
            raise _Stop(None)
        row_id = self.checker.note_seen(line_no, _guess_id(text, self.columns[0]))
        self.problems.add(line_no, row_id, rule, message)

    # ---- header

    def _header(self, line_no: int, fields: list[str]) -> None:
        header = ",".join(SUBMISSION_HEADER)
        if fields in (list(SUBMISSION_HEADER), list(reversed(SUBMISSION_HEADER))):
            self.columns = (fields.index(ID_COLUMN), fields.index(TOP_CONFIGS_COLUMN), 2)
            return
        id_like = [i for i, f in enumerate(fields) if f in self.checker.graphs or is_row_id(f)]
        if id_like:
            self.problems.add(
                line_no, None, "header",
                f"the first line is a data row, not the header; the file must start with the line '{header}'",
            )
            if len(fields) != 2:
                raise _Stop(None)  # no header and a row of unknown shape: the columns are unknown
            self.columns = (id_like[0], 1 - id_like[0], 2)
            self._row(line_no, fields)
            return
        if len(fields) == 1:
            for sep, name in ((";", "';'"), ("\t", "tabs"), ("|", "'|'"), (" ", "spaces")):
                if len(fields[0].split(sep)) == 2:
                    self.problems.add(
                        line_no, None, "header",
                        f"the header {show(fields[0])} separates its columns with {name}; a submission is "
                        f"comma-separated: '{header}'",
                    )
                    raise _Stop(None)
        positions: dict[str, int] = {}
        complaint: dict[str, str] = {}  # expected name -> what was found instead
        for name in SUBMISSION_HEADER:
            if name in fields:
                positions[name] = fields.index(name)
                continue
            near = [i for i, f in enumerate(fields) if _normalize_name(f) == _normalize_name(name)]
            if near:
                positions[name] = near[0]
                complaint[name] = (f"{name!r} is missing (found {show(fields[near[0]])}; names are exact "
                                   f"and case-sensitive)")
        unplaced = [name for name in SUBMISSION_HEADER if name not in positions]
        free = [i for i in range(len(fields)) if i not in positions.values()]
        # Each name found nowhere: the column in its place (its position in the expected header when that
        # one is free, else the first free one), so the message shows what the file has instead.
        unclaimed = list(free)
        for name in unplaced:
            at = SUBMISSION_HEADER.index(name)
            at = at if at in unclaimed else (unclaimed[0] if unclaimed else None)
            if at is None:
                complaint[name] = f"{name!r} is missing (the header has no column for it)"
            else:
                unclaimed.remove(at)
                complaint[name] = f"{name!r} is missing (column {at + 1} is {show(fields[at])})"
        complaints = [complaint[name] for name in SUBMISSION_HEADER if name in complaint]
        if len(fields) == 2 and len(unplaced) == 1:
            positions[unplaced[0]] = free[0]  # e.g. 'ID,Predictions': the other column is TopConfigs
        if len(positions) < 2 and len(fields) != 2:
            complaints.append(f"it has {len(fields)} column{plural(len(fields))}, a submission exactly two")
        if complaints:
            self.problems.add(
                line_no, None, "header",
                f"the header is {show(','.join(fields))}; expected '{header}' (these exact names, in "
                f"either order): {'; '.join(complaints)}",
            )
        if len(positions) < 2:
            raise _Stop(None)  # the columns are unknown: the rows cannot be judged
        extra = [f for i, f in enumerate(fields) if i not in positions.values()]
        if extra:
            # pandas' to_csv writes the index as a first column with an empty name (read back: 'Unnamed: 0').
            pandas_index = 0 not in positions.values() and fields[0].strip() in ("", "Unnamed: 0")
            hint = "; it looks like pandas' index column: write the file with to_csv(..., index=False)" \
                if pandas_index else ""
            self.problems.add(
                line_no, None, "extra-column",
                f"the header has {len(fields)} columns; a submission has exactly {ID_COLUMN} and "
                f"{TOP_CONFIGS_COLUMN} (extra: {', '.join(show(f) for f in extra[:5])}){hint}",
            )
        self.columns = (positions[ID_COLUMN], positions[TOP_CONFIGS_COLUMN], len(fields))

    # ---- rows

    def _row(self, line_no: int, fields: list[str]) -> None:
        assert self.columns is not None
        id_pos, cfg_pos, count = self.columns
        if len(fields) != count:
            row_id = self.checker.note_seen(line_no, fields[id_pos] if id_pos < len(fields) else None)
            if len(fields) > count:
                self.problems.add(line_no, row_id, "extra-column", _extra_fields_message(fields, count))
            else:
                self.problems.add(
                    line_no, row_id, "missing-field",
                    f"the row has {len(fields)} field{plural(len(fields))} but the header has {count}; "
                    f"a row is <ID>,<TopConfigs>",
                )
            return
        self.checker.check(line_no, fields[id_pos], fields[cfg_pos])


def _extra_fields_message(fields: list[str], count: int) -> str:
    message = f"the row has {len(fields)} fields but the header has {count}"
    extra = fields[count:]
    if all(not f.strip(" ") for f in extra):
        return message + " (a trailing ','?)"
    if sum(1 for f in fields if _DIGITS.fullmatch(f.strip(" "))) >= len(fields) - 1:
        return message + "; separate config indices with ';', not ','"
    return message + "; quote a field that contains ','"


class _QuoteError(ValueError):
    pass


def _split_fields(line: str) -> list[str]:
    """Split one CSV line into fields (RFC 4180 quoting; a record never spans lines here)."""
    if '"' not in line:
        return line.split(",")
    fields: list[str] = []
    i, end = 0, len(line)
    while True:
        if i < end and line[i] == '"':
            opened, j, parts = i, i + 1, []
            while True:
                k = line.find('"', j)
                if k < 0:
                    raise _QuoteError(
                        f"unterminated quote: the quote at column {opened + 1} is never closed on this line"
                    )
                parts.append(line[j:k])
                if line.startswith('"', k + 1):  # "" inside a quoted field is one quote
                    parts.append('"')
                    j = k + 2
                    continue
                break
            fields.append("".join(parts))
            i = k + 1
            if i == end:
                return fields
            if line[i] != ",":
                raise _QuoteError(
                    f"unexpected text after the closing quote at column {k + 1}; a quoted field must be "
                    f"followed by ',' or the end of the line"
                )
            i += 1
        else:
            k = line.find(",", i)
            value = line[i:] if k < 0 else line[i:k]
            if '"' in value:
                raise _QuoteError(
                    f"a quote inside an unquoted field at column {i + value.index(chr(34)) + 1}; quote the "
                    f"whole field (with no space before the opening quote) or remove the quote"
                )
            fields.append(value)
            if k < 0:
                return fields
            i = k + 1


def _guess_id(text: str, id_pos: int) -> str | None:
    """Best-effort ID of a line that cannot be parsed properly."""
    parts = text.split(",")
    return parts[id_pos].strip('"') if id_pos < len(parts) else None


def _normalize_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())
