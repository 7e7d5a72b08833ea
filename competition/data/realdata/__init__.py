"""Two real tuning protos measured on TPUs, shipped with the kit (Apache-2.0; README.md here says where from).

``LAYOUT_PROTO`` is one layout graph (a 3D U-Net, 112 usable measured configs of a default-style
search); ``TILE_PROTO`` holds 15 tile kernels. Featurize them with ``competition.data.protos``
(``tpugraphs featurize``).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
LAYOUT_PROTO = HERE / "module_tuning_data_layout.pb"
TILE_PROTO = HERE / "op_tuning_data.pb"
