"""Reading a run folder (ours or the earlier CoEval's) into a
:class:`~coeval_analysis.loading.run_data.RunData`: :mod:`.loader` reads the three record
phases once (:mod:`.jsonl` parses the JSONL files through DuckDB, :mod:`.vocabulary` turns
strings into shared integer codes), :mod:`.record_tables`, :mod:`.columns` and
:mod:`.score_units` make tidy tables of the records, :mod:`.run_files` reads the small files
beside them (``meta.json``, the config snapshot, rubrics), :mod:`.left_out` leaves out what
the config snapshot no longer holds, and :mod:`.reply_flags` works out what each judge reply
says while phase 5 is read. Every rule a record is kept or dropped by is counted in
:class:`~coeval_analysis.loading.run_data.DataQuality`.
"""
