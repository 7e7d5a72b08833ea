"""Measured performance of the kit; figures go to BENCHMARKS.md (ratios against a baseline run alongside)."""
