"""Moving a competition to Codabench: ``tpugraphs leaderboard export-codabench``.

- ``bundle``: the whole competition bundle (``competition.yaml`` version 2, pages, logo, the phases'
  reference data, the sample submission, the public data and a starting kit);
- ``program``: the scoring program the bundle's tasks run (the kit's scorer);
- ``backport``: the rule files rewritten for the Python 3.8 of Codabench's older images;
- ``check``: Codabench's rules for a bundle (its unpacker's, in the kit's words) and the kit's privacy
  rule, which every exported bundle passes before it is written;
"""

from leaderboard.codabench.bundle import DEFAULT_DOCKER_IMAGE, BundleError, HostRules, export_bundle

__all__ = ["DEFAULT_DOCKER_IMAGE", "BundleError", "HostRules", "export_bundle"]
