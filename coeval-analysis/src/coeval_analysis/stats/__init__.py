"""The statistics of the analysis, as functions over numpy arrays (see analysis.py for the order)."""
