"""Reports: figures of verdicts and success probabilities, and multi-page PDF reports."""
from .figures import plot_from_spec, success_probability_figure
from .pdf import build_report

__all__ = ["build_report", "plot_from_spec", "success_probability_figure"]
