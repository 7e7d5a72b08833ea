"""One module per ``tpugraphs`` subcommand (``register(subparsers)``); competition/cli.py has the contract.

The modules without ``register`` are what the commands share: ``arguments`` (argument types and input-file
checks), ``json_problems`` (what ``--json`` prints on failure) and ``extras`` (which pyproject extra provides
an import), also used by the optional parts' commands and the tests; ``_partial`` (``validate`` and
``score``'s ``--collection``) and ``_statistics`` (``report``, ``compare``, ``shakeup``, ``ensemble``) are
private to this package.
"""
