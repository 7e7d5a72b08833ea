"""The GNN's settings: one object (``GNNConfig``), one set of defaults, one schema
(``solutions.settings.schema``).

Every setting is declared once below with its type, default, allowed values and meaning; the
command line (``--param``, ``--list-params``), the models (``LayoutRanker.from_settings``,
``TileRanker.from_settings``), the training loop and the saved model (``gnn.json``) all read it
from here. ``SETTINGS`` (a ``solutions.settings.schema.MethodSettings``) adds ``COLLECTION_DEFAULTS``, where a
collection starts from other values; the runner resolves a collection's settings through it once,
before the model is built. This module imports no torch: checking and listing settings stays light.

The fields are grouped: the network, the layout network, training, layout training, tile training,
Graph Segment Training, and how a fit runs. The defaults fit the ``make demo`` budget (2 CPU cores,
a few minutes for all five collections of the small embedded competition); raise ``*_epochs`` and
``hidden`` for real data. Why each default is what it is: docs/defaults.md.

``num_threads`` is 1 by default: the tensors of a pruned graph are small, and torch's thread pool
then costs more than it gives; one thread also makes a CPU fit reproducible whatever the machine's
core count. Use ``none`` (torch's default) or more threads for unpruned or real-size graphs.

``pruning`` is the one holder of how layout graphs are pruned (``solutions.pruning``: ``none``,
``onehop``, ``khop:3``, ``merged:onehop``, ``khop:4+merged``, ...); ``--no-prune`` is
``--param pruning=none``. It is kept in the canonical spelling and saved with the model, which
predicts with it whatever the default is later.

``training`` is ``full`` (every node of the sampled configs back-propagated) or ``gst`` (Graph
Segment Training of layout graphs, ``solutions.methods.gnn.gst``). GST segments the per-config message
passing of early fusion, so ``training=gst`` needs ``fusion=early``; anything else is refused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from competition.collections import Collection
from solutions.pruning import PruningNameError, parse_pruning, pruning_setting
from solutions.settings.schema import MethodSettings, SettingError, check_settings, setting

FUSIONS = ("early", "intermediate")
TRAINING_MODES = ("full", "gst")
DEFAULT_PRUNING = "onehop"  # the pruning of layout graphs unless --param pruning says otherwise
# Layout graphs a step of intermediate fusion scores in one pass unless layout_graphs_per_step says
# otherwise: chosen on validation (docs/gnn.md, "Several graphs a step").
LAYOUT_GRAPHS_PER_STEP = 4


def canonical_pruning(text: str) -> str:
    """A pruning name in its canonical spelling (``khop:3:0`` -> ``khop:3``); ValueError saying why not."""
    try:
        return pruning_setting(parse_pruning(text))
    except PruningNameError as exc:  # keep the reason, drop the list of names (the schema row gives it)
        raise ValueError(str(exc).split(": ", 1)[-1].split("; valid names")[0]) from None


@dataclass
class GNNConfig:
    """Settings of the GNN method (see the module docstring); every field is checked when one is made."""

    # the network (both kinds)
    hidden: int = setting(32, "width of every node state", low=1, search=(16, 128), scale="log")
    layers: int = setting(3, "message-passing layers", low=1, search=(1, 5))
    dropout: float = setting(0.0, "dropout between message-passing layers", low=0, high=1, high_open=True,
                              search=(0.0, 0.5))
    # the layout network
    fusion: str = setting("intermediate", "layout: configs join before message passing (early) or after it "
                          "(intermediate; model.py)", choices=FUSIONS)
    config_layers: int = setting(1, "layout, intermediate fusion: layers mixing linked configurable nodes' "
                                 "rows", low=0, search=(0, 3))
    config_attention: bool = setting(True, "layout: configs of a graph attend to each other before the head",
                                    search_choices=(True, False))
    row_features: bool = setting(True, "layout: looked-up slot sizes and 'differs from the usual row' "
                                 "(model.py)")
    engineered_features: bool = setting(True, "layout: also read each config's engineered layout features "
                                        "(the gbdt's) as z-scores within its graph (model.py)")
    heuristic_prior: float = setting(0.0, "layout, with engineered_features: add this times the config's "
                                     "heuristic_log_cost z-score to its score, so the network learns what "
                                     "to change in the heuristic's order (0: off; model.py)", low=0,
                                     search=(0.0, 6.0))
    # training (both kinds)
    lr: float = setting(5e-3, "AdamW learning rate, cosine decay to lr / 10 over the planned steps (0: no "
                        "update, for tests)", low=0, search=(1e-3, 2e-2), scale="log")
    weight_decay: float = setting(1e-4, "AdamW weight decay", low=0, search=(1e-6, 1e-2), scale="log")
    margin: float = setting(0.1, "margin of the pairwise hinge loss, in score units (train.py)", low=0,
                            search=(0.01, 1.0), scale="log")
    eval_every: int = setting(2, "epochs between validation scores", low=1)
    average_epochs: float = setting(0.0, "select and keep an exponential moving average of the weights over "
                                    "about this many epochs instead of the weights themselves (0: off; "
                                    "train.py)", low=0, search=(0.0, 30.0))
    patience: int | None = setting(None, "stop after this many evaluations without improvement (none: never)",
                                   low=1)
    # layout training: a few graphs per step
    layout_epochs: int = setting(45, "layout: passes over the training graphs", low=1)
    layout_graphs_per_step: int | None = setting(
        None, f"layout: graphs per step, the step's loss the mean of theirs (none: {LAYOUT_GRAPHS_PER_STEP} "
        "with intermediate fusion, scored in one pass; 1 with early fusion or gst; train.py)", low=1)
    layout_configs_per_graph: int = setting(32, "layout: configs sampled per graph per step; also the "
                                            "configs attended to at prediction", low=2)
    layout_min_epoch_steps: int = setting(8, "layout: fewest graphs trained in an epoch (over all "
                                          "processes); a split of fewer graphs is passed over again within "
                                          "the epoch (train.py)", low=1)
    layout_valid_configs: int = setting(256, "layout: configs per validation graph scored during training",
                                        low=1)
    layout_max_train_configs: int | None = setting(4096, "layout, with engineered_features: a training graph "
                                                   "with more distinct configs keeps a fixed random sample "
                                                   "of this many (none: all; data.py)", low=2)
    # tile training: several kernels per step
    tile_epochs: int = setting(20, "tile: passes over the training kernels", low=1)
    tile_graphs_per_step: int = setting(16, "tile: kernels per step", low=1)
    tile_configs_per_graph: int = setting(32, "tile: configs sampled per kernel per step", low=2)
    # how layout graphs are read, and Graph Segment Training
    pruning: str = setting(DEFAULT_PRUNING, "how layout graphs are pruned (tpugraphs solve --help lists the "
                           "names; --no-prune is none)", canonical=canonical_pruning,
                           grammar="a pruning name (none, onehop, khop:K, ...)")
    training: str = setting("full", "full, or gst: Graph Segment Training of layout graphs "
                            "(needs fusion=early)", choices=TRAINING_MODES)
    segment_size: int = setting(1000, "gst: most nodes in one segment (the GST paper's TpuGraphs setting)",
                                low=1)
    segments_per_step: int = setting(1, "gst: segments back-propagated per step", low=1)
    stale_dropout: float = setting(0.5, "gst: chance that a historical segment embedding is left out of "
                                   "a step", low=0, high=1, high_open=True)
    # how a fit runs
    predict_batch_nodes: int = setting(1 << 16, "node rows (configs x nodes) per prediction pass: "
                                       "bounds memory", low=1)
    num_threads: int | None = setting(1, "torch CPU threads during fit/predict (none: torch's default)",
                                      low=1)

    def __post_init__(self) -> None:
        check_settings(self)
        if self.heuristic_prior > 0 and not self.engineered_features:
            raise SettingError(f"setting heuristic_prior={self.heuristic_prior} reads the engineered "
                               f"heuristic_log_cost; add engineered_features=true or set heuristic_prior=0")
        if self.training == "gst" and self.layout_graphs_per_step not in (None, 1):
            raise SettingError(f"setting training=gst with layout_graphs_per_step="
                               f"{self.layout_graphs_per_step}: Graph Segment Training steps one layout "
                               f"graph at a time; add layout_graphs_per_step=1 or leave it unset")
        if self.training == "gst" and self.fusion != "early":
            raise SettingError(f"setting training=gst with fusion={self.fusion}: GST segments the "
                               f"per-config message passing of early fusion, and {self.fusion} fusion passes "
                               f"messages once per graph, with nothing to segment; add fusion=early")

    def layout_graphs(self) -> int:
        """Layout graphs per training step: ``layout_graphs_per_step``, or where it is unset
        ``LAYOUT_GRAPHS_PER_STEP`` for intermediate fusion (the graphs scored in one pass) and 1 for early
        fusion and Graph Segment Training (a graph at a time, as in 1.0)."""
        if self.layout_graphs_per_step is not None:
            return self.layout_graphs_per_step
        return LAYOUT_GRAPHS_PER_STEP if self.fusion == "intermediate" and self.training == "full" else 1

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def to_dict(self) -> dict:
        return asdict(self)


# Where a collection's best settings differ from the class defaults (docs/defaults.md says why, with
# the evidence: docs/gnn.md, "Starting from the heuristic" and "Averaged weights").
COLLECTION_DEFAULTS: dict[str, dict[str, object]] = {
    "layout:xla:random": {"heuristic_prior": 3.0, "average_epochs": 20.0},
}


def collection_defaults(collection: Collection) -> dict[str, object]:
    return COLLECTION_DEFAULTS.get(collection.name, {})


SETTINGS = MethodSettings("gnn", GNNConfig, collection_defaults)
