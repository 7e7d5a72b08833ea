"""``tpugraphs download`` and ``tpugraphs submit --kaggle``, offline.

The mirror path runs against a local HTTP server on 127.0.0.1 serving small tar files built here (with
Range support, and modes that break the transfer or ignore Range); the Kaggle path against a fake
``kaggle`` module put in ``sys.modules``.
"""

from __future__ import annotations

import http.server
import io
import shlex
import socket
import sys
import tarfile
import threading
import types
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from real_protos import LAYOUT_PROTO, needs_realdata

from competition.cli import main
from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import LayoutGraph, TileGraph, load_graph, save_graph
from competition.data.remote.download import (
    DownloadError,
    Part,
    _unsafe_reason,
    download_kaggle,
    download_mirror,
    fetch,
    read_sha256_manifest,
    select_parts,
)
from competition.data.tree import find_npz_root, split_dir

TILE = COLLECTION_BY_NAME["tile:xla"]
LAYOUT = COLLECTION_BY_NAME["layout:nlp:random"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tile_graph(n_configs: int = 3) -> TileGraph:
    return TileGraph(
        node_feat=np.zeros((2, 140), np.float32), node_opcode=np.array([1, 2], np.uint8),
        edge_index=np.array([[1, 0]], np.int64), config_runtime=np.arange(1, n_configs + 1, dtype=np.int64),
        config_feat=np.zeros((n_configs, 24), np.float32),
        config_runtime_normalizers=np.ones(n_configs, np.int64),
    )


def layout_graph(n_configs: int = 4) -> LayoutGraph:
    return LayoutGraph(
        node_feat=np.zeros((2, 140), np.float32), node_opcode=np.array([1, 2], np.uint8),
        edge_index=np.array([[1, 0]], np.int64), config_runtime=np.arange(1, n_configs + 1, dtype=np.int64),
        node_config_feat=np.zeros((n_configs, 1, 18), np.float32), node_config_ids=np.array([1], np.int64),
        node_splits=np.array([[0]], np.int64),
    )


def build_tar(path: Path, part: Part, tmp: Path) -> Path:
    """A mirror-style tar: ``npz/<subpath>/<split>/<stem>.npz``, two graphs."""
    graph = tile_graph if part.collection.task.name == "tile" else layout_graph
    src = tmp / f"src-{part.archive_name}"
    for stem in ("alpha", "beta"):
        save_graph(graph(), src / "npz" / part.member_dir / f"{stem}.npz")
    with tarfile.open(path, "w") as tar:
        tar.add(src / "npz", arcname="npz")
    return path


class MirrorHandler(http.server.BaseHTTPRequestHandler):
    """Serves files from ``server.root`` with Range support; ``server.mode`` breaks it on purpose."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.server.ranges.append(self.headers.get("Range"))
        path = self.server.root / self.path.lstrip("/").split("/")[-1]
        if not path.is_file():
            self.send_error(404, "Not Found")
            return
        data = path.read_bytes()
        start = 0
        header = self.headers.get("Range")
        if header and self.server.mode != "ignore-range":
            start = int(header.removeprefix("bytes=").split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.server.mode == "truncate":
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / "mirror"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MirrorHandler)
    server.root, server.mode, server.ranges = root, "normal", []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/v0/"
    yield server
    server.shutdown()
    server.server_close()


def no_partial_tree(out: Path) -> None:
    """Nothing but the downloads folder (with at most .part files) and no unpacking leftovers."""
    assert not list(out.glob(".unpack-*"))
    assert not (out / "npz_all").exists()
    downloads = out / ".downloads"
    if downloads.exists():
        assert all(p.name.endswith(".part") for p in downloads.iterdir() if p.name != "SHA256SUMS")


def test_archive_names_follow_upstream():
    names = [p.archive_name for p in select_parts()]
    assert names[:3] == ["npz_tile_xla_train.tar", "npz_tile_xla_valid.tar", "npz_tile_xla_test.tar"]
    assert "npz_layout_nlp_random_test.tar" in names and len(names) == 15
    assert [p.archive_name for p in select_parts([LAYOUT], ["valid"])] == ["npz_layout_nlp_random_valid.tar"]


@pytest.mark.parametrize(("name", "reason"), [
    ("/etc/passwd", "absolute"), ("npz/../../x", "'..'"), ("..", "'..'"), ("C:/x", "absolute"),
    ("\\\\host\\x", "absolute"), ("npz/tile/xla/train/a.npz", None),
])
def test_unsafe_member_names(name, reason):
    assert (_unsafe_reason(name) is None) if reason is None else reason in _unsafe_reason(name)


def test_mirror_download_builds_the_kaggle_tree(mirror, tmp_path, capsys):
    parts = select_parts([TILE, LAYOUT], ["train", "test"])
    for part in parts:
        build_tar(mirror.root / part.archive_name, part, tmp_path)
    out = tmp_path / "data"
    code, stdout, err = run(capsys, "download", "--out", str(out), "--source", "mirror", "--mirror-url",
                            mirror.url, "--collection", "tile:xla", "layout:nlp:random", "--split",
                            "train", "test")
    assert code == 0, err
    assert "Installed 4 collection splits" in stdout
    assert find_npz_root(out) == out / "npz_all" / "npz"
    graph = load_graph(out / "npz_all/npz/layout/nlp/random/test/alpha.npz")
    assert graph.num_configs == 4
    assert sorted(p.name for p in split_dir(out, TILE, "train").iterdir()) == ["alpha.npz", "beta.npz"]
    sums = read_sha256_manifest(out / ".downloads" / "SHA256SUMS")
    assert set(sums) == {p.archive_name for p in parts}
    assert not list((out / ".downloads").glob("*.tar"))  # archives deleted after unpacking
    # A rerun finds everything in place and fetches nothing.
    mirror.ranges.clear()
    code, stdout, err = run(capsys, "download", "--out", str(out), "--source", "mirror", "--mirror-url",
                            mirror.url, "--collection", "tile:xla", "--split", "train")
    assert code == 0 and "already present" in err and mirror.ranges == []


def test_resume_from_a_truncated_part_file(mirror, tmp_path, capsys):
    part = Part(TILE, "valid")
    tar = build_tar(mirror.root / part.archive_name, part, tmp_path)
    out = tmp_path / "data"
    (out / ".downloads").mkdir(parents=True)
    half = len(tar.read_bytes()) // 2
    (out / ".downloads" / (part.archive_name + ".part")).write_bytes(tar.read_bytes()[:half])
    code, _, err = run(capsys, "download", "--out", str(out), "--source", "mirror", "--mirror-url",
                       mirror.url, "--collection", "tile:xla", "--split", "valid")
    assert code == 0, err
    assert mirror.ranges == [f"bytes={half}-"]
    assert len(list(split_dir(out, TILE, "valid").glob("*.npz"))) == 2


def test_broken_transfer_keeps_the_part_file_and_a_rerun_resumes(mirror, tmp_path, capsys):
    part = Part(TILE, "train")
    build_tar(mirror.root / part.archive_name, part, tmp_path)
    out = tmp_path / "data"
    argv = ("download", "--out", str(out), "--source", "mirror", "--mirror-url", mirror.url,
            "--collection", "tile:xla", "--split", "train")
    mirror.mode = "truncate"
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert "rerun to resume" in err and "Traceback" not in err
    no_partial_tree(out)
    assert (out / ".downloads" / (part.archive_name + ".part")).stat().st_size > 0
    mirror.mode = "normal"
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert mirror.ranges[-1] is not None and mirror.ranges[-1].startswith("bytes=")
    assert len(list(split_dir(out, TILE, "train").glob("*.npz"))) == 2


def test_server_ignoring_range_restarts_the_file(mirror, tmp_path):
    part = Part(TILE, "test")
    tar = build_tar(mirror.root / part.archive_name, part, tmp_path)
    dest = tmp_path / "x.tar"
    dest.with_name("x.tar.part").write_bytes(b"garbage that is not the start of the file")
    mirror.mode = "ignore-range"
    fetch(mirror.url + part.archive_name, dest, progress=False)
    assert dest.read_bytes() == tar.read_bytes()


def test_file_url_mirror(tmp_path, capsys):
    part = Part(LAYOUT, "valid")
    (tmp_path / "files").mkdir()
    build_tar(tmp_path / "files" / part.archive_name, part, tmp_path)
    out = tmp_path / "data"
    code, _, err = run(capsys, "download", "--out", str(out), "--source", "mirror",
                       "--mirror-url", (tmp_path / "files").as_uri(), "--collection", "layout:nlp:random",
                       "--split", "valid", "--keep-archives")
    assert code == 0, err
    assert (out / ".downloads" / part.archive_name).is_file()
    assert len(list(split_dir(out, LAYOUT, "valid").glob("*.npz"))) == 2


def _mirror_failure(mirror, tmp_path, capsys, *extra: str) -> str:
    out = tmp_path / "data"
    code, _, err = run(capsys, "download", "--out", str(out), "--source", "mirror", "--mirror-url", mirror,
                       "--collection", "tile:xla", "--split", "train", *extra)
    assert code == 1
    assert "Traceback" not in err and err.count("\n") == 1
    no_partial_tree(out)
    return err


def test_corrupt_tar_is_refused_and_deleted(mirror, tmp_path, capsys):
    (mirror.root / "npz_tile_xla_train.tar").write_bytes(b"\x00not a tar" * 100 + b"x")
    err = _mirror_failure(mirror.url, tmp_path, capsys)
    assert "not a readable tar file" in err
    assert not (tmp_path / "data" / ".downloads" / "npz_tile_xla_train.tar").exists()


def test_tar_with_unsafe_member_is_refused(mirror, tmp_path, capsys):
    with tarfile.open(mirror.root / "npz_tile_xla_train.tar", "w") as tar:
        info = tarfile.TarInfo("npz/../../evil.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    err = _mirror_failure(mirror.url, tmp_path, capsys)
    assert "refusing to unpack member 'npz/../../evil.txt'" in err and "archive deleted" in err
    assert not (tmp_path / "evil.txt").exists()


def test_tar_without_the_expected_folder(mirror, tmp_path, capsys):
    build_tar(mirror.root / "npz_tile_xla_train.tar", Part(TILE, "valid"), tmp_path)  # wrong content
    err = _mirror_failure(mirror.url, tmp_path, capsys)
    assert "holds no npz/tile/xla/train/ folder" in err


def test_missing_file_404(mirror, tmp_path, capsys):
    err = _mirror_failure(mirror.url, tmp_path, capsys)
    assert "HTTP 404" in err and "npz_tile_xla_train.tar" in err and "--mirror-url" in err


def test_unreachable_server(tmp_path, capsys):
    with socket.socket() as sock:  # a port that was free a moment ago and has nothing listening now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    err = _mirror_failure(f"http://127.0.0.1:{port}/", tmp_path, capsys)
    assert "cannot fetch it (" in err and "Connection refused" in err and "check the network" in err
    assert not (tmp_path / "data").exists()  # nothing at all is left behind


def test_sha256_mismatch(mirror, tmp_path, capsys):
    build_tar(mirror.root / "npz_tile_xla_train.tar", Part(TILE, "train"), tmp_path)
    manifest = tmp_path / "sums.txt"
    manifest.write_text("0" * 64 + "  npz_tile_xla_train.tar\n")
    err = _mirror_failure(mirror.url, tmp_path, capsys, "--sha256", str(manifest))
    assert "does not match the manifest" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--source", "kaggle", "--mirror-url", "http://x/"], "apply to --source mirror only"),
    (["--source", "mirror", "--sha256", "/nonexistent/sums"], "no such file"),
    (["--timeout", "0"], "must be positive"),
    (["--source", "mirror", "--with-pb"], "--with-pb needs --source kaggle"),
])
def test_download_usage_errors(tmp_path, capsys, argv, message):
    code, _, err = run(capsys, "download", "--out", str(tmp_path / "d"), *argv)
    assert code == 2 and message in err
    assert not (tmp_path / "d").exists()


def test_with_pb_from_the_mirror_is_a_usage_error(mirror, tmp_path, capsys):
    code, _, err = run(capsys, "download", "--out", str(tmp_path / "d"), "--source", "mirror",
                       "--mirror-url", mirror.url, "--with-pb")
    assert code == 2 and mirror.ranges == []  # refused before anything is fetched
    assert "the upstream mirror publishes only the npz tar files" in err
    assert "npz_tile_xla_{split}.tar and npz_layout_{source}_{search}_{split}.tar" in err
    assert "the raw protos come with Kaggle's download (--source kaggle --with-pb)" in err
    # The library refuses too, for callers that build pb parts themselves.
    with pytest.raises(DownloadError, match="publishes only the npz tar files"):
        download_mirror(tmp_path / "lib", [Part(TILE, "train").as_pb()], mirror_url=mirror.url)
    with pytest.raises(DownloadError, match="publishes only the npz tar files"):
        _ = Part(TILE, "train", "pb").archive_name


# --------------------------------------------------------------------------------------------------
# The Kaggle path, with a fake ``kaggle`` module


class _ConnectionError(OSError):
    """Named like requests' exception, which the wrapper recognises by name."""


_ConnectionError.__name__ = "ConnectionError"


class FakeKaggleApi:
    """Stands in for ``kaggle.api.kaggle_api_extended.KaggleApi``; ``behaviour`` picks the failure."""

    behaviour = "ok"
    zip_source: Path | None = None
    submitted: list[tuple[str, str, str]] = []

    def authenticate(self) -> None:
        if self.behaviour == "no-credentials":
            print("Authentication required to call the Kaggle API. (long help)")
            raise SystemExit(1)
        if self.behaviour == "offline-auth":  # 2.x checks a token online
            raise _ConnectionError("Max retries exceeded with url: /v1/security.OAuthService/IntrospectToken")

    def _fail(self) -> None:
        if self.behaviour == "offline":
            raise _ConnectionError("Max retries exceeded with url: /api/v1/competitions")
        if self.behaviour == "forbidden":
            error = RuntimeError("403 Client Error: Forbidden")
            error.response = types.SimpleNamespace(status_code=403)
            raise error

    def competition_download_files(self, competition: str, path: str, quiet: bool = True) -> None:
        self._fail()
        (Path(path) / f"{competition}.zip").write_bytes(self.zip_source.read_bytes())

    def competition_submit(self, file_name: str, message: str, competition: str) -> str:
        self._fail()
        self.submitted.append((file_name, message, competition))
        return "Successfully submitted to Fast or Slow? Predict AI Model Runtime"


@pytest.fixture
def fake_kaggle(monkeypatch, tmp_path):
    extended = types.ModuleType("kaggle.api.kaggle_api_extended")
    api = type("KaggleApi", (FakeKaggleApi,), {"behaviour": "ok", "submitted": []})
    extended.KaggleApi = api
    for name, module in (("kaggle", types.ModuleType("kaggle")),
                         ("kaggle.api", types.ModuleType("kaggle.api")),
                         ("kaggle.api.kaggle_api_extended", extended)):
        monkeypatch.setitem(sys.modules, name, module)
    return api


def kaggle_zip(
    path: Path, tmp: Path, pb_roots: Sequence[str] = ("pb/pb",),
    extra: Mapping[str, bytes | Path] | None = None,
) -> Path:
    """A zip shaped like Kaggle's download: npz_all/npz/..., pb/..., sample_submission.csv.

    Each part's protos go to ``<root>/<subpath>/<split>/g<split>.pb`` under every root of ``pb_roots``
    (the bytes name the part, so tests can tell which landed where); ``extra`` adds members, from bytes
    or from a file.
    """
    with zipfile.ZipFile(path, "w") as zf:
        for part in select_parts():
            graph = tile_graph() if part.collection.task.name == "tile" else layout_graph()
            buffer = tmp / "g.npz"
            save_graph(graph, buffer)
            zf.write(buffer, f"npz_all/npz/{part.member_dir}/g{part.split}.npz")
            for root in pb_roots:
                zf.writestr(f"{root}/{part.member_dir}/g{part.split}.pb", f"proto {part.member_dir}".encode())
        for name, content in (extra or {}).items():
            if isinstance(content, Path):
                zf.write(content, name)
            else:
                zf.writestr(name, content)
        zf.writestr("sample_submission.csv", "ID,TopConfigs\n")
    return path


def pb_files(out: Path) -> list[str]:
    """Every file under ``out/pb``, relative to it."""
    return sorted(p.relative_to(out / "pb").as_posix() for p in (out / "pb").rglob("*") if p.is_file())


def test_kaggle_download(fake_kaggle, tmp_path, capsys):
    fake_kaggle.zip_source = kaggle_zip(tmp_path / "k.zip", tmp_path)
    out = tmp_path / "data"
    code, stdout, err = run(capsys, "download", "--out", str(out), "--split", "valid", "test")
    assert code == 0, err
    assert "Installed 10 collection splits" in stdout and "Raw protos" not in stdout
    # The zip holds pb/pb/...; without --with-pb none of it is unpacked.
    assert (out / "sample_submission.csv").is_file() and not (out / "pb").exists()
    assert not split_dir(out, TILE, "train").exists()
    assert load_graph(split_dir(out, LAYOUT, "test") / "gtest.npz").num_configs == 4
    assert not list(out.glob(".unpack-*")) and not list((out / ".downloads").iterdir())


@pytest.mark.parametrize(("behaviour", "message"), [
    ("no-credentials", "no usable Kaggle credentials"),
    ("offline", "cannot reach Kaggle (ConnectionError); check your network"),
    ("offline-auth", "cannot reach Kaggle (ConnectionError); check your network"),
    ("forbidden", "accept the competition rules"),
])
def test_kaggle_download_failures(fake_kaggle, tmp_path, capsys, behaviour, message):
    fake_kaggle.behaviour = behaviour
    out = tmp_path / "data"
    code, stdout, err = run(capsys, "download", "--out", str(out))
    assert code == 1
    assert message in err and "Traceback" not in err and err.count("\n") == 1
    assert stdout == ""  # the package's own chatter is swallowed
    no_partial_tree(out)


def test_kaggle_package_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "kaggle", None)  # makes 'import kaggle...' raise ModuleNotFoundError
    code, _, err = run(capsys, "download", "--out", str(tmp_path / "d"))
    assert code == 1 and "'kaggle' package is not installed" in err and "pip install" in err


