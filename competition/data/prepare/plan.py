"""The plan: which source graph goes to test (``plan_split``), and the stem and Public / Private usage
each held-out graph gets (``name_test_graphs``). The rules: ``competition.data.prepare``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS, Collection
from competition.data.synth.names import anonymous_stems

# Stream purposes (first key after the seed).
GROUPS_STREAM, STEMS_STREAM, USAGE_STREAM, CONFIGS_STREAM = range(1, 5)
COLLECTION_KEY = {c.name: i for i, c in enumerate(COLLECTIONS)}


class PrepareError(ValueError):
    """The source cannot be split as asked (e.g. one model family only); the message says what to change."""


@dataclass
class SourceGraph:
    """One labelled graph of the source tree and where the plan sends it."""

    collection: Collection
    split: str  # "train" or "valid" in the source
    path: Path
    relpath: str  # under the source npz/ folder, e.g. layout/xla/default/train/resnet50.4x4.fp16.npz
    num_configs: int
    family: str
    side: str = ""  # "train", "valid" (kept where it was), "test", or "dropped" (no configs, family in test)
    stem: str = ""  # the stem in the new competition
    usage: str = ""  # Public / Private, test graphs only
    configs: np.ndarray | None = None  # test graphs: source config indices in the new order

    @property
    def program(self) -> str:
        """What names the program across the default and random searches: the file stem."""
        return self.path.stem


def stream(seed: int, *key: int) -> np.random.Generator:
    """The random stream of one purpose (a ``*_STREAM``) and key: ``default_rng([seed, *key])``."""
    return np.random.default_rng([seed, *key])


def _split_unit(collection: Collection) -> str:
    """Collections split together: the two searches of a layout source share their programs."""
    return f"{collection.task_name}:{collection.source}" if collection.search else collection.name


_UNIT_KEY = {"tile:xla": 0, "layout:xla": 1, "layout:nlp": 2}


def plan_split(
    graphs: Sequence[SourceGraph], *, seed: int, test_share: float, group_by: str = "family"
) -> dict[str, list[str]]:
    """Set ``side`` of every graph ("test", or its source split); returns unit -> test group keys.

    Raises PrepareError when a collection would be left without a test graph or without a labelled one.
    """
    units: dict[str, list[SourceGraph]] = {}
    for graph in graphs:
        units.setdefault(_split_unit(graph.collection), []).append(graph)
    chosen: dict[str, list[str]] = {}
    for unit, members in units.items():
        groups: dict[str, list[SourceGraph]] = {}
        for graph in members:
            key = graph.family if group_by == "family" else graph.program
            groups.setdefault(key, []).append(graph)
        test = _choose_test_groups(unit, groups, seed=seed, test_share=test_share, group_by=group_by)
        for key, group in groups.items():
            for graph in group:
                if key not in test:
                    graph.side = graph.split
                else:
                    # A graph without configs cannot be scored; leaving it in train would leak its family.
                    graph.side = "test" if graph.num_configs else "dropped"
        chosen[unit] = sorted(test)
    return chosen


def _choose_test_groups(
    unit: str, groups: dict[str, list[SourceGraph]], *, seed: int, test_share: float, group_by: str
) -> set[str]:
    keys = sorted(groups)
    order = [keys[i] for i in stream(seed, GROUPS_STREAM, _UNIT_KEY.get(unit, 9)).permutation(len(keys))]
    # Graphs without configs cannot be scored: they never make a group a test candidate on their own.
    weight = {key: sum(1 for g in groups[key] if g.num_configs) for key in keys}
    total = sum(weight.values())
    target = max(1, round(test_share * total))
    test: set[str] = set()
    taken = 0
    for key in order:
        if weight[key] and taken + weight[key] <= target:
            test.add(key)
            taken += weight[key]
    collections = sorted({g.collection.name for group in groups.values() for g in group},
                         key=COLLECTION_KEY.get)

    def keys_of(name: str, *, scorable: bool = False) -> list[str]:
        return [key for key in keys
                if any(g.collection.name == name and (g.num_configs or not scorable) for g in groups[key])]

    for name in collections:  # every collection needs a test graph: add its smallest group
        if not set(keys_of(name, scorable=True)) & test:
            candidates = [key for key in order if key in set(keys_of(name, scorable=True))]
            if not candidates:
                raise PrepareError(f"{name}: no graph with configs to hold out as a test graph")
            test.add(min(candidates, key=weight.__getitem__))  # the first smallest, in shuffled order
    for name in collections:  # ... and a labelled graph to learn from (checked once every group is chosen)
        mine = keys_of(name)
        if set(mine) <= test:
            what = "model family" if group_by == "family" else "graph"
            shown = ", ".join(mine[:5]) + (", ..." if len(mine) > 5 else "")
            hint = ("use --group-by graph to split graphs of one family" if group_by == "family"
                    else "add labelled graphs")
            raise PrepareError(
                f"{name}: its graphs form {len(mine)} {what}{'' if len(mine) == 1 else 's'} ({shown}); "
                f"holding out a test set would leave no labelled graph: {hint}, or leave the collection "
                f"out with --collection")
    return test


def name_test_graphs(graphs: Sequence[SourceGraph], chosen: Sequence[Collection], seed: int) -> None:
    """Set ``stem`` of every kept graph and ``usage`` of every test graph.

    New stems and usages, per collection, in source order (stems are random: the order says nothing);
    train and valid graphs keep their own stems.
    """
    for collection in chosen:
        held_out = [g for g in graphs if g.collection is collection and g.side == "test"]
        stems = anonymous_stems(stream(seed, STEMS_STREAM, COLLECTION_KEY[collection.name]), len(held_out))
        by_stem = sorted(zip(stems, held_out, strict=True), key=lambda pair: pair[0])
        usage = _usage(stream(seed, USAGE_STREAM, COLLECTION_KEY[collection.name]), len(held_out))
        for (stem, graph), use in zip(by_stem, usage, strict=True):
            graph.stem, graph.usage = stem, use
    for graph in graphs:
        if graph.side in ("train", "valid"):
            graph.stem = graph.program


def _usage(rng: np.random.Generator, count: int) -> list[str]:
    """Public / Private for ``count`` test rows of a collection: half each (Public gets the odd one),
    shuffled."""
    labels = np.array(["Public"] * ((count + 1) // 2) + ["Private"] * (count // 2))
    return labels[rng.permutation(count)].tolist()
