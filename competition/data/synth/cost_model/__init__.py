"""The hidden runtime model of the embedded competition. NO SOLUTION MAY IMPORT THIS PACKAGE.

Reference solutions, notebooks and benchmarks must learn runtimes from the released arrays, exactly
as on Kaggle; reading it would be reading the answer key. ``tests/test_synth.py`` fails if
anything under ``solutions/``, ``notebooks/`` or ``benchmarks/`` imports it.

The model is a small roofline simulator of a TPU-like chip (``chip``: its constants, padding and
measurement noise); ``tile_cost`` times kernels, ``layout_cost`` programs. Runtimes depend on
the graph and on the configuration in ways a model can learn from the features:

Tile (one fused kernel, one output tiling per config)
    - compute over the padded tiles: a tile is padded to whole (8, 128) vreg tiles in its two minor
      dimensions, and tiles that do not divide the output compute their boundary padding too;
    - memory traffic: inputs re-read per tile (dot operands, convolution halo and weights, reduction
      inputs), DMA efficiency of the minor dimension (rows shorter than 512 bytes are slow);
    - per-tile overhead (too many small tiles), VMEM spills (too large tiles), partial-sum passes
      when a convolution's input-feature tile is smaller than its input features.
Layout (a whole program, one layout per configurable node per config)
    - a setting that fixes only the minor-most slots is completed with the other dimensions in their
      compiled order (all -1: the compiled layout);
    - each program draws its own layout physics (``LayoutPhysics``, version 3): how much a node's own
      layouts cost, what a copy between neighbours costs, how steeply padding slows a node, whether
      the row-major order is preferred beyond its padding. The draws make a node's own (8, 128)
      padding the main cause of a slow config and agreement with neighbours a smaller, program-
      dependent one, as in the real graphs (docs/synthetic-data.md, "What real runtimes teach");
    - each configurable node's own time depends on how well its layouts fit the (8, 128) tiles; a
      convolution or dot reads its operands in whatever layout they arrive in, so only its output's
      setting counts (version 4, as in the real graphs with runtimes); a reshape is a bitcast when
      both its layouts are row-major, a copy otherwise;
    - neighbours agree or pay: a configurable node's configured input/kernel is compared with the
      output of the configurable node that produces it (followed back through layout-following
      elementwise ops), and a tensor read by several configurable nodes is compared across its
      readers; a disagreement costs a layout copy and part of the fusion (the consumer slows down);
    - layouts are pinned only at interfaces (parameters, loop state, tuples, transposes, gathers,
      other dots and convolutions): a configured layout differing from a pinned neighbour is a copy,
      cheap because XLA's layout assignment usually adapts the neighbour instead;
    - the fixed cost of every other node of the program (flops and bytes from the shapes).
Both: int64 nanoseconds, times a multiplicative log-normal measurement noise.
"""
