"""Dump small JAX programs as XLA writes them, for ``tpugraphs rank`` and its tests.

Run it with a Python that has JAX (it needs nothing of the kit, and the kit needs no JAX):

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax jaxlib
    /tmp/jaxenv/bin/python scripts/dump_hlo_fixtures.py --out tests/fixtures/hlo

Each program of ``scripts/hlo_fixture_programs.py`` is compiled once with ``XLA_FLAGS="--xla_dump_to=DIR
--xla_dump_hlo_as_proto"`` in a child process (the flags are read when XLA starts), which runs that file
under its repository path so that the source locations XLA records name it. What is kept:

- ``OUT/<program>.before_optimizations.hlo.pb``: the program's module (the largest
  ``*.before_optimizations.hlo.pb`` of the dump; jax compiles small helper modules too), an ``HloProto``
  before any backend pass: ``convnet_grad``, ``attention``, ``mlp_grad``;
- ``lstm_grad`` (a 1-D convolution, an LSTM through ``lax.scan``, a dense head, the loss's gradient) as
  the dump folder XLA wrote, its ``*.before_optimizations.hlo.pb`` files only: ``OUT/lstm_dump/``, helper
  modules included, as a user's dump folder holds them;
- ``OUT/mlp_grad.<platform>_after_optimizations.hlo.pb``: ``mlp_grad``'s module after XLA's passes
  (fused and scheduled), the file ``rank`` must refuse.

The programs are small on purpose (the files are committed as test fixtures); the shapes say what each
dimension is, so a ranked change reads in the program's words.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAMS = ("convnet_grad", "attention", "mlp_grad", "lstm_grad")
FOLDERS = {"lstm_grad": "lstm_dump"}  # programs kept as their whole dump folder (before_optimizations)
OPTIMIZED = ("mlp_grad",)  # programs whose after_optimizations module is kept too
SOURCE = "scripts/hlo_fixture_programs.py"  # run under this name: the path the fixtures' frames carry
BEFORE, AFTER = ".before_optimizations.hlo.pb", "after_optimizations.hlo.pb"

# The child's code: build one program and compile it (the dump happens at compilation).
CHILD = """
import sys
namespace = {"__name__": "hlo_fixture_programs"}
exec(compile(open(sys.argv[1]).read(), sys.argv[2], "exec"), namespace)
namespace[sys.argv[3]]().compile()
"""


def dump(program: str, out: Path, python: str, root: Path) -> list[Path]:
    """Compile ``program`` in a child with XLA's dump flags; copy what is kept of the dump to ``out``."""
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={folder} --xla_dump_hlo_as_proto",
                   JAX_PLATFORMS="cpu")
        subprocess.run([python, "-c", CHILD, str(root / SOURCE), SOURCE, program], env=env, check=True,
                       cwd=root)
        befores = sorted(Path(folder).glob(f"*{BEFORE}"), key=lambda p: p.stat().st_size)
        if not befores:
            raise SystemExit(f"{program}: XLA wrote no *{BEFORE} in {folder}")
        written = []
        if program in FOLDERS:
            target_dir = out / FOLDERS[program]
            shutil.rmtree(target_dir, ignore_errors=True)
            target_dir.mkdir(parents=True)
            for path in sorted(befores):
                written.append(Path(shutil.copyfile(path, target_dir / path.name)))
        else:
            written.append(Path(shutil.copyfile(befores[-1], out / f"{program}{BEFORE}")))
        if program in OPTIMIZED:
            main_module = befores[-1].name[: -len(BEFORE)]  # module_NNNN.jit_NAME
            (after,) = [p for p in Path(folder).glob(f"{main_module}.*{AFTER}")]
            platform = after.name[len(main_module) + 1: -len(AFTER)]  # "cpu_"
            written.append(Path(shutil.copyfile(after, out / f"{program}.{platform}{AFTER}")))
        return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/hlo"), help="folder to write to")
    parser.add_argument("--python", default=sys.executable, help="a Python with jax (default: this one)")
    parser.add_argument("programs", nargs="*", metavar="PROGRAM",
                        help=f"which programs (default: all of {', '.join(PROGRAMS)})")
    args = parser.parse_args(argv)
    unknown = [p for p in args.programs if p not in PROGRAMS]
    if unknown:
        parser.error(f"no program {unknown[0]!r}; choose from {', '.join(PROGRAMS)}")
    probe = subprocess.run([args.python, "-c", "import jax"], capture_output=True)
    if probe.returncode != 0:
        print(f"dump_hlo_fixtures: {args.python} cannot import jax; install it (pip install jax jaxlib) "
              "or pass --python PATH", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parent.parent
    args.out.mkdir(parents=True, exist_ok=True)
    for program in args.programs or PROGRAMS:
        for target in dump(program, args.out.resolve(), args.python, root):
            print(f"{target} ({target.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
