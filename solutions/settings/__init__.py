"""Settings of the methods: declared once (type, default, range, meaning), parsed from ``--param`` and
listed by ``--list-params``.
"""
