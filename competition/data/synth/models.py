"""Whole-program graphs for the layout collections: CNNs, 3-D CNNs, transformers and MLP/recommenders.

A program is a training step or an inference step of a model of the family its ``ModelSpec`` names,
emitted op by op as XLA would see it before fusion: convolutions with batch norm and ReLU, residual
adds, pooling, attention with softmax, layer norm, GELU, mixed-precision converts, a loss, and for
training steps the gradient ops and the optimizer update of every weight. Training steps usually sit
in a ``while`` loop whose state tuple carries the weights (``get-tuple-element`` / ``tuple``
plumbing), which gives the opcode profile of real TPU programs (multiply, add, broadcast, parameter
and get-tuple-element lead). Blocks are emitted until the program reaches its node budget; side
computations (metrics and summaries, mixed-precision casts) keep the share of configurable nodes in
the 1-8 % range the real graphs show.
"""

from __future__ import annotations

import math

import numpy as np

from competition.data.synth.graphs import HloBuilder, HloGraph, Instr, descending_layout
from competition.data.synth.names import ModelSpec


class _Program:
    """A model step under construction: owns the builder, the weights and the optimizer state."""

    def __init__(self, spec: ModelSpec, rng: np.random.Generator, target_nodes: int,
                 configurable_share: float) -> None:
        self.spec = spec
        self.rng = rng
        self.b = HloBuilder(rng, spec.float_type)
        self.target_nodes = target_nodes
        self.configurable_share = configurable_share
        self.in_loop = bool(rng.random() < (0.75 if spec.train else 0.4))
        # Data-parallel training on several cores all-reduces every gradient.
        self.all_reduce = spec.train and (any(t in spec.stem for t in ("2x2", "4x4", "8x8"))
                                          or rng.random() < 0.3)
        self.infeed: Instr | None = None  # the step's input tuple when inputs come from the infeed queue
        self.infeed_shapes: list[tuple[tuple[int, ...], str]] = []
        self.state: list[tuple[tuple[int, ...], str]] = []  # shapes and types carried by the loop
        self.updates: list[Instr] = []  # new values of the state, in order
        self.outputs: list[Instr] = []  # extra values returned (losses, metrics)
        self.loop_param: Instr | None = None
        self._layout_styles: dict[int, list[tuple[int, ...]]] = {}  # rank -> the program's other layouts

    # -- bookkeeping ----------------------------------------------------------------------------
    @property
    def nodes(self) -> int:
        return self.b.node_count

    @property
    def configurable(self) -> int:
        return self.b.configurable_count

    def full(self) -> bool:
        """Whether the forward pass has used its share of the node budget (training adds a backward pass)."""
        return self.nodes >= self.target_nodes * (0.45 if self.spec.train else 0.95)

    def state_value(self, shape: tuple[int, ...], dtype: str | None = None, layout=None) -> Instr:
        """A weight, optimizer slot or input: a parameter, or a get-tuple-element of the loop state."""
        dtype = dtype or self.spec.float_type
        self.state.append((tuple(shape), dtype))
        if self.loop_param is not None:
            return self.b.gte(self.loop_param, len(self.state), shape, dtype, layout)
        return self.b.param(shape, dtype, layout=layout)

    def input_value(self, shape: tuple[int, ...], dtype: str | None = None) -> Instr:
        """A batch input: from the infeed queue inside training loops, else like any state value."""
        if self.loop_param is None or not self.spec.train:
            return self.state_value(shape, dtype)
        b = self.b
        if self.infeed is None:
            token = b.emit("after-all", (), [], dtype="token")
            self.infeed = b.emit("infeed", (), [token], dtype="tuple", tuple_size=0)
        self.infeed_shapes.append((tuple(shape), dtype or self.spec.float_type))
        self.infeed.attrs["tuple_size"] = len(self.infeed_shapes)
        return b.gte(self.infeed, len(self.infeed_shapes) - 1, shape, dtype or self.spec.float_type)

    def weight(self, shape: tuple[int, ...]) -> Instr:
        """A trainable weight (part of the state)."""
        return self.state_value(shape)

    # -- shared pieces --------------------------------------------------------------------------
    def rand_layout(self, rank: int) -> tuple[int, ...]:
        """The compiler's layout for a new tensor: usually the default, sometimes another order.

        The other orders come from a small per-program set (one or two per rank): a compiler makes
        the same choice for the same kind of layer.
        """
        if rank >= 2 and self.rng.random() < 0.25:
            if rank not in self._layout_styles:
                self._layout_styles[rank] = [tuple(int(d) for d in self.rng.permutation(rank))
                                             for _ in range(int(self.rng.integers(1, 3)))]
            styles = self._layout_styles[rank]
            return styles[int(self.rng.integers(len(styles)))]
        return descending_layout(rank)

    def filler(self, x: Instr) -> Instr:
        """Side computations that keep the configurable share near the spec's target.

        Numerics checks, summaries, clipping, moving averages and precision casts, shaped like real
        TPU programs: they read ``x`` (often twice), branch through compare / select, pack results in
        tuples, and end in the step's outputs, so the main chain is unchanged.
        """
        b = self.b
        while self.configurable > self.configurable_share * max(self.nodes, 1):
            kind = int(self.rng.choice(5, p=[0.3, 0.15, 0.2, 0.2, 0.15]))
            if kind == 0:  # loss-scaling finite check: NaNs compare unequal to themselves
                finite = b.binary("compare", x, x)
                self.outputs.append(b.emit("select", x.shape, [finite, x, b.scalar_broadcast(x.shape)],
                                           dtype=x.dtype))
                ones, zeros = b.scalar_broadcast(x.shape), b.scalar_broadcast(x.shape)
                # finite mask
                self.outputs.append(b.emit("select", x.shape, [finite, ones, zeros], dtype=x.dtype))
            elif kind == 1:  # a mixed-precision cast, scaled by its own constant
                other = "f32" if x.dtype != "f32" else "bf16"
                scale = b.broadcast(b.emit("constant", (), dtype=other), x.shape, ())
                cast = b.convert(x, other)
                self.outputs += [b.binary("multiply", cast, scale),
                                 b.reduce(cast, list(range(x.rank)), "maximum")]
            elif kind == 2:  # summary statistics returned together: sum of squares and maximum
                stats = b.tuple([b.reduce(b.binary("multiply", x, x), list(range(x.rank))),
                                 b.reduce(x, list(range(x.rank)), "maximum")])
                self.outputs += [b.gte(stats, 0, ()), b.gte(stats, 1, ())]
            elif kind == 3:  # clipping to a bound, through compare / select
                bound = b.broadcast(b.emit("constant", (), dtype=x.dtype), x.shape, ())
                over = b.binary("compare", x, bound)
                self.outputs.append(b.emit("select", x.shape, [over, bound, x], dtype=x.dtype))
                ones, zeros = b.scalar_broadcast(x.shape), b.scalar_broadcast(x.shape)
                # clipped mask
                self.outputs.append(b.emit("select", x.shape, [over, ones, zeros], dtype=x.dtype))
            else:  # an exponential moving average kept in the state
                avg = self.state_value(x.shape, x.dtype)
                decay = b.scalar_broadcast(x.shape)
                self.outputs.append(b.binary("add", b.binary("multiply", avg, decay),
                                             b.binary("subtract", x, b.binary("multiply", x, decay))))
        return x

    def layer_norm(self, x: Instr, axis: int) -> Instr:
        b = self.b
        keep = [d for d in range(x.rank) if d != axis]
        mean = b.binary("multiply", b.reduce(x, [axis]), b.scalar_broadcast(tuple(x.shape[d] for d in keep)))
        c = b.binary("subtract", x, b.broadcast(mean, x.shape, keep))
        var = b.reduce(b.binary("multiply", c, c), [axis])
        var = b.binary("add", b.binary("multiply", var, b.scalar_broadcast(var.shape)),
                       b.scalar_broadcast(var.shape))
        y = b.binary("multiply", c, b.broadcast(b.unary("rsqrt", var), x.shape, keep))
        gamma, beta = self.weight((x.shape[axis],)), self.weight((x.shape[axis],))
        y = b.binary("multiply", y, b.broadcast(gamma, x.shape, [axis]))
        return b.binary("add", y, b.broadcast(beta, x.shape, [axis]))

    def optimizer(self, w: Instr, grad: Instr) -> None:
        """SGD with momentum (CNNs) or Adam (transformers, MLPs) on one weight."""
        b = self.b
        if grad.shape != w.shape:
            grad = b.reshape(grad, w.shape) if grad.elements == w.elements else b.broadcast(
                b.reduce(grad, list(range(grad.rank))), w.shape, ())
        if self.all_reduce:
            grad = b.emit("all-reduce", grad.shape, [grad], dtype=grad.dtype,
                          called=[b.reducer("add", grad.dtype)])
        m = self.state_value(w.shape)
        m2 = b.binary("add", b.binary("multiply", m, b.scalar_broadcast(w.shape)), grad)
        if self.spec.family == "cnn" or self.spec.family == "cnn3d":
            new_w = b.binary("subtract", w, b.binary("multiply", m2, b.scalar_broadcast(w.shape)))
            self.updates += [new_w, m2]
            return
        v = self.state_value(w.shape)
        v2 = b.binary("add", b.binary("multiply", v, b.scalar_broadcast(w.shape)),
                      b.binary("multiply", b.binary("multiply", grad, grad), b.scalar_broadcast(w.shape)))
        denom = b.binary("add", b.unary("sqrt", v2), b.scalar_broadcast(w.shape))
        step = b.binary("divide", m2, denom)
        new_w = b.binary("subtract", w, b.binary("multiply", step, b.scalar_broadcast(w.shape)))
        self.updates += [new_w, m2, v2]

    def softmax_loss(self, logits: Instr) -> Instr:
        b = self.b
        rows = logits.shape[:-1]
        keep = list(range(len(rows)))
        mx = b.reduce(logits, [logits.rank - 1], "maximum")
        z = b.binary("subtract", logits, b.broadcast(mx, logits.shape, keep))
        e = b.unary("exponential", z)
        lse = b.unary("log", b.reduce(e, [logits.rank - 1]))
        labels = self.input_value(logits.shape)
        picked = b.reduce(b.binary("multiply", z, labels), [logits.rank - 1])
        loss = b.reduce(b.binary("subtract", lse, picked), keep)
        self.outputs.append(loss)
        # d loss / d logits = softmax - labels
        probs = b.binary("divide", e, b.broadcast(b.reduce(e, [logits.rank - 1]), logits.shape, keep))
        return b.binary("subtract", probs, labels)

    # -- families -------------------------------------------------------------------------------
    def conv_block(self, x: Instr, features: int, kernel: int, stride: int, tape: list) -> Instr:
        b = self.b
        ns = x.rank - 2
        # Depthwise convolutions (EfficientNet / MobileNet) have one input feature per group.
        groups = x.shape[-1] if (features == x.shape[-1] and kernel == 3 and self.rng.random() < 0.2) else 1
        w = self.weight((*([kernel] * ns), x.shape[-1] // groups, features))
        y = b.convolution(x, w, features, [stride] * ns, groups=groups, layout=self.rand_layout(x.rank))
        conv = y
        axes = list(range(x.rank - 1))
        if self.spec.train:  # batch norm with batch statistics
            n = b.scalar_broadcast((features,))
            mean = b.binary("multiply", b.reduce(y, axes), n)
            c = b.binary("subtract", y, b.broadcast(mean, y.shape, [x.rank - 1]))
            var = b.binary("multiply", b.reduce(b.binary("multiply", c, c), axes),
                           b.scalar_broadcast((features,)))
            inv = b.unary("rsqrt", b.binary("add", var, b.scalar_broadcast((features,))))
            y = b.binary("multiply", c, b.broadcast(inv, y.shape, [x.rank - 1]))
        gamma, beta = self.weight((features,)), self.weight((features,))
        if self.rng.random() < 0.15:  # a reshape of the scale, as Keras emits for broadcasting
            g = b.reshape(gamma, (*([1] * (x.rank - 1)), features))
            g = b.broadcast(b.reshape(g, (features,)), y.shape, [x.rank - 1])
        else:
            g = b.broadcast(gamma, y.shape, [x.rank - 1])
        y = b.binary("add", b.binary("multiply", y, g), b.broadcast(beta, y.shape, [x.rank - 1]))
        y = b.binary("maximum", y, b.scalar_broadcast(y.shape))
        tape.append(("conv", x, w, conv, y, gamma, beta, stride, groups))
        return y

    def conv_backward(self, record: tuple, dy: Instr) -> Instr:
        b = self.b
        _, x, w, conv, y, gamma, beta, stride, groups = record
        relu_mask = b.binary("compare", y, b.scalar_broadcast(y.shape))
        dy = b.emit("select", dy.shape, [relu_mask, dy, b.scalar_broadcast(dy.shape)], dtype=dy.dtype)
        axes = list(range(y.rank - 1))
        self.optimizer(beta, b.reduce(dy, axes))
        self.optimizer(gamma, b.reduce(b.binary("multiply", dy, conv), axes))
        dy = b.binary("multiply", dy, b.broadcast(gamma, dy.shape, [y.rank - 1]))
        ns = x.rank - 2
        window = w.shape[:ns]
        flops = 2.0 * math.prod(conv.shape) * math.prod(window) * (x.shape[-1] // groups)
        w_rev = b.emit("reverse", w.shape, [w], dtype=w.dtype, dimensions=tuple(range(ns)))
        attrs = {k: conv.attrs[k]
                 for k in ("window", "conv_dims", "feature_group_count", "batch_group_count")}
        dx = b.emit("convolution", x.shape, [dy, w_rev], dtype=x.dtype, flops=flops,
                    layout=self.rand_layout(x.rank), **attrs)
        attrs_w = dict(attrs, feature_group_count=1, batch_group_count=groups)
        dw = b.emit("convolution", w.shape, [x, dy], dtype=w.dtype, flops=flops, **attrs_w)
        self.optimizer(w, dw)
        return dx

    def build_cnn(self) -> Instr:
        b = self.b
        spec = self.spec
        ns = 3 if spec.family == "cnn3d" else 2
        size = int(self.rng.choice([32, 64, 96]) if ns == 3 else self.rng.choice([224, 224, 299, 128, 512]))
        x = self.input_value((spec.batch, *([size] * ns), 3))
        tape: list = []
        pools: list[tuple[Instr, Instr]] = []
        features = int(self.rng.choice([16, 32, 64]))
        x = self.conv_block(x, features, 3 if ns == 3 else 7, 2, tape)
        while not self.full():
            skip = x
            stride = 2 if (x.shape[1] > 7 and self.rng.random() < 0.3) else 1
            grow = stride == 2 or self.rng.random() < 0.1
            out = min(2048, features * 2) if grow else features
            x = self.conv_block(x, out, int(self.rng.choice([1, 3, 3])), stride, tape)
            x = self.conv_block(x, out, 3 if self.rng.random() < 0.6 else 1, 1, tape)
            if skip.shape == x.shape:
                x = b.binary("add", x, skip)
            elif self.rng.random() < 0.5:
                proj = self.conv_block(skip, out, 1, stride, tape)
                if proj.shape == x.shape:
                    x = b.binary("add", x, proj)
            if self.rng.random() < 0.1 and x.shape[1] > 7:
                pooled = b.reduce_window(x, [1, *([3] * ns), 1], [1, *([2] * ns), 1])
                pools.append((x, pooled))
                x = pooled
            features = out
            self.filler(x)
        pooled = b.reduce(x, list(range(1, ns + 1)))  # global average pool -> (batch, features)
        pooled = b.binary("multiply", pooled, b.scalar_broadcast(pooled.shape))
        if self.rng.random() < 0.5:
            pooled = b.reshape(pooled, (spec.batch, features))
        classes = int(self.rng.choice([10, 91, 1000, 1001]))
        wfc = self.weight((features, classes))
        logits = b.binary("add", b.dot(pooled, wfc),
                          b.broadcast(self.weight((classes,)), (spec.batch, classes), [1]))
        if not spec.train:
            self.outputs.append(logits)
            return logits
        dlogits = self.softmax_loss(logits)
        self.optimizer(wfc, b.dot(b.transpose(pooled, (1, 0)), dlogits))
        dx = b.dot(dlogits, b.transpose(wfc, (1, 0)))
        dx = b.broadcast(dx, x.shape, [0, x.rank - 1])
        for record in reversed(tape):
            if self.nodes > self.target_nodes:
                break
            if dx.shape == record[4].shape:  # the chain of a residual branch; other branches are skipped
                dx = self.conv_backward(record, dx)
                self.filler(dx)
        for before, pooled in pools:  # max-pool gradients
            grad = b.emit("select-and-scatter", before.shape,
                          [before, b.scalar_broadcast(pooled.shape), b.constant()],
                          dtype=before.dtype,
                          called=[b.reducer("maximum", before.dtype), b.reducer("add", before.dtype)],
                          window=pooled.attrs["window"])
            self.outputs.append(b.reduce(grad, list(range(grad.rank))))
        return dx

    def dense(self, x: Instr, out: int, tape: list, bias: bool = True) -> Instr:
        b = self.b
        w = self.weight((x.shape[-1], out))
        xin = x
        if x.dtype == "f32" and self.spec.float_type == "bf16":
            xin = b.convert(x, "bf16")
        y = b.dot(xin, w, layout=self.rand_layout(2))
        tape.append(("dense", xin, w, y))
        if bias:
            y = b.binary("add", y, b.broadcast(self.weight((out,)), y.shape, [1]))
        return y

    def dense_backward(self, record: tuple, dy: Instr) -> Instr:
        b = self.b
        _, x, w, y = record
        if dy.shape != y.shape:
            return dy
        self.optimizer(w, b.dot(b.transpose(x, (1, 0)), dy))
        return b.dot(dy, b.transpose(w, (1, 0)), layout=self.rand_layout(2))

    def backprop_dense(self, tape: list, dx: Instr) -> Instr:
        """Gradients back through the dense layers on ``tape``, last first, until the node budget is spent."""
        for record in reversed(tape):
            if self.nodes > self.target_nodes:
                break
            dx = self.dense_backward(record, dx)
            self.filler(dx)
        return dx

    def attention_layer(self, x: Instr, tape: list) -> Instr:
        b = self.b
        d = self.spec.dims
        batch, seq, hidden, heads = self.spec.batch, d["seq"], d["hidden"], d["heads"]
        head = hidden // heads
        proj = []
        for _ in range(3):  # q, k, v: dense, reshape to heads, bias, transpose
            y = self.dense(x, hidden, tape, bias=False)
            y4 = b.reshape(y, (batch, seq, heads, head), layout=self.rand_layout(4))
            y4 = b.binary("add", y4, b.broadcast(self.weight((heads, head)), y4.shape, [2, 3]))
            proj.append(y4)
        q = b.transpose(proj[0], (0, 2, 1, 3))
        k = b.transpose(proj[1], (0, 2, 3, 1))
        v = b.transpose(proj[2], (0, 2, 1, 3))
        scores = b.dot(q, k, batch_dims=2, layout=self.rand_layout(4))
        scores = b.binary("multiply", scores, b.scalar_broadcast(scores.shape))
        mask = self.input_value((batch, seq), "f32")
        mask = b.convert(mask, scores.dtype) if scores.dtype != "f32" else mask
        scores = b.binary("add", scores, b.broadcast(mask, scores.shape, [0, 3]))
        mx = b.reduce(scores, [3], "maximum")
        e = b.unary("exponential", b.binary("subtract", scores, b.broadcast(mx, scores.shape, [0, 1, 2])))
        probs = b.binary("divide", e, b.broadcast(b.reduce(e, [3]), scores.shape, [0, 1, 2]))
        if self.spec.train:  # dropout
            keep = b.binary("compare", b.emit("rng", probs.shape, [b.constant(), b.constant()]),
                            b.scalar_broadcast(probs.shape))
            probs = b.emit("select", probs.shape, [keep, probs, b.scalar_broadcast(probs.shape)],
                           dtype=probs.dtype)
        ctx = b.dot(probs, v, batch_dims=2, layout=self.rand_layout(4))
        ctx = b.reshape(b.transpose(ctx, (0, 2, 1, 3)), (batch * seq, hidden), layout=self.rand_layout(2))
        out = self.dense(ctx, hidden, tape)
        x = self.layer_norm(b.binary("add", x, out), 1)
        # feed-forward with GELU (tanh approximation)
        h = self.dense(x, 4 * hidden, tape)
        if self.rng.random() < 0.5:
            cube = b.binary("multiply", b.binary("multiply", h, h), h)
        else:
            cube = b.binary("power", h, b.scalar_broadcast(h.shape))
        inner = b.binary("add", h, b.binary("multiply", cube, b.scalar_broadcast(h.shape)))
        t = b.unary("tanh", b.binary("multiply", inner, b.scalar_broadcast(h.shape)))
        g = b.binary("multiply", b.binary("multiply", h, b.scalar_broadcast(h.shape)),
                     b.binary("add", t, b.scalar_broadcast(h.shape)))
        out = self.dense(g, hidden, tape)
        return self.layer_norm(b.binary("add", x, out), 1)

    def build_transformer(self) -> Instr:
        b = self.b
        d = self.spec.dims
        batch, seq, hidden = self.spec.batch, d["seq"], d["hidden"]
        vocab = int(self.rng.choice([30522, 32000, 50257]))
        ids = self.input_value((batch * seq,), "s32")
        table = self.weight((vocab, hidden))
        x = b.emit("gather", (batch * seq, hidden), [table, ids], dtype=table.dtype)
        positions = b.emit("iota", (seq,), [], dtype="s32", dimensions=(0,))
        pos_table = self.weight((max(512, seq), hidden))
        pos = b.emit("gather", (seq, hidden), [pos_table, positions], dtype=pos_table.dtype)
        pos = b.broadcast(pos, (batch, seq, hidden), [1, 2])
        x = b.binary("add", x, b.reshape(pos, (batch * seq, hidden)))
        x = self.layer_norm(x, 1)
        tape: list = []
        layers = 0
        while not self.full() and layers < d["layers"] * 4:
            x = self.attention_layer(x, tape)
            self.filler(x)
            layers += 1
        if not self.spec.train:
            pooled = b.slice(b.reshape(x, (batch, seq, hidden)), (0, 0, 0), (batch, 1, hidden))
            pooled = b.unary("tanh", self.dense(b.reshape(pooled, (batch, hidden)), hidden, tape))
            self.outputs.append(pooled)
            return pooled
        logits = self.dense(x, int(self.rng.choice([2, 128, 512])), tape)
        dx = self.backprop_dense(tape, self.softmax_loss(logits))
        if dx.shape == (batch * seq, hidden):  # embedding gradient: scatter-add rows into the table
            zeros = b.scalar_broadcast(table.shape)
            grad = b.emit("scatter", table.shape, [zeros, ids, dx], dtype=table.dtype,
                          called=[b.reducer("add", table.dtype)])
            self.optimizer(table, grad)
        return dx

    def build_mlp(self) -> Instr:
        b = self.b
        batch = self.spec.batch * 64
        width = int(self.rng.choice([64, 128, 256, 512, 1024]))
        features = []
        for _ in range(int(self.rng.integers(2, 6))):  # embedding lookups
            table = self.weight((int(self.rng.choice([1000, 10000, 100000])), 64))
            ids = self.input_value((batch,), "s32")
            features.append(b.emit("gather", (batch, 64), [table, ids], dtype=table.dtype))
        x = b.concatenate(features, 1)
        if self.rng.random() < 0.5:  # a recurrent step: read one time step of a sequence input
            steps = int(self.rng.choice([16, 32, 64]))
            seq = self.state_value((steps, batch, 64))
            index = b.constant((), "s32")
            step = b.emit("dynamic-slice", (1, batch, 64), [seq, index, index, index], dtype=seq.dtype,
                          dynamic_slice_sizes=(1, batch, 64))
            x = b.concatenate([x, b.reshape(step, (batch, 64))], 1)
            self.outputs.append(b.emit("dynamic-update-slice", seq.shape, [seq, step, index, index, index],
                                       dtype=seq.dtype))
        tape: list = []
        while not self.full():
            x = self.dense(x, width, tape)
            if self.rng.random() < 0.6:
                x = b.unary(str(self.rng.choice(["tanh", "logistic"])), x)
            else:
                x = b.binary("maximum", x, b.scalar_broadcast(x.shape))
            if self.rng.random() < 0.3:
                x = b.reshape(x, (batch // 8, 8 * width), layout=self.rand_layout(2))
                x = b.reshape(x, (batch, width))
            self.filler(x)
        logits = self.dense(x, 2, tape)
        if not self.spec.train:
            self.outputs.append(logits)
            return logits
        return self.backprop_dense(tape, self.softmax_loss(logits))

    # -- the whole program ----------------------------------------------------------------------
    def build(self) -> HloGraph:
        """The program: its step in a ``while`` body (with its condition) or straight in the entry."""
        b = self.b
        b.begin(f"cluster_{int(self.rng.integers(1, 10_000))}__XlaCompiledKernel_true__XlaNumConstantArgs_"
                f"{int(self.rng.integers(0, 8))}__XlaNumResourceArgs_{int(self.rng.integers(0, 400))}_.0")
        if self.in_loop:
            b.begin(b.unique("while_body"))
            self.loop_param = b.tuple_param(0)
            counter = b.gte(self.loop_param, 0, (), "s32")
        family_build = {"cnn": self.build_cnn, "cnn3d": self.build_cnn, "transformer": self.build_transformer,
                        "mlp": self.build_mlp}[self.spec.family]
        last = family_build()
        if not self.in_loop:
            b.end(b.tuple([*self.updates, *self.outputs, last]))
            return b.build(self.spec.stem)
        # The loop state: the step counter, the updated weights and slots, the step's outputs.
        next_counter = b.binary("add", counter, b.constant((), "s32"))
        root = b.tuple([next_counter, *self.updates, *self.outputs, last])
        size = len(root.operands)
        self.loop_param.attrs["tuple_size"] = size
        body = b.end(root)
        b.begin(b.unique("while_cond"))
        state = b.tuple_param(size)
        cond = b.end(b.binary("compare", b.gte(state, 0, (), "s32"), b.constant((), "s32")))
        # Back in the entry: parameters for the initial state, the loop, a few results.
        init = b.tuple([b.param(o.shape, o.dtype) for o in root.operands])
        loop = b.emit("while", (), [init], dtype="tuple", called=[cond, body], tuple_size=size)
        results = [b.gte(loop, i, o.shape, o.dtype) for i, o in enumerate(root.operands[1:4], start=1)]
        b.end(b.tuple(results))
        return b.build(self.spec.stem)


def build_program(spec: ModelSpec, rng: np.random.Generator, target_nodes: int,
                  configurable_share: float | None = None) -> HloGraph:
    """A whole-program graph of about ``target_nodes`` nodes (training steps come out larger).

    ``configurable_share`` caps the configurable nodes' share of the program; drawn in 1.5-7 % when
    None (the draw is made either way, so the rest of the program does not depend on it).
    """
    share = float(rng.uniform(0.015, 0.07))
    if configurable_share is not None:
        share = float(configurable_share)
    return _Program(spec, rng, target_nodes, share).build()
