"""Which operand each layout vector of a configurable node describes (``layout_context``).

The released configs set only the two minor-most slots of a 4-D or 5-D convolution's tensors, so the
number of slots a vector sets is not its tensor's rank. Matching operands by that number alone found
none of the real U-Nets' convolution operands (0 of 53 in `unet3d`), and every input and kernel feature
of those nodes (padding, agreement with the producer) read as unknown.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_builders import layout_row, node_features
from real_protos import KAGGLE_TREE, LAYOUT_PROTO, needs_kaggle_tree, needs_realdata

from competition.data.graphs import LayoutGraph, load_graph
from competition.data.hlo import OPCODE_IDS
from competition.data.protos.featurize import featurize_file
from solutions.features.layout_geometry import layout_context

CONVOLUTION = OPCODE_IDS["convolution"]


def conv_graph(rows: list[list[int]], shapes: list[list[int]]) -> LayoutGraph:
    """Operands 0 and 1 (``shapes[0]``, ``shapes[1]``) -> convolution* 2 (``shapes[2]``) -> negate 3 ->
    tuple 4; plus an unused node 5 of ``shapes[3]`` when given. ``rows``: each config's 18 values."""
    nodes = [*shapes[:3], shapes[2], shapes[2], *shapes[3:]]
    opcodes = ["parameter", "parameter", "convolution", "negate", "tuple"] + ["parameter"] * len(shapes[3:])
    return LayoutGraph(
        node_feat=node_features(nodes, f32=True),
        node_opcode=np.array([OPCODE_IDS[o] for o in opcodes], np.uint8),
        edge_index=np.array([[2, 0], [2, 1], [3, 2], [4, 3]], np.int64),
        config_runtime=np.arange(1, len(rows) + 1, dtype=np.int64),
        node_config_feat=np.array(rows, np.float32)[:, None, :],
        node_config_ids=np.array([2], np.int64),
        node_splits=np.array([[0]], np.int64),
    )


ACTIVATION, WEIGHTS, OUTPUT = [2, 16, 16, 16, 4], [3, 3, 3, 4, 8], [2, 16, 16, 16, 8]


def test_a_5d_convolution_setting_two_slots_finds_both_operands():
    graph = conv_graph([layout_row([4, 3], [4, 0], [3, 4]), layout_row([3, 4], [0, 4], [4, 3])],
                       [ACTIVATION, WEIGHTS, OUTPUT])
    context = layout_context(graph)
    assert context.rank[0].tolist() == [2, 2, 2]
    np.testing.assert_array_equal(context.tensor_dims[0, 1, :5], ACTIVATION)
    np.testing.assert_array_equal(context.tensor_dims[0, 2, :5], WEIGHTS)
    np.testing.assert_array_equal(context.tensor_elements[0], [np.prod(OUTPUT), np.prod(ACTIVATION),
                                                               np.prod(WEIGHTS)])
    # the operands' own layouts, cropped to the two minor-most slots, are what the vectors should match
    assert context.expected[0, 1, :2].tolist() == [4, 3] and context.expected[0, 2, :2].tolist() == [4, 3]
    # two independent routes to the operands agree: the matrix unit's terms read the edges directly
    assert context.operand_elements[0] == np.prod(ACTIVATION) + np.prod(WEIGHTS)


@pytest.mark.parametrize(("shapes", "input_elements", "kernel_elements"), [
    # the input vector names dimension 3: only the 4-D operand holds it, although the 2-D one has the
    # vector's rank; the kernel vector (dimensions 0 and 1) takes the 2-D operand of exactly its rank
    ([[8, 4, 4, 4], [64, 32], [64, 32]], 8 * 4 * 4 * 4, 64 * 32),
    # no operand holds dimension 3: the input stays unknown (never a tensor too small for the vector);
    # the kernel vector, with no operand of its rank, takes the first larger one
    ([[8, 4, 4], [5, 6, 7], [64, 32]], 0, 8 * 4 * 4),
])
def test_an_operand_must_hold_every_dimension_the_vector_names(shapes, input_elements, kernel_elements):
    rows = [layout_row([1, 0], [3, 0], [1, 0]), layout_row([0, 1], [0, 3], [0, 1])]
    context = layout_context(conv_graph(rows, shapes))
    assert context.tensor_elements[0, 1] == input_elements
    assert context.tensor_elements[0, 2] == kernel_elements


@needs_realdata(LAYOUT_PROTO)
def test_every_convolution_of_the_shipped_proto_finds_both_operands():
    [(_, graph)] = featurize_file(LAYOUT_PROTO)
    context = layout_context(graph)
    conv = graph.node_opcode[graph.node_config_ids] == CONVOLUTION
    assert conv.sum() == 53
    # each set vector of each convolution has its tensor, and the two agree with the matrix unit's terms
    assert ((context.tensor_elements[conv] > 0) | (context.rank[conv] == 0)).all()
    both = context.tensor_elements[conv, 1] + context.tensor_elements[conv, 2]
    np.testing.assert_allclose(both, context.operand_elements[conv])


@needs_kaggle_tree
def test_the_real_unet3d_weight_gradient_reads_the_input_image_and_the_output_gradient():
    graph = load_graph(KAGGLE_TREE / "npz_all/npz/layout/xla/default/train/unet3d.npz")
    context = layout_context(graph)
    conv = graph.node_opcode[graph.node_config_ids] == CONVOLUTION
    assert conv.sum() == 53 and (context.tensor_elements[conv, 1:] > 0).all()
    # the first layer's weight gradient (node 35 among the configurable nodes): a [3, 3, 3, 1, 32]
    # reduction of the one-channel input image with the 32-channel gradient
    assert context.tensor_dims[35, 0, :5].tolist() == [3, 3, 3, 1, 32]
    assert context.tensor_dims[35, 1, :5].tolist() == [2, 128, 128, 128, 1]
    assert context.tensor_dims[35, 2, :5].tolist() == [2, 128, 128, 128, 32]
