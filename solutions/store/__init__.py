"""Saved models: one folder per run, written all or nothing, and the one way a method's model is saved,
loaded and refused.
"""
