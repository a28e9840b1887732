"""Writing analysis output safely: :mod:`.staged` puts an analysis's output folder in place
whole or not at all, :mod:`.leftovers` removes what a killed ``analyze`` or viewer build
left behind, and :mod:`.csv_safety` neutralises the CSV cells a spreadsheet would run as a
formula (``coeval analyze``'s tables, ``coeval export``, ``coeval label --export``).
"""
