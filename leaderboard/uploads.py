"""Receiving an upload: the checks first, then the body, streamed to disk.

A multipart body is parsed as it arrives (``python_multipart``'s push parser). The small fields that
come before the file (the form's CSRF token, a typed team token, the browser key, a description) are
kept; when the file's part begins, ``admit`` runs (who is uploading, whether the competition is open,
the team's daily limit and caps) and a refusal is answered before any more of the body is read. The
file itself is written to a ``SpooledTemporaryFile`` that moves to disk past ``SPOOL_BYTES``, so an
upload holds at most that much memory, waiting for a scoring slot and being scored (the validator
streams it from the file, ``leaderboard.scorer``), and a refused one never more than one network
chunk. The file's size is counted as it arrives and refused (413) past the server's limit.
"""

from __future__ import annotations

import codecs
import hashlib
import zlib
from collections.abc import Awaitable, Callable
from tempfile import SpooledTemporaryFile
from typing import BinaryIO

from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from leaderboard.errors import LeaderboardError, PayloadTooLarge

SPOOL_BYTES = 64 * 1024  # an upload's bytes kept in memory before it moves to a temporary file
FIELD_BYTES = 256 * 1024  # one form field other than the file (a description is at most 500 characters)
MAX_FIELDS = 8
READ_CHUNK = 64 * 1024  # what is read of a file at once (hashing, compressing)
FILE_FIELD = "file"


class BadForm(LeaderboardError):
    status_code = 422


class ReceivedFile:
    """An uploaded file as received: its name and size, its bytes in memory up to SPOOL_BYTES and on
    disk past that."""

    def __init__(self, file_name: str | None) -> None:
        self.file_name = file_name
        self.size = 0
        # Closed by close(), once the upload is answered (it outlives any one with-block here).
        self._file: SpooledTemporaryFile[bytes] = SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115

    @classmethod
    def from_bytes(cls, content: bytes, file_name: str | None = None) -> ReceivedFile:
        received = cls(file_name)
        received.write(content)
        return received

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self.size += len(data)

    def head(self, size: int) -> bytes:
        """The file's first ``size`` bytes."""
        self._file.seek(0)
        return self._file.read(size)

    def stream(self) -> BinaryIO:
        """The file, from its start, to read as it is (the validator reads it 64 KiB at a time)."""
        self._file.seek(0)
        return self._file  # type: ignore[return-value]

    def chunks(self):
        self._file.seek(0)
        while chunk := self._file.read(READ_CHUNK):
            yield chunk

    def read(self) -> bytes:
        """The whole file (read when it is scored, inside a scoring slot)."""
        self._file.seek(0)
        return self._file.read()

    def digest_and_compressed_size(self) -> tuple[str, int]:
        """SHA-256 (hex) and zlib level-1 size, read from disk in chunks."""
        sha, packer, packed = hashlib.sha256(), zlib.compressobj(1), 0
        for chunk in self.chunks():
            sha.update(chunk)
            packed += len(packer.compress(chunk))
        return sha.hexdigest(), packed + len(packer.flush())

    def compressed(self) -> bytes:
        """The file compressed as it is stored (zlib, level 1)."""
        packer = zlib.compressobj(1)
        parts = [packer.compress(chunk) for chunk in self.chunks()]
        return b"".join([*parts, packer.flush()])

    def close(self) -> None:
        self._file.close()


class _Part:
    def __init__(self) -> None:
        self.disposition = b""
        self.name = ""
        self.file: ReceivedFile | None = None
        self.data = bytearray()


class FormReader:
    """Parses one multipart body; see the module's docstring."""

    def __init__(self, request: Request, max_file_bytes: int,
                 admit: Callable[[dict[str, str]], Awaitable[None]]) -> None:
        self.request = request
        self.max_file_bytes = max_file_bytes
        self.admit = admit
        self.fields: dict[str, str] = {}
        self.file: ReceivedFile | None = None
        self._part = _Part()
        self._header_name = b""
        self._header_value = b""
        self._file_data: list[bytes] = []
        self._file_began = False
        self._admitted = False
        self._charset = "utf-8"

    # python_multipart's callbacks (synchronous: they only record; read() acts on what they saw)

    def _on_part_begin(self) -> None:
        self._part = _Part()

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        if self._header_name.lower() == b"content-disposition":
            self._part.disposition = self._header_value
        self._header_name, self._header_value = b"", b""

    def _on_headers_finished(self) -> None:
        _, options = parse_options_header(self._part.disposition)
        self._part.name = options.get(b"name", b"").decode(self._charset, "replace")
        if self._part.name == FILE_FIELD and b"filename" in options:
            if self.file is not None:
                raise BadForm("Upload one file per submission (the field 'file').")
            self._part.file = self.file = ReceivedFile(options[b"filename"].decode(self._charset, "replace"))
            self._file_began = True
        elif len(self.fields) >= MAX_FIELDS:
            raise BadForm("The form has too many fields; a submission is the field 'file' and an optional "
                          "'description'.")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._part.file is not None:
            self._file_data.append(data[start:end])
            return
        self._part.data += data[start:end]
        if len(self._part.data) > FIELD_BYTES:
            raise PayloadTooLarge(f"The form field {self._part.name!r} is over {FIELD_BYTES // 1024} KiB.")

    def _on_part_end(self) -> None:
        if self._part.file is None and self._part.name:
            self.fields[self._part.name] = self._part.data.decode(self._charset, "replace")

    async def read(self) -> tuple[dict[str, str], ReceivedFile | None]:
        """``(fields, file)``; refusals (``admit``'s, 413, 422) are raised before the rest is read."""
        content_type = self.request.headers.get("content-type", "")
        kind, params = parse_options_header(content_type)
        if kind != b"multipart/form-data" or b"boundary" not in params:
            raise BadForm("A submission is a multipart/form-data upload with the file in the field 'file'.")
        charset = params.get(b"charset", b"utf-8").decode("latin-1")
        try:
            self._charset = codecs.lookup(charset).name
        except LookupError:
            self._charset = "latin-1"
        parser = MultipartParser(params[b"boundary"], {
            "on_part_begin": self._on_part_begin, "on_part_data": self._on_part_data,
            "on_part_end": self._on_part_end, "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value, "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
        })
        try:
            async for chunk in self.request.stream():
                parser.write(chunk)
                await self._take_file_data()
            parser.finalize()
        except FormParserError:
            self._discard()
            raise BadForm("The upload is not a well-formed multipart/form-data body.") from None
        except BaseException:  # a refusal, a disconnect: the file is not kept
            self._discard()
            raise
        if not self._admitted:  # no file in the form: the checks still run, and say what is missing
            await self.admit(self.fields)
            self._admitted = True
        return self.fields, self.file

    async def _take_file_data(self) -> None:
        if self._file_began and not self._admitted:
            await self.admit(dict(self.fields))  # before any more of the body is read
            self._admitted = True
        if self.file is None:
            return
        for data in self._file_data:
            if self.file.size + len(data) > self.max_file_bytes:
                raise PayloadTooLarge(
                    f"The file is larger than the server's limit of {self.max_file_bytes / 2**20:.1f} MiB. "
                    "Nothing was stored or counted.", max_upload_bytes=self.max_file_bytes)
            self.file.write(data)
        self._file_data.clear()

    def _discard(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
