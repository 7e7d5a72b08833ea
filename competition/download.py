"""Fetch the released data into the Kaggle tree (``OUT/npz_all/npz/<task>/<source>[/<search>]/<split>``).

Two sources:

- ``mirror``: the upstream tar files (``npz_tile_xla_{split}.tar``,
  ``npz_layout_{source}_{search}_{split}.tar``), one per collection and split, each unpacking to
  ``npz/<subpath>/<split>/``. Downloads go to ``OUT/.downloads/<name>.part`` and resume with an HTTP
  Range request when rerun; a finished file is checked against Content-Length, listed as a tar (which
  catches truncation and corruption) and renamed to ``<name>``.
- ``kaggle``: the competition zip through the ``kaggle`` package (see ``competition.kaggle_api``),
  checked with ``ZipFile.testzip``.

Unpacking never leaves a half-written tree: each archive is unpacked into a temporary folder inside
``OUT`` and every split folder is then renamed into place (one rename each). A split folder that is
already in place is left alone and not downloaded again (delete it to fetch it anew). Archive members
with absolute paths, ``..``, links or device files are refused.

The sha256 of every archive fetched is appended to ``OUT/.downloads/SHA256SUMS`` (``sha256sum`` format)
so that two downloads can be compared; the kit ships no reference checksums because upstream publishes
none. ``expected_sha256`` (a file in the same format) makes a download fail on a mismatch.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from competition.collections import COLLECTIONS, SPLITS, Collection

DEFAULT_MIRROR_URL = "http://download.tensorflow.org/data/tpu_graphs/v0/"
DOWNLOADS_DIR = ".downloads"
SHA256_FILE = "SHA256SUMS"
_CHUNK = 1 << 20


class DownloadError(Exception):
    """A download that failed; the message names what failed and what to do."""


@dataclass(frozen=True)
class Part:
    """One collection and split: one mirror archive, one folder of the tree."""

    collection: Collection
    split: str

    @property
    def archive_name(self) -> str:
        c = self.collection
        stem = f"npz_tile_{c.source}" if c.is_tile else f"npz_layout_{c.source}_{c.search}"
        return f"{stem}_{self.split}.tar"

    @property
    def member_dir(self) -> str:
        """The folder this part occupies inside an archive, relative to its ``npz/`` root."""
        return f"{self.collection.subpath}/{self.split}"

    def target(self, out: Path) -> Path:
        return out / "npz_all" / "npz" / self.member_dir


def select_parts(collections: Sequence[Collection] | None = None, splits: Sequence[str] | None = None) -> list[Part]:
    """Every (collection, split) asked for, in the kit's order; None means all."""
    chosen = collections or COLLECTIONS
    return [Part(c, s) for c in COLLECTIONS if c in chosen for s in SPLITS if s in (splits or SPLITS)]


# --------------------------------------------------------------------------------------------------
# Fetching one file, resumably


