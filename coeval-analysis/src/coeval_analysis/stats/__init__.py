"""The statistics of the analysis, as functions over numpy arrays (see analysis.py for the
order): judge agreement, the bootstrap, student comparisons, the measurement model that
gives each judge a scale, a leniency and a weight, diagnostics, and :mod:`.scenarios`, the
synthetic judgments with known truth the estimators are measured on.
"""
