"""``make accel``: build torch-scatter from source against the installed torch, cache the wheel, install it.

PyPI has only a source distribution of torch-scatter for current torch, and a compiled extension
works only with the torch it was compiled against. So this script:

1. reads the versions that decide the binary: torch (with its local tag, e.g. ``2.13.0+cpu``, and
   the CUDA version it was built for), Python, the platform, and the torch-scatter release;
2. looks for a wheel built for exactly that key in the cache (``<pip cache dir>/tpugraphs-accel/<key>/``,
   or ``--cache``); a hit installs in seconds;
3. otherwise checks for a C++ compiler and builds one with ``pip wheel --no-build-isolation`` (so it
   compiles against the installed torch, not a fresh one pip would fetch) and ``--no-cache-dir``
   (pip's own wheel cache is keyed by the source archive only, so it could hand back a wheel built
   against an older torch), keeping the compiler's log next to the wheel;
4. installs the wheel (``--no-deps``: torch stays as it is) and checks, in a fresh interpreter, that
   it loads and agrees with torch's own ops on a small scatter.

Every step prints what it did. Without a compiler, or when the build fails, it says so and exits
non-zero without installing anything: the kit keeps running on torch's own ops (``solutions.compute.accel``).

usage: python scripts/build_accel.py [--version 2.1.2] [--cache DIR] [--source SDIST] [--rebuild] [--dry-run]
Run it with the interpreter of the environment to install into (``make accel`` uses ``.venv``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

DEFAULT_VERSION = "2.1.2"
EXIT_NO_TORCH, EXIT_NO_COMPILER, EXIT_BUILD_FAILED, EXIT_CHECK_FAILED = 3, 4, 5, 6
FALLBACK_NOTE = ("the kit keeps working without it: solutions.compute.accel uses torch's own scatter ops "
                 "(same results)")

# Run in a fresh interpreter after installing: the extension must load and agree with torch.
CHECK = """
import torch, torch_scatter
src = torch.tensor([[1.0], [2.0], [4.0]])
index = torch.tensor([0, 0, 2])
got = torch_scatter.scatter(src, index, dim=0, dim_size=3, reduce="max").flatten().tolist()
assert got == [2.0, 0.0, 4.0], got
print(torch_scatter.__version__)
"""


def say(message: str) -> None:
    print(f"accel: {message}", flush=True)


def torch_build() -> dict[str, str] | None:
    """The installed torch's version and CUDA version, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    return {"torch": torch.__version__, "cuda": torch.version.cuda or "cpu"}


def cache_key(version: str, torch_info: dict[str, str]) -> str:
    """Everything that decides whether a built wheel fits this environment, as one folder name."""
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    cuda = torch_info["cuda"] if torch_info["cuda"] == "cpu" else f"cu{torch_info['cuda'].replace('.', '')}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"torch_scatter-{version}-torch{torch_info['torch']}-{cuda}-{python}-{plat}"


def pip_cache_dir() -> Path:
    """The pip cache folder (``pip cache dir``); ~/.cache when pip's cache is disabled."""
    done = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return Path(done.stdout.strip())
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))


