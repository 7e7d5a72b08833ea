"""The layout kind's adapter: whole programs with one 18-d config per configurable node.

Features: the layout rows of the configurable nodes (``solutions.features.layout``) and the nodes' graph
facts; the heuristic's rule 3 (a roofline over the configurable convolutions and dots, and the copies of
reshapes that are no bitcast: ``solutions.methods.heuristic`` says why); the gnn's network per
configurable node; ``rank``'s layout space (``layout_space``) and samples (``layout_sampling``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from competition.data.graphs import Graph
from competition.tasks import LAYOUT
from solutions.features.dedup import pack_layout_vector_codes
from solutions.features.graph_facts import LAYOUT_FACTS
from solutions.features.layout import layout_feature_names, layout_features
from solutions.features.layout_geometry import layout_context, layout_geometry
from solutions.features.shapes import config_chunks
from solutions.kinds import CONFIGS_PER_NODE, Kind, register
from solutions.kinds.layout_sampling import sample_layout_configs
from solutions.kinds.layout_space import SLOTS, TENSORS, space_of_graph, space_of_module
from solutions.kinds.program import Program, modal_setting


def layout_cost(graph: Graph) -> np.ndarray:
    """(c,) estimated cost of each layout config (multiply-add times, rule 3), lower = faster."""
    context = layout_context(graph)
    feat = graph.node_config_feat
    parts = [layout_geometry(feat[part], context).cost() for part in config_chunks(*feat.shape[:2])]
    return np.concatenate(parts) if parts else np.zeros(0)


class LayoutKind(Kind):
    task = LAYOUT
    configs = "layout rows of the configurable nodes"
    graph_facts = LAYOUT_FACTS
    gnn_family = CONFIGS_PER_NODE

    def config_feature_names(self) -> list[str]:
        return layout_feature_names()

    def config_features(self, graph: Graph, configs: np.ndarray | None = None) -> np.ndarray:
        return layout_features(graph, configs=configs)

    def config_keys(self, graph: Graph) -> np.ndarray:
        """(c, nc) int64 row codes, packed a chunk of configs at a time, so a memory-mapped cached graph is
        never read whole (the same groups as de-duplicating the (c, nc, 18) tensor itself)."""
        return pack_layout_vector_codes(graph.configs)

    def heuristic_cost(self, graph: Graph) -> np.ndarray:
        return layout_cost(graph)

    collection = "layout:xla:random"  # the search whose configs spread most, like a sample's
    noun = "layout program"
    candidate_options = "--sample N (drawn from its layout space) or --configs FILE"

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        from competition.data.protos.layout import default_layout, featurize_layout

        graph = featurize_layout(tuning)
        return Program(path, graph, default_layout(tuning), "ModuleTuningData",
                       space=space_of_module(tuning["module"], graph.node_config_ids))

    def from_module(self, path: Path, module: dict, message: str) -> Program:
        from competition.data.protos.layout import module_layout_graph

        graph = module_layout_graph(module, where=message)
        return Program(path, graph, None, message, space=space_of_module(module, graph.node_config_ids))

    def from_graph(self, path: Path, graph: Graph) -> Program:
        return Program(path, graph, None, "npz", space=space_of_graph(graph))

    def nodes_note(self, program: Program) -> str:
        rule = "its config_index_to_node" if program.form == "ModuleTuningData" else \
            "its convolutions, dots and reshapes" if program.form != "npz" else "its node_config_ids"
        return f", {program.graph.num_configurable_nodes:,} configurable nodes ({rule})"

    def problem(self, values: np.ndarray, program: Program) -> str | None:
        assert program.space is not None
        return program.space.problem(values)

    def changes(self, config: np.ndarray, reference: np.ndarray, program: Program) -> list[dict]:
        """Per configurable node and tensor, the layout that differs from ``reference``, with the source
        location of the node's instruction."""
        assert program.space is not None
        units = (len(config), len(TENSORS), SLOTS)
        new, old = config.reshape(units), reference.reshape(units)
        return [program.space.change(j, t, _dims(old[j, t]), _dims(new[j, t]))
                for j, t in program.space.units(config, reference)]

    def single_changes(self, config: np.ndarray, reference: np.ndarray,
                       program: Program) -> list[tuple[dict, np.ndarray]]:
        """Each change of ``config`` (one tensor's layout) applied alone to ``reference``: ``(change, that
        config)`` per change, in ``changes`` order (``rank --explain``)."""
        assert program.space is not None
        space = program.space
        return [(change, space.apply(reference, config, [unit]))
                for change, unit in zip(self.changes(config, reference, program),
                                        space.units(config, reference), strict=True)]

    def with_changes(self, config: np.ndarray, reference: np.ndarray, program: Program,
                     chosen: list[int]) -> np.ndarray:
        """``reference`` with the changes of ``config`` at positions ``chosen`` of ``changes``' list."""
        assert program.space is not None
        units = program.space.units(config, reference)
        return program.space.apply(reference, config, [units[i] for i in chosen])

    def modal(self, configs: np.ndarray) -> np.ndarray:
        return modal_setting(configs)

    def sample_menus(self, configs: np.ndarray, count: int, seed: int) -> np.ndarray:
        return sample_layout_configs(configs, count, seed=seed)

    def sample_space(self, program: Program, count: int, seed: int) -> np.ndarray:
        assert program.space is not None
        return program.space.sample(count, seed=seed)


def _dims(values: np.ndarray) -> list[int]:
    return [int(v) for v in values if v >= 0]


LAYOUT_KIND = register(LayoutKind())
