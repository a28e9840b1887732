"""Adaptive evaluation: spending phase 5's calls only where they can change the answer.

:mod:`~coeval_analysis.adaptive.screening` stops judges that tell answers apart too little,
:mod:`~coeval_analysis.adaptive.stopping` says when a design's question is answered,
:mod:`~coeval_analysis.adaptive.contrasts` is the ranking refit at every look,
:mod:`~coeval_analysis.adaptive.weights` how much each judge and teacher counts in it,
:mod:`~coeval_analysis.adaptive.refit` the ranking reported where the design stops, and
:mod:`~coeval_analysis.adaptive.design` plays a design over a grid drawn in advance.
"""

from coeval_analysis.adaptive.design import Design, Outcome, play
from coeval_analysis.adaptive.screening import JudgeScreen, Screening, agreement, screen_judges
from coeval_analysis.adaptive.stopping import StopRule, parse_stop_rule

__all__ = ["Design", "JudgeScreen", "Outcome", "Screening", "StopRule", "agreement", "parse_stop_rule", "play",
           "screen_judges"]
