"""Dump small JAX programs as XLA writes them, for ``tpugraphs rank`` and its tests.

Run it with a Python that has JAX (it needs nothing of the kit, and the kit needs no JAX):

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax jaxlib
    /tmp/jaxenv/bin/python scripts/dump_hlo_fixtures.py --out tests/fixtures/hlo

Each program is compiled once with ``XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_proto"`` in a child
process (the flags are read when XLA starts), and its ``before_optimizations.hlo.pb`` (an ``HloProto``,
the module before any backend pass) is copied to ``OUT/<program>.before_optimizations.hlo.pb``:

- ``convnet_grad``: the gradient of a two-layer convolutional net's loss (NHWC activations, HWIO
  kernels) with respect to its kernels: forward convolutions, their input and weight gradients;
- ``attention``: one self-attention block (query, key, value and output projections, scores, softmax);
- ``mlp_grad``: the gradient of a three-layer perceptron's loss (dots and their transposes).

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

PROGRAMS = ("convnet_grad", "attention", "mlp_grad")

# The child's code: build one program and compile it (the dump happens at compilation).
CHILD = r'''
import sys

import jax
import jax.numpy as jnp
from jax import lax

name = sys.argv[1]
key = jax.random.PRNGKey(0)


def convnet_grad():
    def conv(x, w):
        return lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss(params, x):
        w1, w2 = params
        h = jax.nn.relu(conv(x, w1))
        y = conv(h, w2)
        return jnp.mean(y * y)

    x = jnp.ones((8, 16, 16, 3), jnp.float32)
    params = (jnp.ones((3, 3, 3, 8), jnp.float32), jnp.ones((3, 3, 8, 16), jnp.float32))
    return jax.jit(jax.grad(loss), static_argnums=()).lower(params, x)


def attention():
    def block(x, wq, wk, wv, wo):
        batch, seq, width = x.shape
        heads = 4

        def split(t):
            return t.reshape(batch, seq, heads, width // heads)

        q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(width // heads)
        weights = jax.nn.softmax(scores, axis=-1)
        out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, width)
        return out @ wo

    x = jnp.ones((2, 16, 32), jnp.float32)
    w = jnp.ones((32, 32), jnp.float32)
    return jax.jit(block).lower(x, w, w, w, w)


def mlp_grad():
    def loss(params, x):
        for w in params[:-1]:
            x = jax.nn.relu(x @ w)
        y = x @ params[-1]
        return jnp.mean(y * y)

    x = jnp.ones((32, 64), jnp.float32)
    params = [jnp.ones((64, 128), jnp.float32), jnp.ones((128, 128), jnp.float32),
              jnp.ones((128, 10), jnp.float32)]
    return jax.jit(jax.grad(loss)).lower(params, x)


lowered = {"convnet_grad": convnet_grad, "attention": attention, "mlp_grad": mlp_grad}[name]()
lowered.compile()
'''


def dump(program: str, out: Path, python: str) -> Path:
    """Compile ``program`` in a child with XLA's dump flags; copy its first module dump to ``out``."""
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={folder} --xla_dump_hlo_as_proto",
                   JAX_PLATFORMS="cpu")
        subprocess.run([python, "-c", CHILD, program], env=env, check=True)
        # The program's own module is the largest before-optimizations dump (jax may compile helpers).
        dumps = sorted(Path(folder).glob("*.before_optimizations.hlo.pb"), key=lambda p: p.stat().st_size)
        if not dumps:
            raise SystemExit(f"{program}: XLA wrote no *.before_optimizations.hlo.pb in {folder}")
        target = out / f"{program}.before_optimizations.hlo.pb"
        shutil.copyfile(dumps[-1], target)
        return target


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
    args.out.mkdir(parents=True, exist_ok=True)
    for program in args.programs or PROGRAMS:
        target = dump(program, args.out, args.python)
        print(f"{target} ({target.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
