"""The parts :mod:`coeval.run.runner` composes into a run, one job per module: which phases run
and in which mode (:mod:`.ordering`), the calls and spend counted into ``meta.json``
(:mod:`.ledger`), the ``meta.json`` lifecycle (:mod:`.meta`), stopping on Ctrl-C
(:mod:`.signals`) and the tasks and teachers ingested into a run (:mod:`.ingested`)."""
