"""The headline ranking of a run's students, and what goes into it. :mod:`.headline` ranks
them with conflict-aware judge weights, intervals, comparisons and per-student missing
data; :mod:`.factor_plan` says what each rubric factor is and what it counts for,
:mod:`.headline_parts` combines the judged score with the plain rates per task,
:mod:`.pass_rates` measures the checks' and code tests' pass rates, and :mod:`.families`
says which judgments are conflicts of interest. The estimators they call are in
:mod:`coeval_analysis.stats`.
"""