def test_corrupt_kaggle_zip(fake_kaggle, tmp_path, capsys):
    fake_kaggle.zip_source = tmp_path / "bad.zip"
    fake_kaggle.zip_source.write_bytes(b"PK\x03\x04 truncated")
    out = tmp_path / "data"
    code, _, err = run(capsys, "download", "--out", str(out))
    assert code == 1 and "not a readable zip file" in err
    no_partial_tree(out)


@pytest.mark.parametrize("pb_root", ["pb", "pb/pb", "pb_all/pb"])
def test_kaggle_download_with_pb(fake_kaggle, tmp_path, capsys, pb_root):
    fake_kaggle.zip_source = kaggle_zip(tmp_path / "k.zip", tmp_path, pb_roots=[pb_root])
    out = tmp_path / "data"
    code, stdout, err = run(capsys, "download", "--out", str(out), "--with-pb", "--split", "train", "valid",
                            "--collection", "tile:xla", "layout:nlp:random")
    assert code == 0, err
    assert pb_files(out) == ["layout/nlp/random/train/gtrain.pb", "layout/nlp/random/valid/gvalid.pb",
                             "tile/xla/train/gtrain.pb", "tile/xla/valid/gvalid.pb"]
    assert (out / "pb/tile/xla/valid/gvalid.pb").read_bytes() == b"proto tile/xla/valid"
    assert len(list(split_dir(out, LAYOUT, "valid").glob("*.npz"))) == 1  # the npz parts as before
    assert "Installed 4 collection splits" in stdout
    assert f"Raw protos of 4 collection splits unpacked under {out / 'pb'} (0 already present)" in stdout
    assert (f"tpugraphs featurize {out / 'pb/tile/xla/train'} --out {out / 'featurized/npz/tile/xla/train'}"
            in stdout)
    assert f"tpugraphs featurize {out / 'pb'} --out {out / 'featurized/npz'}" in stdout
    assert not list(out.glob(".unpack-*")) and not list((out / ".downloads").iterdir())


