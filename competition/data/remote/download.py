"""Fetch the released data into the Kaggle tree (``OUT/npz_all/npz/<task>/<source>[/<search>]/<split>``).

Two sources:

- ``mirror``: the upstream tar files (``npz_tile_xla_{split}.tar``,
  ``npz_layout_{source}_{search}_{split}.tar``), one per collection and split, each unpacking to
  ``npz/<subpath>/<split>/``. Downloads go to ``OUT/.downloads/<name>.part`` and resume with an HTTP
  Range request when rerun; a finished file is checked against Content-Length, listed as a tar (which
  catches truncation and corruption) and renamed to ``<name>``.
- ``kaggle``: the competition zip through the ``kaggle`` package (see ``competition.data.remote.kaggle_api``),
  checked with ``ZipFile.testzip``. Only the asked-for folders are unpacked, plus its top-level files
  (``sample_submission.csv``). With ``with_pb`` the raw protos of the same collections and splits are
  unpacked too, into ``OUT/pb/<task>/<source>[/<search>]/<split>/`` (the npz tree's shape), for
  ``tpugraphs featurize``. The mirror publishes no raw protos.

Unpacking never leaves a half-written tree: each archive is unpacked into a temporary folder inside
``OUT``, every asked-for split folder is checked to be there, and each is then renamed into place (one
rename each); an archive lacking one of them puts nothing in place. A split folder (npz or pb) that is
already in place is left alone, and an archive is downloaded only when some asked-for folder is
missing (delete a folder to fetch it anew). Archive members with absolute paths, ``..``, links or
device files are refused.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from competition.collections import COLLECTIONS, SPLITS, Collection

DEFAULT_MIRROR_URL = "http://download.tensorflow.org/data/tpu_graphs/v0/"
DOWNLOADS_DIR = ".downloads"
SHA256_FILE = "SHA256SUMS"
_CHUNK = 1 << 20
#: Where an unpacked archive keeps its ``npz/`` tree: Kaggle's zip under ``npz_all/``, the mirror's tars at
#: the top.
_NPZ_ROOTS = ("npz_all/npz", "npz")
MIRROR_HAS_NO_PROTOS = (
    "the upstream mirror publishes only the npz tar files (npz_tile_xla_{split}.tar and "
    "npz_layout_{source}_{search}_{split}.tar), no raw protos; the raw protos come with Kaggle's download "
    "(--source kaggle --with-pb)"
)


class DownloadError(Exception):
    """A download that failed; the message names what failed and what to do."""


@dataclass(frozen=True)
class Part:
    """One collection and split of one tree: its npz files (one mirror archive) or its raw protos (pb).

    ``target(out)`` is ``out/npz_all/npz/<subpath>/<split>`` for ``tree="npz"`` and
    ``out/pb/<subpath>/<split>`` for ``tree="pb"``.
    """

    collection: Collection
    split: str
    tree: Literal["npz", "pb"] = "npz"

    def __post_init__(self) -> None:
        if self.tree not in ("npz", "pb"):
            raise ValueError(f"Part.tree must be 'npz' or 'pb', not {self.tree!r}")

    def as_pb(self) -> Part:
        """The same collection and split in the raw-proto tree."""
        return replace(self, tree="pb")

    @property
    def archive_name(self) -> str:
        if self.tree == "pb":
            raise DownloadError(MIRROR_HAS_NO_PROTOS)
        c = self.collection
        stem = "_".join(["npz", c.task.name, c.source, *([c.search] if c.search else [])])
        return f"{stem}_{self.split}.tar"

    @property
    def member_dir(self) -> str:
        """The folder this part occupies relative to its tree's root (``npz/`` or ``pb/``):
        ``<subpath>/<split>``."""
        return f"{self.collection.subpath}/{self.split}"

    @property
    def folder(self) -> str:
        """``npz/<subpath>/<split>`` or ``pb/<subpath>/<split>``, for messages."""
        return f"{self.tree}/{self.member_dir}"

    def target(self, out: Path) -> Path:
        root = out / "npz_all" / "npz" if self.tree == "npz" else out / "pb"
        return root / self.member_dir


def select_parts(collections: Sequence[Collection] | None = None,
                 splits: Sequence[str] | None = None) -> list[Part]:
    """Every (collection, split) asked for, as npz parts in the kit's order; None means all."""
    chosen = collections or COLLECTIONS
    return [Part(c, s) for c in COLLECTIONS if c in chosen for s in SPLITS if s in (splits or SPLITS)]


