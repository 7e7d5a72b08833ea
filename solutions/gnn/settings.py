"""The GNN's settings: one object (``GNNConfig``), one set of defaults, one schema (``solutions.settings``).

Every setting is declared once below with its type, default, allowed values and meaning; the
command line (``--param``, ``--list-params``), the models (``LayoutRanker.from_settings``,
``TileRanker.from_settings``), the training loop and the saved model (``gnn.json``) all read it
from here. ``COLLECTION_DEFAULTS`` lists where a collection starts from other values.

The defaults fit the ``make demo`` budget (2 CPU cores, ~4 min for all five collections of the small
embedded competition); raise ``*_epochs`` and ``hidden`` for real data.

``num_threads`` is 1 by default: the tensors of a pruned graph are small, and torch's thread pool
then costs more than it gives; on a shared 2-core machine two threads made a training epoch ~10x
slower than one. One thread also makes a CPU fit reproducible whatever the machine's core count.
Use ``none`` (torch's default) or more threads for unpruned or real-size graphs.

``pruning`` is the one holder of how layout graphs are pruned (``solutions.pruning``: ``none``,
``onehop``, ``khop:3``, ``merged:onehop``, ``khop:4+merged``, ...); ``--no-prune`` is
``--param pruning=none``. It starts as ``solutions.gnn.data.DEFAULT_PRUNING``, is kept in the
canonical spelling, and is saved with the model, which predicts with it whatever the default is later.

``training`` is ``full`` (every node of the sampled configs back-propagated) or ``gst`` (Graph
Segment Training of layout graphs, ``solutions.gnn.gst``). GST segments the per-config message
passing of early fusion, so ``training=gst`` needs ``fusion=early``; anything else is refused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from solutions.gnn import data as gnn_data
from solutions.pruning import PruningNameError, parse_pruning, pruning_setting
from solutions.settings import SettingError, check_settings, setting

LOSSES = ("hinge", "listmle")
FUSIONS = ("early", "intermediate")
TRAINING_MODES = ("full", "gst")


def canonical_pruning(text: str) -> str:
    """A pruning name in its canonical spelling (``khop:3:0`` -> ``khop:3``); ValueError saying why not."""
    try:
        return pruning_setting(parse_pruning(text))
    except PruningNameError as exc:  # keep the reason, drop the list of names (the schema row gives it)
        raise ValueError(str(exc).split(": ", 1)[-1].split("; valid names")[0]) from None


@dataclass
class GNNConfig:
    """Settings of the GNN method (see the module docstring); every field is checked when one is made."""

    hidden: int = setting(32, "width of every node state", low=1)
    layers: int = setting(3, "message-passing layers", low=1)
    dropout: float = setting(0.0, "dropout between message-passing layers", low=0, high=1, high_open=True)
    row_features: bool = setting(True, "layout: looked-up slot sizes and 'differs from the usual row' "
                                 "(model.py)")
    fusion: str = setting("intermediate", "layout: configs join before message passing (early) or after it "
                          "(intermediate; model.py)", choices=FUSIONS)
    config_layers: int = setting(1, "layout, intermediate fusion: layers mixing linked configurable nodes' "
                                 "rows", low=0)
    config_attention: bool = setting(True, "layout: configs of a graph attend to each other before the head")
    tied_links: bool = setting(False, "layout, intermediate fusion: also mix tied nodes' rows with their "
                               "group's first node")
    engineered_features: bool = setting(True, "layout: also read each config's engineered layout features "
                                        "(the gbdt's) as z-scores within its graph (model.py)")
    # Off: it helps small's xla default searches, and the real graphs not beyond the spread between
    # competitions (docs/gnn.md).
    work_pooling: bool = setting(False, "layout, intermediate fusion: average the configurable nodes' states "
                                 "weighted by each node's share of the graph's roofline time, not evenly "
                                 "(model.py)")
    # Off: it helps a model trained on the embedded competition rank real default searches, but costs
    # within real graphs and at full size, at twice the training (docs/gnn.md).
    learn_from_random_search: bool = setting(False, "layout, default search: also train on the random "
                                             "search's train graphs of the same source "
                                             "(solutions.method.with_random_search; docs/gnn.md)")
    heuristic_prior: float = setting(0.0, "layout, with engineered_features: add this times the config's "
                                     "heuristic_log_cost z-score to its score, so the network learns what "
                                     "to change in the heuristic's order (0: off; model.py)", low=0)
    heuristic_blend: bool = setting(False, "layout, with engineered_features: after training, rank by the "
                                    "network's scores blended with the heuristic's at the weight (0-4) the "
                                    "validation split scores best (0 keeps the network's; "
                                    "solutions.heuristic_blend)")
    max_train_configs: int | None = setting(4096, "layout, with engineered_features: a training graph "
                                            "with more distinct configs keeps a fixed random sample of "
                                            "this many (none: all; data.py)", low=2)
    tile_geometry: bool = setting(True, "tile: also read the engineered tiling facts of each config "
                                  "(data.py)")
    lr: float = setting(5e-3, "AdamW learning rate, cosine decay to lr / 10 over the planned steps (0: no "
                        "update, for tests)", low=0)
    weight_decay: float = setting(1e-4, "AdamW weight decay", low=0)
    loss: str = setting("hinge", "ranking loss (train.py's docstring; docs/gnn.md says why hinge)",
                        choices=LOSSES)
    margin: float = setting(0.1, "hinge margin, in score units", low=0)
    layout_epochs: int = setting(45, "passes over the training graphs", low=1)
    tile_epochs: int = setting(20, "passes over the training kernels (tile:xla)", low=1)
    configs_per_graph: int = setting(32, "layout: configs sampled per step (one graph per step)", low=2)
    min_epoch_steps: int = setting(8, "layout: fewest graph steps in an epoch (over all processes); a split "
                                   "of fewer graphs is passed over again within the epoch (one real graph's "
                                   "configs: train.py)", low=1)
    tile_graphs_per_step: int = setting(16, "tile: kernels per step", low=1)
    tile_configs_per_graph: int = setting(32, "tile: configs sampled per kernel per step", low=2)
    eval_every: int = setting(2, "epochs between validation scores", low=1)
    average_epochs: float = setting(0.0, "select and keep an exponential moving average of the weights over "
                                    "about this many epochs instead of the weights themselves (0: off; "
                                    "train.py)", low=0)
    patience: int | None = setting(None, "stop after this many evaluations without improvement (none: never)",
                                   low=1)
    valid_configs: int = setting(256, "layout: configs per validation graph scored during training", low=1)
    predict_batch_nodes: int = setting(1 << 16, "node rows (configs x nodes) per prediction pass: "
                                       "bounds memory", low=1)
    num_threads: int | None = setting(1, "torch CPU threads during fit/predict (none: torch's default)",
                                      low=1)
    pruning: str = setting(meaning="how layout graphs are pruned (tpugraphs solve --help lists the names; "
                           "--no-prune is none)", default_factory=lambda: gnn_data.DEFAULT_PRUNING,
                           canonical=canonical_pruning, grammar="a pruning name (none, onehop, khop:K, ...)")
    training: str = setting("full", "full, or gst: Graph Segment Training of layout graphs "
                            "(needs fusion=early)", choices=TRAINING_MODES)
    segment_size: int = setting(1000, "gst: most nodes in one segment (the GST paper's TpuGraphs setting)",
                                low=1)
    segments_per_step: int = setting(1, "gst: segments back-propagated per step", low=1)
    stale_dropout: float = setting(0.5, "gst: chance that a historical segment embedding is left out of "
                                   "a step", low=0, high=1, high_open=True)

    def __post_init__(self) -> None:
        check_settings(self)
        if self.heuristic_prior > 0 and not self.engineered_features:
            raise SettingError(f"setting heuristic_prior={self.heuristic_prior} reads the engineered "
                               f"heuristic_log_cost; add engineered_features=true or set heuristic_prior=0")
        if self.heuristic_blend and not self.engineered_features:
            raise SettingError("setting heuristic_blend=true reads the engineered heuristic_log_cost; add "
                               "engineered_features=true or set heuristic_blend=false")
        if self.work_pooling and self.fusion != "intermediate":
            raise SettingError(f"setting work_pooling=true weighs the configurable nodes that intermediate "
                               f"fusion pools, and fusion={self.fusion} pools every node; add "
                               f"fusion=intermediate or set work_pooling=false")
        if self.training == "gst" and self.fusion != "early":
            raise SettingError(f"setting training=gst with fusion={self.fusion}: GST segments the "
                               f"per-config message passing of early fusion, and {self.fusion} fusion passes "
                               f"messages once per graph, with nothing to segment; add fusion=early")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def for_collection(cls, name: str, **overrides: object) -> GNNConfig:
        """The settings a collection starts from (``COLLECTION_DEFAULTS`` on top of the class defaults),
        with ``overrides`` (what ``--param`` gave) on top of those; a collection default the overrides
        rule out is left out, the others kept."""
        defaults = COLLECTION_DEFAULTS.get(name, {})
        try:
            return cls(**{**defaults, **overrides})
        except SettingError:
            if not defaults:
                raise
        # A collection default gives way where the person's own settings rule it out (heuristic_prior
        # reads the engineered features that engineered_features=false turns off): a --param always
        # wins. The defaults that still fit are kept, one by one; an error left after that is the
        # person's own.
        kept: dict[str, object] = {}
        for key, value in defaults.items():
            try:
                cls(**{**kept, key: value, **overrides})
            except SettingError:
                continue
            kept[key] = value
        return cls(**{**kept, **overrides})

    def to_dict(self) -> dict:
        return asdict(self)


# Where a collection's best settings differ from the class defaults, checked on the embedded competition
# and on real graphs (docs/gnn.md, "How the defaults were chosen"). ``GNNRanker`` starts each collection
# from ``GNNConfig.for_collection``; a ``--param`` always wins, and a default the person's settings rule
# out gives way. layout:xla:random starts from the heuristic's order: trained on the embedded competition
# it ranks the real random search +0.09 better (five competitions, intervals above zero) and trained
# within that real graph +0.01; the embedded competitions lean the other way, by less (`small`
# validation -0.005, full size -0.01 to -0.02), and the real check wins (docs/gnn.md, "Starting from
# the heuristic"). On layout:xla:default it costs within the real `unet_3d` default search and, on
# generator version 6, in transfer on `unet3d`; the nlp collections have no real labels, and it cost on
# their embedded validation splits. With the prior, selection on the live weights swung by 0.1-0.15
# between evaluations and sometimes kept the untrained network; an average of the weights over about
# 20 epochs ranks the real random search better in all three real protocols (transfer +0.06, within
# +0.01, across programs +0.08) and `small`'s and the full-size hidden tests too, while their
# validation splits lean the other way by 0.01-0.02; what pays is the average's nearness to the first
# steps more than its smoothing, and on the default searches it did not help (docs/gnn.md, "Averaged
# weights").
COLLECTION_DEFAULTS: dict[str, dict[str, object]] = {
    "layout:xla:random": {"heuristic_prior": 3.0, "average_epochs": 20.0},
}