def test_pb_parts_already_present_are_skipped(fake_kaggle, tmp_path, capsys):
    fake_kaggle.zip_source = kaggle_zip(tmp_path / "k.zip", tmp_path)
    out = tmp_path / "data"
    npz_part, pb_part = Part(TILE, "train"), Part(TILE, "train").as_pb()
    mine = pb_part.target(out) / "mine.pb"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"my own")
    report = download_kaggle(out, [npz_part], with_pb=True)
    assert (report.installed, report.already_present) == ([npz_part], [])
    assert (report.pb_installed, report.pb_already_present) == ([], [pb_part])
    assert pb_files(out) == ["tile/xla/train/mine.pb"]  # left alone, nothing added to it
    # A second split: the zip is fetched again for the one missing pb folder only.
    code, stdout, err = run(capsys, "download", "--out", str(out), "--with-pb", "--collection", "tile:xla",
                            "--split", "train", "valid")
    assert code == 0, err
    assert f"already present, skipped: {pb_part.target(out)}" in err
    assert "Installed 1 collection splits" in stdout and "Raw protos of 1 collection splits" in stdout
    assert pb_files(out) == ["tile/xla/train/mine.pb", "tile/xla/valid/gvalid.pb"]
    # Everything in place: Kaggle is not even asked (an offline API would fail the command).
    fake_kaggle.behaviour = "offline"
    code, stdout, err = run(capsys, "download", "--out", str(out), "--with-pb", "--collection", "tile:xla",
                            "--split", "train", "valid")
    assert code == 0, err
    assert "Raw protos of 0 collection splits unpacked" in stdout and "(2 already present)" in stdout
    # Without --with-pb the pb folders play no part: the npz splits alone decide.
    code, _, err = run(capsys, "download", "--out", str(out), "--collection", "tile:xla", "--split", "train")
    assert code == 0 and "pb/" not in err


