"""Run one upstream TpuGraphs baseline program, unchanged, inside the peers' virtual environment.

``benchmarks.bench_peers`` starts it as ``.venv-peers/bin/python benchmarks/peers_launch.py TIMINGS.json
PROGRAM.py [upstream flags...]`` with ``../shared/peers/tpu_graphs`` as the working directory. It is
the only file of the kit that runs under the peers' Python (TensorFlow 2.15, TF-GNN 1.0): it imports
nothing of the kit. Before it hands over to the upstream program (``runpy``, as ``python PROGRAM.py``
would), it does four things, each needed to run the published code as published and measure it:

1. limits TensorFlow to ``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS`` threads (the bench's
   cores), as the kit's methods are limited to the same cores;
2. seeds the run when ``PEERS_SEED`` is set (``tf.keras.utils.set_random_seed``: Python's, NumPy's and
   TensorFlow's generators; the upstream sets no seed of its own, so without it two runs of one command
   differ). Seeded is not bit-identical: TensorFlow's multi-threaded kernels may still sum in another
   order;
3. times each progress-bar loop of the upstream program (``tqdm``) and each Keras epoch: the timestamp
   of every item of a loop, and of every epoch's end with its logs (loss, validation OPA), are written
   to TIMINGS.json at exit (seconds since the launcher started, under ``start``), so the benchmark can
   tell the time spent predicting the test graphs (the upstream inference loop) from the rest of the
   run, and keep the validation curve with the time at which each epoch ended;
4. repairs one call of the pinned upstream commit (ddd187c5): ``layout/train_lib.py`` predicts the test
   graphs with ``model.forward(..., backprop=False)``, a keyword ``ResModel.forward`` no longer takes
   (it was renamed ``dropout``), so the published ``layout_train.py`` crashes after training. Earlier
   upstream code took ``backprop=False`` to mean the forward pass over the whole graph, no sampled
   segment: ``dropout='fullgraph'`` of the pinned code. The repair maps one to the other and changes
   nothing else.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time


def _limit_threads() -> None:
    import tensorflow as tf

    intra = int(os.environ.get("TF_NUM_INTRAOP_THREADS", "0"))
    inter = int(os.environ.get("TF_NUM_INTEROP_THREADS", "0"))
    if intra:
        tf.config.threading.set_intra_op_parallelism_threads(intra)
    if inter:
        tf.config.threading.set_inter_op_parallelism_threads(inter)


def _seed() -> None:
    seed = os.environ.get("PEERS_SEED", "")
    if seed:
        import tensorflow as tf

        tf.keras.utils.set_random_seed(int(seed))


def _time_progress_bars(out_path: str, started: float) -> None:
    """Replace ``tqdm.tqdm`` with a subclass that stamps each item of each loop, and ``Model.fit`` with
    one that stamps each epoch's end with its logs; write them at exit."""
    import tensorflow as tf
    import tqdm

    loops: list[dict] = []
    epochs: list[dict] = []
    base = tqdm.tqdm

    class TimedBar(base):  # type: ignore[misc, valid-type]
        def __iter__(self):
            stamps = [time.perf_counter()]
            loops.append({"desc": self.desc or "", "stamps": stamps})
            for item in super().__iter__():
                stamps.append(time.perf_counter())
                yield item
            stamps.append(time.perf_counter())

    tqdm.tqdm = TimedBar

    class EpochStamps(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            epochs.append({"t": time.perf_counter(),
                           "logs": {k: float(v) for k, v in (logs or {}).items()}})

    fit = tf.keras.Model.fit

    def stamped_fit(self, *args, **kwargs):
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), EpochStamps()]
        return fit(self, *args, **kwargs)

    tf.keras.Model.fit = stamped_fit

    def write() -> None:
        with open(out_path, "w", encoding="utf-8") as out:
            json.dump({"start": started, "loops": loops, "epochs": epochs}, out)

    atexit.register(write)


def _repair_layout_inference() -> None:
    from tpu_graphs.baselines.layout import models

    forward = models.ResModel.forward

    def forward_accepting_backprop(self, graph, num_configs, dropout=None, backprop=None):
        if backprop is False and dropout is None:
            dropout = "fullgraph"
        return forward(self, graph, num_configs, dropout=dropout)

    models.ResModel.forward = forward_accepting_backprop


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        sys.exit("usage: peers_launch.py TIMINGS.json PROGRAM.py [flags...]")
    started = time.perf_counter()
    timings, program = argv[0], argv[1]
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))  # the upstream package, as `python PROGRAM`
    _limit_threads()
    _seed()
    _time_progress_bars(timings, started)
    if os.path.basename(program) == "layout_train.py":
        _repair_layout_inference()
    sys.argv = [program, *argv[2:]]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