# --------------------------------------------------------------------------------------------------
# Fetching one file, resumably


def fetch(url: str, dest: Path, *, timeout: float = 60.0, progress: bool = True) -> Path:
    """Download ``url`` to ``dest`` through ``dest.part``, resuming a previous partial download.

    The ``.part`` file stays when the transfer breaks off so that a rerun continues it; ``dest`` appears
    only once the byte count matches the server's Content-Length.
    """
    from competition.progress import progress as progress_bar

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
        raise DownloadError(f"{url}: cannot fetch it ({reason}); check the network and the URL, "
                            "then rerun") from None
    with response:
        resumed = offset > 0 and getattr(response, "status", None) == 206
        if not resumed:
            offset = 0  # the server ignored the Range header (or there was nothing to resume)
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else None
        with open(part, "ab" if resumed else "wb") as fh, progress_bar(
            total=total, initial=offset, unit="B", unit_scale=True, desc=dest.name, enabled=progress,
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
        raise DownloadError(f"{path}: not a readable zip file ({exc}); delete it and run the command "
                            "again") from None
    if bad is not None:
        raise DownloadError(f"{path}: member {bad!r} is corrupt; delete the zip and run the command again")
    for name in names:
        reason = _unsafe_reason(name)
        if reason:
            raise DownloadError(f"{path}: refusing to unpack member {name!r}: {reason}")
    return names


def _npz_root_in(staging: Path) -> Path:
    """The ``npz/`` folder of an unpacked archive (mirror tars hold ``npz/``, Kaggle's zip
    ``npz_all/npz``)."""
    for root in _NPZ_ROOTS:
        if (staging / root).is_dir():
            return staging / root
    return staging / "npz"


def _move_parts(out: Path, sources: Mapping[Part, Path], archive: Path) -> list[Part]:
    """Rename each part's folder of an unpacked archive (``sources[part]``) into the tree; returns the parts
    moved.

    Every folder is checked first, so an archive lacking one of them puts none in place.
    """
    for part, source in sources.items():
        if not source.is_dir():
            raise DownloadError(f"{archive}: holds no {part.folder}/ folder; is it the right archive?")
    for part, source in sources.items():
        target = part.target(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
    return list(sources)


def unpack_tar(archive: Path, out: Path, parts: Sequence[Part]) -> list[Part]:
    """Unpack a checked tar into a temporary folder in ``out`` and rename its parts into the tree."""
    members = check_tar(archive)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=out))
    try:
        with tarfile.open(archive, "r:") as tar:
            tar.extractall(staging, members=members, filter="data")
        root = _npz_root_in(staging)
        return _move_parts(out, {part: root / part.member_dir for part in parts}, archive)
    except (tarfile.TarError, OSError) as exc:
        raise DownloadError(f"{archive}: unpacking failed ({exc}); nothing of it was put in place") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _folders_in(names: Iterable[str]) -> set[str]:
    """Every folder that a zip's member names lie in, at any depth (``a/b/c.pb`` -> ``a``, ``a/b``)."""
    folders = set()
    for name in names:
        steps = name.split("/")  # a folder entry ``a/b/`` ends in an empty step, so ``a/b`` counts too
        folders.update("/".join(steps[:i]) for i in range(1, len(steps)))
    return folders


