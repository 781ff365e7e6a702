"""What a run leaves to explain itself: artifacts folders, the placement picture, per-pod timings, figures."""

from schedgate.report.figures import Report, figures_of

__all__ = ["Report", "figures_of"]