@pytest.mark.parametrize(("pb_roots", "extra", "message"), [
    ([], {}, "holds no pb/tile/xla/train/ folder (looked for pb/tile/xla/train/, pb/pb/tile/xla/train/); "
             "is it the right archive? Rerun without --with-pb for the npz files alone"),
    ([], {"pb/pb/tile/xla/train/a.pb": b"x"}, "holds no pb/layout/xla/random/train/ folder (looked for "
                                              "pb/layout/xla/random/train/, pb/pb/layout/xla/random/train/)"),
    ([], {"pb_x/tile/xla/valid/a.pb": b"x"}, "(looked for pb_x/tile/xla/train/, pb_x/pb/tile/xla/train/)"),
    (["pb", "pb/pb"], {},
     "holds pb/tile/xla/train/ more than once (pb/tile/xla/train/, pb/pb/tile/xla/train/); "
     "cannot tell which to unpack"),
])
def test_kaggle_zip_without_the_asked_pb_folder(fake_kaggle, tmp_path, capsys, pb_roots, extra, message):
    fake_kaggle.zip_source = kaggle_zip(tmp_path / "k.zip", tmp_path, pb_roots=pb_roots, extra=extra)
    out = tmp_path / "data"
    code, stdout, err = run(capsys, "download", "--out", str(out), "--with-pb", "--split", "train",
                            "--collection", "tile:xla", "layout:xla:random")
    assert code == 1 and stdout == ""
    assert "predict-ai-model-runtime.zip: " in err and message in err
    assert "Traceback" not in err and err.count("\n") == 1
    no_partial_tree(out)  # neither the npz parts, which the zip does hold, nor any pb folder
    assert not (out / "pb").exists() and not (out / "sample_submission.csv").exists()


