"""An example third-party CoEval plugin (see README.md): the ``length_ratio`` metric, the
``echo`` interface, the ``pairwise`` evaluator and the ``answer_lengths`` phase."""

__version__ = "0.1.0"
