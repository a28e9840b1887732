"""The datapoints teachers wrote, as the summary and the tables report them:
:mod:`.rejected_replies` adds the replies the item-quality gate turned away to each
teacher's entry, :mod:`.teacher_diversity` measures how alike a teacher's accepted prompts
are, and :mod:`.tables` makes the per-datapoint, per-response and per-label tables of an
analysis (each datapoint's students, mean score, weight and discrimination).
"""
