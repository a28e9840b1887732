"""The findings that change how far to trust a ranking, as the console, the report and
``summary.json`` (``warnings``, ``headline_notes``) give them: :mod:`.run_warnings` collects
them and orders the console's first few with their actions, :mod:`.headline_notes` explains
where the headline differs from the plain mean, :mod:`.judge_quality` flags judges whose
replies are degenerate (and leaves them out on request) from what :mod:`.judge_replies`
reads of each reply, and :mod:`.stale` counts the records a later regeneration made stale.
"""
