"""The small JAX programs ``scripts/dump_hlo_fixtures.py`` compiles into the HLO fixtures of
``tests/fixtures/hlo``. Each function returns the program lowered (``jax.jit(...).lower(...)``); the dump
happens when it is compiled.

The dump script runs this file under its repository path, so the source locations XLA records in each
module (``op_name`` and a stack frame per instruction) name ``scripts/hlo_fixture_programs.py`` and a line
of it: ``tpugraphs rank`` shows them, and ``tests/test_rank.py`` checks that they point here. Needs JAX;
the kit itself never imports this file.
"""

import jax
import jax.numpy as jnp
from jax import lax


def convnet_grad():
    """The gradient of a two-layer convolutional net's loss (NHWC activations, HWIO kernels)."""
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
    return jax.jit(jax.grad(loss)).lower(params, x)


def attention():
    """One self-attention block: query, key, value and output projections, scores, softmax."""
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
    """The gradient of a three-layer perceptron's loss (dots and their transposes)."""
    def loss(params, x):
        for w in params[:-1]:
            x = jax.nn.relu(x @ w)
        y = x @ params[-1]
        return jnp.mean(y * y)

    x = jnp.ones((32, 64), jnp.float32)
    params = [jnp.ones((64, 128), jnp.float32), jnp.ones((128, 128), jnp.float32),
              jnp.ones((128, 10), jnp.float32)]
    return jax.jit(jax.grad(loss)).lower(params, x)


def lstm_grad():
    """The gradient of a small sequence model's loss: a 1-D convolution over time, an LSTM run with
    ``lax.scan`` (its step is a while loop's body), a dense head."""
    batch, steps, features, channels, hidden = 4, 12, 8, 16, 32

    def lstm_step(params, carry, x_t):
        h, c = carry
        gates = x_t @ params["wx"] + h @ params["wh"] + params["b"]
        i, f, g, o = jnp.split(gates, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    def loss(params, x, y):
        z = lax.conv_general_dilated(x, params["conv"], window_strides=(1,), padding="SAME",
                                     dimension_numbers=("NWC", "WIO", "NWC"))
        z = jax.nn.relu(z)
        init = (jnp.zeros((batch, hidden)), jnp.zeros((batch, hidden)))
        _, hs = lax.scan(lambda carry, x_t: lstm_step(params, carry, x_t), init, jnp.swapaxes(z, 0, 1))
        logits = hs[-1] @ params["head"]
        return jnp.mean((logits - y) ** 2)

    params = {"conv": jnp.ones((3, features, channels)), "wx": jnp.ones((channels, 4 * hidden)),
              "wh": jnp.ones((hidden, 4 * hidden)), "b": jnp.zeros(4 * hidden),
              "head": jnp.ones((hidden, 10))}
    x = jnp.ones((batch, steps, features))
    y = jnp.ones((batch, 10))
    return jax.jit(jax.grad(loss)).lower(params, x, y)
