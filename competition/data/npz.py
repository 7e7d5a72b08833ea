"""Reading npz members in bounded memory: headers, exact reads and small arrays, with file-naming errors.

An npz is a zip of ``.npy`` members. ``np.load`` decodes a member whole; the kit's summaries, the
processed cache and the benchmarks instead read a member's header (shape, dtype) and then its data in
chunks, so a 100,040-config tensor (872 MB of float32) never has to fit in memory. Every read error
becomes a ``DataFormatError`` that names the file and the array.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from competition.errors import DataFormatError


def read_exactly(fp: IO[bytes], size: int, path: Path, key: str) -> bytes:
    """``size`` bytes of an npz member, or a DataFormatError naming the file when it ends early."""
    parts = []
    remaining = size
    while remaining:
        part = fp.read(remaining)
        if not part:
            raise DataFormatError(path,
                                  f"array {key!r} is truncated ({size - remaining} of {size} "
                                  "bytes of a chunk)")
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts) if len(parts) != 1 else parts[0]


def read_npy_header(fp: IO[bytes], path: Path, key: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran order and dtype of an npy member, leaving ``fp`` at the first data byte."""
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fp)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(fp)
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
        raise DataFormatError(path, f"array {key!r} has no readable .npy header: {exc}") from None
    raise DataFormatError(path, f"array {key!r} uses .npy format version {version}, expected 1.0 or 2.0")


def load_npz_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, key: str) -> np.ndarray:
    """One (small) array of an npz archive, read errors turned into a DataFormatError."""
    try:
        with archive.open(info) as fp:
            return np.lib.format.read_array(fp, allow_pickle=False)
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
        raise DataFormatError(path, f"array {key!r} cannot be read (truncated or corrupt?): {exc}") from None
