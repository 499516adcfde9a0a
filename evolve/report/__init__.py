"""What people look at after a run: the HTML report, plots and the terminal Gantt chart.

``write_report(run_dir)`` is the entry point ``evolve run`` calls at the end of a
run; ``evolve.cli.report`` holds the ``report``, ``plot`` and ``show`` commands.
matplotlib is imported only by :func:`save_plot`, when a plot is asked for.
"""

from evolve.report.data import CandidateRecord, GenerationRecord, Run, RunError, load_run
from evolve.report.history import final_population, lineage
from evolve.report.html import REPORT_NAME, render, write_report
from evolve.report.plots import PlotError, save_plot
from evolve.report.terminal import text_gantt
from evolve.report.timeline import Bar, Timeline, Usage, timeline_of

__all__ = [
    "REPORT_NAME",
    "Bar",
    "CandidateRecord",
    "GenerationRecord",
    "PlotError",
    "Run",
    "RunError",
    "Timeline",
    "Usage",
    "final_population",
    "lineage",
    "load_run",
    "render",
    "save_plot",
    "text_gantt",
    "timeline_of",
    "write_report",
]
