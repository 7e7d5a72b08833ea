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
      layouts cost, how steeply padding slows a node, whether the row-major order is preferred beyond
      its padding, what a reshape that is not a bitcast costs;
    - each configurable node's own time depends on how well its layouts fit the (8, 128) tiles; a
      convolution or dot reads its operands in whatever layout they arrive in, so only its output's
      setting counts (version 4, as in the real graphs with runtimes); a reshape is a bitcast when
      both its layouts are row-major, a copy otherwise;
    - a setting costs through the tensor it sets and nothing else: neighbours whose layouts disagree
      pay no copy (version 5; versions 2-4 charged one, and a broken fusion). In the real graphs with
      runtimes an additive model of the tensor settings fits the runtimes exactly, and a rule that
      charges a disagreement ranks every one of them worse than without that charge
      (docs/journal/2026-11-27-what-real-runtimes-teach.md, "Version 5: no charge between neighbours");
    - the fixed cost of every other node of the program (flops and bytes from the shapes).
Both: int64 nanoseconds, times a multiplicative log-normal measurement noise.
"""
