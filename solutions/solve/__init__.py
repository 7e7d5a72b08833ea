"""``tpugraphs solve``: check the arguments, fit each collection, select, predict, write the submission and
report it.
"""
