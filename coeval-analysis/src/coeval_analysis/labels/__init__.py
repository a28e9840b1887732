"""Labels: the levels people give answers, and the gold labels of label tasks.
:mod:`.human_labels` reads and writes the run folder's ``human_labels.jsonl``, :mod:`.units`
says what can be labelled and moves labels in and out as CSV (``coeval label``, in
:mod:`.cli`), :mod:`.suggestions` picks the answer whose label would settle most,
:mod:`.reference_judge` makes labels and gold one judge of known scale and measures each
model judge against it, and :mod:`.exact_match` reads labels out of answers and scores them
against their gold labels (precision, recall and F1 per label).
"""