def fetch(url: str, dest: Path, *, timeout: float = 60.0, progress: bool = True) -> Path:
    """Download ``url`` to ``dest`` through ``dest.part``, resuming a previous partial download.

    The ``.part`` file stays when the transfer breaks off so that a rerun continues it; ``dest`` appears
    only once the byte count matches the server's Content-Length.
    """
    from tqdm import tqdm

    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - URL is the user's
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # the .part is already whole (or longer): start over once
            part.unlink()
            return fetch(url, dest, timeout=timeout, progress=progress)
        hint = " (is --mirror-url right?)" if exc.code == 404 else ""
        raise DownloadError(f"{url}: the server answered HTTP {exc.code} {exc.reason}{hint}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(f"{url}: cannot fetch it ({reason}); check the network and the URL, then rerun") from None
    with response:
        resumed = offset > 0 and getattr(response, "status", None) == 206
        if not resumed:
            offset = 0  # the server ignored the Range header (or there was nothing to resume)
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else None
        with open(part, "ab" if resumed else "wb") as fh, tqdm(
            total=total, initial=offset, unit="B", unit_scale=True, desc=dest.name, disable=not progress or None,
        ) as bar:
            try:
                while chunk := response.read(_CHUNK):
                    fh.write(chunk)
                    bar.update(len(chunk))
            except (OSError, http.client.HTTPException) as exc:
                raise DownloadError(f"{url}: the transfer broke off ({exc}); rerun to resume from "
                                    f"{part}") from None
    size = part.stat().st_size
    if total is not None and size != total:
        raise DownloadError(f"{url}: got {size} of {total} bytes; rerun to resume from {part}")
    part.replace(dest)
    return dest


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_sha256_manifest(path: Path) -> dict[str, str]:
    """``sha256sum``-format lines (``HEX  NAME``) -> {name: hex}; DownloadError on a malformed line."""
    manifest = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        digest, _, name = line.strip().partition(" ")
        name = name.strip().lstrip("*")
        if len(digest) != 64 or not name or any(ch not in "0123456789abcdefABCDEF" for ch in digest):
            raise DownloadError(f"{path}, line {number}: expected '<64 hex digits>  <file name>'")
        manifest[name] = digest.lower()
    return manifest


# --------------------------------------------------------------------------------------------------
# Checking and unpacking archives


def _unsafe_reason(name: str) -> str | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or (path.parts and ":" in path.parts[0]):
        return "an absolute path"
    if ".." in path.parts:
        return "'..' in its path"
    return None


def check_tar(path: Path) -> list[tarfile.TarInfo]:
    """List a tar file completely (catching truncation and corruption) and refuse unsafe members."""
    try:
        with tarfile.open(path, "r:") as tar:  # the mirror's archives are plain, uncompressed tars
            members = tar.getmembers()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DownloadError(f"{path}: not a readable tar file ({exc})") from None
    for member in members:
        reason = _unsafe_reason(member.name)
        if reason is None and not (member.isfile() or member.isdir()):
            reason = "a link or special file"
        if reason:
            raise DownloadError(f"{path}: refusing to unpack member {member.name!r}: {reason}")
    return members


def check_zip(path: Path) -> list[str]:
    """Test a zip file's CRCs and refuse unsafe member names; returns the member names."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
            names = archive.namelist()
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise DownloadError(f"{path}: not a readable zip file ({exc}); delete it and run the command again") from None
    if bad is not None:
        raise DownloadError(f"{path}: member {bad!r} is corrupt; delete the zip and run the command again")
    for name in names:
        reason = _unsafe_reason(name)
        if reason:
            raise DownloadError(f"{path}: refusing to unpack member {name!r}: {reason}")
    return names


def _npz_root_in(staging: Path) -> Path:
    """The ``npz/`` folder of an unpacked archive (mirror tars hold ``npz/``, Kaggle's zip ``npz_all/npz``)."""
    for candidate in (staging / "npz_all" / "npz", staging / "npz"):
        if candidate.is_dir():
            return candidate
    return staging / "npz"


def _move_parts(staging: Path, out: Path, parts: Iterable[Part], archive: Path) -> list[Part]:
    """Rename each part's folder from an unpacked archive into the tree; returns the parts moved."""
    root = _npz_root_in(staging)
    moved = []
    for part in parts:
        source = root / part.member_dir
        if not source.is_dir():
            raise DownloadError(f"{archive}: holds no npz/{part.member_dir}/ folder; is it the right archive?")
        target = part.target(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        moved.append(part)
    return moved


def unpack_tar(archive: Path, out: Path, parts: Sequence[Part]) -> list[Part]:
    """Unpack a checked tar into a temporary folder in ``out`` and rename its parts into the tree."""
    members = check_tar(archive)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=out))
    try:
        with tarfile.open(archive, "r:") as tar:
            tar.extractall(staging, members=members, filter="data")
        return _move_parts(staging, out, parts, archive)
    except (tarfile.TarError, OSError) as exc:
        raise DownloadError(f"{archive}: unpacking failed ({exc}); nothing of it was put in place") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def unpack_kaggle_zip(archive: Path, out: Path, parts: Sequence[Part]) -> list[Part]:
    """Unpack the asked-for npz folders (and top-level files such as sample_submission.csv) of Kaggle's zip.

    The raw protos under ``pb/`` are not unpacked: every command of the kit reads the npz files.
    """
    names = check_zip(archive)
    wanted_dirs = [f"npz_all/npz/{part.member_dir}/" for part in parts]
    chosen = [n for n in names if "/" not in n.rstrip("/") or any(n.startswith(d) for d in wanted_dirs)]
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=out))
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(staging, members=chosen)
        moved = _move_parts(staging, out, parts, archive)
        for top in staging.iterdir():
            if top.is_file() and not (out / top.name).exists():
                os.replace(top, out / top.name)
        return moved
    except (zipfile.BadZipFile, OSError) as exc:
        raise DownloadError(f"{archive}: unpacking failed ({exc}); nothing of it was put in place") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# The two sources