@pytest.mark.parametrize("name",
                         ["pb/../../evil.pb", "pb/pb/../../../evil.pb", "/pb/pb/tile/xla/train/evil.pb"])
def test_kaggle_zip_with_unsafe_pb_member_is_refused(fake_kaggle, tmp_path, capsys, name):
    fake_kaggle.zip_source = kaggle_zip(tmp_path / "k.zip", tmp_path, extra={name: b"evil"})
    out = tmp_path / "data"
    code, _, err = run(capsys, "download", "--out", str(out), "--with-pb", "--collection", "tile:xla")
    assert code == 1
    assert f"refusing to unpack member {name!r}" in err and "archive deleted" in err
    no_partial_tree(out)
    assert not (out / "pb").exists() and not list(tmp_path.rglob("evil.pb"))


@needs_realdata(LAYOUT_PROTO)
def test_download_with_pb_then_featurize_the_real_proto(fake_kaggle, tmp_path, capsys):
    member = f"pb/layout/xla/random/train/{LAYOUT_PROTO.stem}.pb"
    fake_kaggle.zip_source = kaggle_zip(tmp_path / "k.zip", tmp_path, pb_roots=[],
                                        extra={member: LAYOUT_PROTO})
    out = tmp_path / "data"
    code, stdout, err = run(capsys, "download", "--out", str(out), "--with-pb", "--collection",
                            "layout:xla:random", "--split", "train")
    assert code == 0, err
    unpacked = out / member
    assert unpacked.read_bytes() == LAYOUT_PROTO.read_bytes()
    # Run the featurize command the summary suggests for the folder.
    suggested = [line.strip() for line in stdout.splitlines()
                 if line.strip().startswith("tpugraphs featurize")]
    argv = shlex.split(suggested[0])
    assert argv[1:] == ["featurize", str(unpacked.parent), "--out",
                        str(out / "featurized/npz/layout/xla/random/train")]
    code, stdout, err = run(capsys, *argv[1:])
    assert code == 0, err
    graph = load_graph(Path(argv[-1]) / f"{LAYOUT_PROTO.stem}.npz")
    assert isinstance(graph, LayoutGraph)
    assert (graph.num_nodes, graph.num_configurable_nodes) == (3163, 62)  # the realdata README's figures
    assert graph.num_configs > 0


