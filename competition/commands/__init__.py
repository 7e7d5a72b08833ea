"""One module per ``tpugraphs`` subcommand; see competition/cli.py for the contract."""