@dataclass
class DownloadReport:
    installed: list[Part]
    already_present: list[Part]
    archives: list[Path]


def _record_sha256(out: Path, archive: Path, expected: dict[str, str] | None) -> None:
    digest = sha256_of(archive)
    if expected is not None and archive.name in expected and expected[archive.name] != digest:
        archive.unlink()
        raise DownloadError(f"{archive.name}: sha256 {digest} does not match the manifest's "
                            f"{expected[archive.name]}; the file was deleted, run the command again")
    with open(out / DOWNLOADS_DIR / SHA256_FILE, "a") as fh:
        fh.write(f"{digest}  {archive.name}\n")


def download_mirror(
    out: Path,
    parts: Sequence[Part],
    *,
    mirror_url: str = DEFAULT_MIRROR_URL,
    keep_archives: bool = False,
    expected_sha256: dict[str, str] | None = None,
    timeout: float = 60.0,
    progress: bool = True,
) -> DownloadReport:
    """Fetch, check and unpack one mirror tar per part not already in ``out``'s tree."""
    out.mkdir(parents=True, exist_ok=True)
    (out / DOWNLOADS_DIR).mkdir(exist_ok=True)
    report = DownloadReport([], [], [])
    base = mirror_url if mirror_url.endswith("/") else mirror_url + "/"
    for part in parts:
        if part.target(out).is_dir():
            report.already_present.append(part)
            continue
        archive = out / DOWNLOADS_DIR / part.archive_name
        if not archive.is_file():
            fetch(base + part.archive_name, archive, timeout=timeout, progress=progress)
            try:
                check_tar(archive)
            except DownloadError as exc:
                archive.unlink()  # a complete but unreadable file cannot be resumed into a good one
                raise DownloadError(f"{exc} (archive deleted; a rerun downloads it again)") from None
            _record_sha256(out, archive, expected_sha256)
        report.installed += _unpack_archive(archive, keep_archives, report, unpack_tar, out, [part])
    return report


def _unpack_archive(
    archive: Path, keep_archives: bool, report: DownloadReport,
    unpack: Callable[[Path, Path, Sequence[Part]], list[Part]], out: Path, parts: Sequence[Part],
) -> list[Part]:
    """Run ``unpack(archive, out, parts)``; then keep the archive (``--keep-archives``) or delete it, also when it fails.

    A complete archive that fails to unpack is deleted so that a rerun fetches it again, unless the
    user asked to keep archives for inspection.
    """
    try:
        installed = unpack(archive, out, parts)
    except DownloadError as exc:
        if keep_archives:
            raise DownloadError(f"{exc} (archive kept for inspection; delete it before rerunning)") from None
        archive.unlink()
        raise DownloadError(f"{exc} (archive deleted; a rerun downloads it again)") from None
    if keep_archives:
        report.archives.append(archive)
    else:
        archive.unlink()
    return installed


def download_kaggle(out: Path, parts: Sequence[Part], *, keep_archives: bool = False) -> DownloadReport:
    """Fetch the competition zip through the ``kaggle`` package and unpack the parts not yet in place."""
    from competition.kaggle_api import KaggleError, download_competition_zip

    out.mkdir(parents=True, exist_ok=True)
    report = DownloadReport([], [p for p in parts if p.target(out).is_dir()], [])
    missing = [p for p in parts if not p.target(out).is_dir()]
    if not missing:
        return report
    try:
        archive = download_competition_zip(out / DOWNLOADS_DIR)
    except KaggleError as exc:
        raise DownloadError(str(exc)) from None
    report.installed = _unpack_archive(archive, keep_archives, report, unpack_kaggle_zip, out, missing)
    return report