def test_credential_sources(monkeypatch, tmp_path):
    from competition.data.remote.kaggle_api import credential_sources

    for name in ("KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path))
    assert credential_sources() == []
    (tmp_path / "kaggle.json").write_text("{}")
    monkeypatch.setenv("KAGGLE_API_TOKEN", "x")
    assert credential_sources() == ["$KAGGLE_API_TOKEN", str(tmp_path / "kaggle.json")]


# --------------------------------------------------------------------------------------------------
# tpugraphs submit --kaggle


def full_submission(rows: dict[str, int] | None = None) -> str:
    """A format-valid submission with Kaggle's row counts per collection."""
    lines = ["ID,TopConfigs"]
    counts = {"tile:xla": 844, "layout:xla:default": 8, "layout:xla:random": 8,
              "layout:nlp:default": 17, "layout:nlp:random": 17} | (rows or {})
    for name, count in counts.items():
        cell = "0;1;2;3;4" if name.startswith("tile") else "2;0;1"
        lines += [f"{name}:g{i:04d},{cell}" for i in range(count)]
    return "\n".join(lines) + "\n"


def test_submit_kaggle_format_only(fake_kaggle, tmp_path, capsys):
    sub = tmp_path / "sub.csv"
    sub.write_text(full_submission())
    code, stdout, err = run(capsys, "submit", str(sub), "--kaggle", "-m", "first try")
    assert code == 0, err
    assert "format only" in err and "Successfully submitted" in stdout
    assert fake_kaggle.submitted == [(str(sub), "first try", "predict-ai-model-runtime")]


@pytest.mark.parametrize(("text", "message"), [
    (full_submission({"tile:xla": 843}), "843 tile:xla rows; Kaggle's test set has 844"),
    (full_submission().replace("2;0;1", "2;0;0", 1), "duplicate"),
    (full_submission().replace("2;0;1", "3;0;1", 1), "out of range"),
    ("ID,Wrong\n", "header"),
    (full_submission() + "tile:xla:g0000,0;1;2;3;4\n", "duplicate-id"),
])
def test_submit_kaggle_refuses_invalid_files(fake_kaggle, tmp_path, capsys, text, message):
    sub = tmp_path / "sub.csv"
    sub.write_text(text)
    code, _, err = run(capsys, "submit", str(sub), "--kaggle", "-m", "x")
    assert code == 1 and message in err and "not submitted" in err
    assert fake_kaggle.submitted == []


def test_submit_kaggle_against_data(fake_kaggle, tiny_competition, tmp_path, capsys):
    public = tiny_competition / "public"
    sub = tmp_path / "sub.csv"
    sub.write_text(full_submission())
    code, _, err = run(capsys, "submit", str(sub), "--kaggle", "-m", "x", "--data", str(public))
    assert code == 1 and "unknown-id" in err and fake_kaggle.submitted == []
    sample = public / "sample_submission.csv"
    code, _, err = run(capsys, "submit", str(sample), "--kaggle", "-m", "x", "--data", str(public))
    assert code == 0, err
    assert f"against the test graphs of {public}" in err and len(fake_kaggle.submitted) == 1


@pytest.mark.parametrize(("behaviour", "message"), [
    ("no-credentials", "no usable Kaggle credentials"),
    ("offline", "cannot reach Kaggle"),
    ("offline-auth", "cannot reach Kaggle"),
    ("forbidden", "HTTP 403"),
])
def test_submit_kaggle_failures(fake_kaggle, tmp_path, capsys, behaviour, message):
    fake_kaggle.behaviour = behaviour
    sub = tmp_path / "sub.csv"
    sub.write_text(full_submission())
    code, _, err = run(capsys, "submit", str(sub), "--kaggle", "-m", "x")
    assert code == 1 and message in err and "Traceback" not in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--kaggle"], "needs a description"),
    (["--kaggle", "-m", "x", "--server", "http://h"], "leave out --server"),
    (["--kaggle", "-m", "x", "--data", "/nonexistent"], "no such directory"),
    # -m also goes to a leaderboard
    (["--data", "d", "--server", "http://h", "--token", "t"], "--data goes with --kaggle"),
])
def test_submit_kaggle_usage_errors(tmp_path, capsys, argv, message):
    sub = tmp_path / "sub.csv"
    sub.write_text(full_submission())
    code, _, err = run(capsys, "submit", str(sub), *argv)
    assert code == 2 and message in err


def test_the_kaggle_extra_and_the_install_hint_name_the_same_requirements():
    import tomllib

    from competition.data.remote.kaggle_api import INSTALL_HINT, KAGGLE_REQUIREMENTS

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml")
                              .read_text(encoding="utf-8"))
    assert tuple(pyproject["project"]["optional-dependencies"]["kaggle"]) == KAGGLE_REQUIREMENTS
    assert all(requirement in INSTALL_HINT for requirement in KAGGLE_REQUIREMENTS)
