"""The remote clients: the Kaggle download and the upstream mirror (``download``), Kaggle's API for
downloads and submissions (``kaggle_api``), and a leaderboard of the kit (``leaderboard_client``, the
standard library only)."""