def _zip_folder(archive: Path, folders: set[str], part: Part) -> str:
    """The folder of Kaggle's zip that holds ``part`` (e.g. ``npz_all/npz/tile/xla/train``); DownloadError if
    none or several."""
    if part.tree == "npz":
        roots = list(_NPZ_ROOTS)
    else:
        # docs/competition.md (Data format, Files): the zip holds the raw protos in a tree of the npz tree's
        # shape; the prefix in front of <subpath>/<split> is not documented (the npz side has npz_all/npz/),
        # so any top-level folder named pb* is accepted, with or without one more pb/ inside it.
        tops = sorted(f for f in folders if "/" not in f and f.startswith("pb")) or ["pb"]
        roots = [root for top in tops for root in (top, f"{top}/pb")]
    looked_for = [f"{root}/{part.member_dir}" for root in roots]
    found = [folder for folder in looked_for if folder in folders]
    if not found:
        hint = " Rerun without --with-pb for the npz files alone" if part.tree == "pb" else ""
        raise DownloadError(f"{archive}: holds no {part.folder}/ folder (looked for "
                            f"{', '.join(f + '/' for f in looked_for)}); is it the right archive?{hint}")
    if len(found) > 1:
        raise DownloadError(f"{archive}: holds {part.folder}/ more than once "
                            f"({', '.join(f + '/' for f in found)}); cannot tell which to unpack")
    return found[0]


def unpack_kaggle_zip(archive: Path, out: Path, parts: Sequence[Part]) -> list[Part]:
    """Unpack the asked-for folders of Kaggle's zip, and its top-level files such as sample_submission.csv.

    ``parts`` may mix npz parts (``npz_all/npz/<subpath>/<split>/`` in the zip) and pb parts (the raw
    protos, ``pb/<subpath>/<split>/`` or ``pb/pb/<subpath>/<split>/``, see ``_zip_folder``). Only those
    folders are extracted (the whole ``pb/`` tree is large), and all of them are located from the member
    names before anything is extracted, so a zip lacking one fails early and puts nothing in place.
    """
    names = check_zip(archive)
    folders = _folders_in(names)
    sources = {part: _zip_folder(archive, folders, part) for part in parts}
    wanted_dirs = tuple(f"{folder}/" for folder in sources.values())
    chosen = [n for n in names if "/" not in n.rstrip("/") or n.startswith(wanted_dirs)]
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=out))
    try:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(staging, members=chosen)
        moved = _move_parts(out, {part: staging / folder for part, folder in sources.items()}, archive)
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
    """What a download did, each list in the kit's order.

    installed / already_present: npz split folders unpacked now / found in place and skipped.
    archives: archives kept (``keep_archives``).
    pb_installed / pb_already_present: the same for the raw-proto folders (``with_pb``; Kaggle only).
    """

    installed: list[Part]
    already_present: list[Part]
    archives: list[Path]
    pb_installed: list[Part] = field(default_factory=list)
    pb_already_present: list[Part] = field(default_factory=list)


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
    """Fetch, check and unpack one mirror tar per part not already in ``out``'s tree (npz parts only)."""
    if any(part.tree == "pb" for part in parts):
        raise DownloadError(MIRROR_HAS_NO_PROTOS)
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
    """Run ``unpack(archive, out, parts)``; then keep the archive (``--keep-archives``) or delete it, also
    when it fails.

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


def download_kaggle(
    out: Path, parts: Sequence[Part], *, keep_archives: bool = False, with_pb: bool = False,
) -> DownloadReport:
    """Fetch the competition zip through the ``kaggle`` package and unpack the parts not yet in place.

    ``parts`` are npz parts (``select_parts``); ``with_pb`` adds their raw protos (``Part.as_pb``), unpacked
    into ``out/pb/<subpath>/<split>/``. The zip is fetched only when some asked-for folder is missing.
    """
    from competition.data.remote.kaggle_api import KaggleError, download_competition_zip

    out.mkdir(parents=True, exist_ok=True)
    wanted = list(dict.fromkeys([*parts, *(part.as_pb() for part in parts if with_pb)]))
    present = [part for part in wanted if part.target(out).is_dir()]
    missing = [part for part in wanted if part not in present]
    report = DownloadReport([], _of_tree(present, "npz"), [], pb_already_present=_of_tree(present, "pb"))
    if not missing:
        return report
    try:
        archive = download_competition_zip(out / DOWNLOADS_DIR)
    except KaggleError as exc:
        raise DownloadError(str(exc)) from None
    installed = _unpack_archive(archive, keep_archives, report, unpack_kaggle_zip, out, missing)
    report.installed, report.pb_installed = _of_tree(installed, "npz"), _of_tree(installed, "pb")
    return report


def _of_tree(parts: Iterable[Part], tree: str) -> list[Part]:
    return [part for part in parts if part.tree == tree]
