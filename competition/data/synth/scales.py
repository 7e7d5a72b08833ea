"""How big the embedded competition is: the ``SCALES`` table.

``tiny`` is for tests (seconds, a few MB); ``small`` is for the demo and for training the reference
solutions (under a minute on two cores, enough graphs and configurations for a model to learn and for
validation scores to mean something); ``full`` is a rehearsal at the size of the real release (the real
graph counts of every collection and split, and a few programs at the real size extremes: tens of
minutes on two cores, several GB on disk). Ranges are ``(low, high)`` and are drawn log-uniformly per
graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from competition.collections import SPLITS


@dataclass(frozen=True)
class Extreme:
    """A layout program made at the size of one of the real data's extremes instead of a drawn size.

    It replaces the program of its ``(source, split)`` picked by ``families``: the first program of
    the split (in generation order) whose model family is one of them and that no earlier extreme
    took; any family when empty. Picking by family keeps the choice deterministic from the seed and
    lets a node-count extreme go to a family that grows without limit (transformers stop at a
    multiple of their layer count).
    """

    source: str  # "xla" or "nlp"
    split: str  # "train" or "valid" (test programs keep the test config count)
    nodes: int | None = None  # node budget instead of a draw (training steps come out a little larger)
    configurable_share: float | None = None  # the most configurable nodes per node, instead of a draw
    configs: int | None = None  # configurations requested in each search (random search: exactly these)
    families: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scale:
    """Sizes of one scale of the embedded competition."""

    name: str
    tile_graphs: tuple[int, int, int]  # kernels in train, valid, test
    tile_nodes: tuple[int, int]  # nodes per kernel
    tile_configs: tuple[int, int]  # configurations per kernel (fewer when a kernel has fewer)
    xla_graphs: tuple[int, int, int]  # programs per layout:xla collection, train/valid/test
    nlp_graphs: tuple[int, int, int]  # programs per layout:nlp collection
    layout_nodes: tuple[int, int]  # node budget per program (training steps come out larger)
    layout_configs: tuple[int, int]  # configurations per train/valid program
    layout_test_configs: int  # configurations per test program (1000 in the real test set)
    # nlp ranges when they differ from the xla ones (None: the same).
    nlp_layout_nodes: tuple[int, int] | None = None
    nlp_layout_configs: tuple[int, int] | None = None
    # Collections whose search covers fewer programs than its source generates, as (collection,
    # (train, valid, test)): the search gets the first programs of each split. The two searches of a
    # source share their programs, so the source generates the larger count of each split.
    search_graphs: tuple[tuple[str, tuple[int, int, int]], ...] = ()
    extremes: tuple[Extreme, ...] = ()

    def layout_graphs(self, source: str) -> tuple[int, int, int]:
        """Programs the source generates per split (the larger of its two searches)."""
        return self.xla_graphs if source == "xla" else self.nlp_graphs

    def collection_graphs(self, collection: str) -> tuple[int, int, int]:
        """Programs of one layout collection per split (the first ones of its source)."""
        counts = dict(self.search_graphs).get(collection)
        return counts if counts is not None else self.layout_graphs(collection.split(":")[1])

    def nodes_range(self, source: str) -> tuple[int, int]:
        return self.nlp_layout_nodes if source == "nlp" and self.nlp_layout_nodes else self.layout_nodes

    def configs_range(self, source: str) -> tuple[int, int]:
        return self.nlp_layout_configs if source == "nlp" and self.nlp_layout_configs else self.layout_configs

    def __post_init__(self) -> None:
        for collection, counts in self.search_graphs:
            source = collection.split(":")[1]
            if any(c > s for c, s in zip(counts, self.layout_graphs(source), strict=True)):
                raise ValueError(f"{self.name}: {collection} has more programs than {source} generates")
        for extreme in self.extremes:
            if extreme.source not in ("xla", "nlp") or extreme.split not in SPLITS[:2]:
                raise ValueError(f"{self.name}: an extreme must be an xla or nlp train or valid program, "
                                 f"got {extreme.source} {extreme.split}")


SCALES: dict[str, Scale] = {
    "tiny": Scale(
        name="tiny",
        tile_graphs=(6, 3, 4),
        tile_nodes=(4, 30),
        tile_configs=(2, 24),
        xla_graphs=(3, 2, 2),
        nlp_graphs=(3, 2, 2),
        layout_nodes=(60, 200),
        layout_configs=(10, 40),
        layout_test_configs=30,
    ),
    "small": Scale(
        name="small",
        tile_graphs=(400, 60, 80),
        tile_nodes=(4, 150),
        tile_configs=(20, 500),
        xla_graphs=(30, 8, 8),
        nlp_graphs=(40, 8, 8),
        layout_nodes=(100, 1500),
        layout_configs=(200, 2000),
        layout_test_configs=1000,
    ),
    # The real release's counts (tile 5,709 / 676 / 844 kernels; layout xla default 61 / 7 / 8 and
    # random 69 / 7 / 8 programs, nlp default 198 / 20 / 17 and random 207 / 20 / 17) and its
    # published extremes: an xla training step of ~43,600 nodes with ~2,250 configurable nodes
    # measured 20,000 times, nlp files of 100,040 configurations of ~120 configurable nodes (two
    # training, one valid). Sizes between the extremes are not published; the ranges below are
    # assumptions (docs/synthetic-data.md).
    "full": Scale(
        name="full",
        tile_graphs=(5709, 676, 844),
        tile_nodes=(4, 600),
        tile_configs=(2, 10_000),
        xla_graphs=(69, 7, 8),
        nlp_graphs=(207, 20, 17),
        layout_nodes=(1_000, 20_000),
        layout_configs=(1_000, 20_000),
        layout_test_configs=1000,
        nlp_layout_nodes=(1_000, 8_000),
        nlp_layout_configs=(1_000, 20_000),
        search_graphs=(("layout:xla:default", (61, 7, 8)), ("layout:nlp:default", (198, 20, 17))),
        extremes=(
            Extreme("xla", "train", nodes=43_600, configurable_share=0.052, configs=20_000,
                    families=("cnn", "cnn3d", "mlp")),
            Extreme("nlp", "train", nodes=3_000, configurable_share=0.04, configs=100_040),
            Extreme("nlp", "train", nodes=3_000, configurable_share=0.04, configs=100_040),
            Extreme("nlp", "valid", nodes=3_000, configurable_share=0.04, configs=100_040),
        ),
    ),
}
