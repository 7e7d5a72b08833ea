"""The embedded synthetic competition: TpuGraphs-shaped data with a hidden runtime model.

``generate_competition(out_dir, scale=..., seed=...)`` writes ``out_dir/public`` (exactly the Kaggle
download tree: ``sample_submission.csv`` and ``npz_all/npz/...``) and ``out_dir/private/solution.csv``
(the labels of the test graphs). Everything later in the kit is measured on this data.

Modules: ``hlo_encoding`` (the node-feature and tile-config encoders), ``graphs`` (the HLO-like IR),
``models`` and ``kernels`` (layout programs and tile kernels), ``tile`` and ``layout`` (configurations
and measured runs), ``cost_model`` (the hidden runtime model: solutions must never import it),
``writer`` (byte-reproducible files), ``scales`` (``SCALES``), ``names`` (model specs and stems),
``generate`` (the whole competition). ``competition.data.description`` holds a generated tree against
the real data. See docs/synthetic-data.md.
"""

from competition.data.synth.generate import GENERATOR_VERSION, SynthSummary, generate_competition
from competition.data.synth.scales import SCALES, Scale

__all__ = ["GENERATOR_VERSION", "SCALES", "Scale", "SynthSummary", "generate_competition"]
