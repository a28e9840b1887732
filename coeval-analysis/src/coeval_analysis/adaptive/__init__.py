"""Adaptive evaluation: spending phase 5's calls only where they can change the answer."""

from coeval_analysis.adaptive.screening import JudgeScreen, Screening, agreement, screen_judges

__all__ = ["JudgeScreen", "Screening", "agreement", "screen_judges"]