def find_compiler() -> str | None:
    """The C++ compiler torch's extension builder will call: $CXX, else c++ (g++ as a last resort)."""
    wanted = os.environ.get("CXX")
    candidates = [wanted] if wanted else ["c++", "g++"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return found
    return None


def installed_version() -> str | None:
    """torch-scatter's version if it is installed here and loads against this torch, else None."""
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def build_wheel(version: str, key_dir: Path, source: Path | None = None) -> Path | None:
    """Compile torch-scatter (from PyPI, or ``source``: an sdist or a source folder) into ``key_dir``.

    Returns the wheel, or None when the build failed (the log stays in ``key_dir/build.log``).
    """
    key_dir.mkdir(parents=True, exist_ok=True)
    log_path = key_dir / "build.log"
    with tempfile.TemporaryDirectory(dir=key_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-cache-dir",
               "--no-binary", "torch-scatter", str(source) if source else f"torch-scatter=={version}",
               "--wheel-dir", tmp]
        # torch-scatter's setup.py turns ninja off, so its files compile one after another.
        origin = f" from {source}" if source else ""
        say(f"compiling torch-scatter {version}{origin} (one file at a time: several minutes); "
            f"log: {log_path}")
        with log_path.open("w") as log:
            log.write(" ".join(cmd) + "\n")
            log.flush()
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
        wheels = sorted(Path(tmp).glob("torch_scatter-*.whl"))
        if done.returncode != 0 or not wheels:
            return None
        # Move into place only once complete, so an interrupted build never leaves a wheel behind.
        target = key_dir / wheels[0].name
        wheels[0].replace(target)
        return target


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build, cache and install torch-scatter for the "
                                                 "installed torch.")
    parser.add_argument("--version", default=DEFAULT_VERSION,
                        help="torch-scatter release (default %(default)s)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="wheel cache folder (default: <pip cache dir>/tpugraphs-accel)")
    parser.add_argument("--source", type=Path, default=None,
                        help="build from this sdist or source folder instead of downloading from PyPI")
    parser.add_argument("--rebuild", action="store_true", help="ignore a cached wheel and compile again")
    parser.add_argument("--dry-run", action="store_true", help="print the plan as JSON and change nothing")
    args = parser.parse_args(argv)

    torch_info = torch_build()
    if torch_info is None:
        say(f"torch is not installed for {sys.executable}; install the kit first (make install)")
        return EXIT_NO_TORCH
    cache = args.cache or Path(os.environ.get("TPUGRAPHS_ACCEL_CACHE", "")
                               or pip_cache_dir() / "tpugraphs-accel")
    key_dir = cache / cache_key(args.version, torch_info)
    cached = sorted(key_dir.glob("torch_scatter-*.whl"))
    compiler = find_compiler()
    if args.dry_run:
        print(json.dumps({"python": sys.executable, **torch_info, "torch_scatter": args.version,
                          "cache": str(key_dir), "cached_wheel": str(cached[0]) if cached else None,
                          "compiler": compiler, "installed": installed_version()}, indent=2))
        return 0

    say(f"torch {torch_info['torch']} ({torch_info['cuda']}), Python {platform.python_version()}, "
        f"{sys.executable}")
    have = installed_version()
    if have == args.version and not args.rebuild:
        say(f"torch-scatter {have} is already installed and loads with this torch; nothing to do")
        return 0

    if cached and not args.rebuild:
        wheel = cached[0]
        say(f"using the cached wheel {wheel} (built for this torch, Python and platform)")
    else:
        if compiler is None:
            looked = os.environ.get("CXX") or "c++, g++"
            say(f"no C++ compiler found (looked for {looked}), so torch-scatter cannot be built; "
                f"install one (Debian/Ubuntu: apt-get install g++) and run make accel again. {FALLBACK_NOTE}")
            return EXIT_NO_COMPILER
        say(f"no cached wheel for this torch; building one with {compiler}")
        started = time.perf_counter()
        wheel = build_wheel(args.version, key_dir, args.source)
        if wheel is None:
            say(f"the build failed; the last lines of {key_dir / 'build.log'}:")
            print(tail(key_dir / "build.log"), flush=True)
            say(f"nothing was installed; {FALLBACK_NOTE}")
            return EXIT_BUILD_FAILED
        minutes, seconds = divmod(round(time.perf_counter() - started), 60)
        say(f"built {wheel.name} in {minutes} min {seconds} s; cached in {key_dir}")

    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--force-reinstall", str(wheel)])
    if done.returncode != 0:
        say(f"pip could not install {wheel}; {FALLBACK_NOTE}")
        return EXIT_BUILD_FAILED
    have = installed_version()
    if have is None:
        say(f"torch-scatter was installed but does not load with torch {torch_info['torch']}; remove it with "
            f"`{sys.executable} -m pip uninstall torch-scatter` and rebuild with --rebuild")
        return EXIT_CHECK_FAILED
    say(f"installed torch-scatter {have}: solutions.compute.accel now uses it (uninstall with "
        f"`{sys.executable} -m pip uninstall torch-scatter` to go back to torch's own ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
