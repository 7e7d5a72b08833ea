"""``tpugraphs rank``: read a program, gather candidate configs, rank them with a saved model and say what
each changes.
"""
