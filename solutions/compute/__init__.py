"""Where training runs: torch-scatter's fast paths (``accel``) and torch.distributed (``distributed``).
"""
