"""What people look at after a run: the HTML report, plots and the terminal Gantt chart.

``write_report(run_dir)`` is the entry point ``evolve run`` calls at the end of a
run, ``write_execution_report(run_dir)`` the one ``evolve execute`` calls;
``evolve.cli.report`` holds the ``report``, ``plot`` and ``show`` commands.
matplotlib is imported only by :func:`save_plot`, when a plot is asked for.
"""

from evolve.report.data import CandidateRecord, GenerationRecord, Run, RunError, load_run
from evolve.report.execution import render_execution, write_execution_report
from evolve.report.execution_data import Execution, ExecutionReportError, load_execution
from evolve.report.history import final_population, lineage
from evolve.report.html import REPORT_NAME, render, write_report
from evolve.report.plots import PlotError, save_plot
from evolve.report.terminal import text_gantt
from evolve.report.timeline import Bar, Timeline, Usage, timeline_of

__all__ = [
    "REPORT_NAME",
    "Bar",
    "CandidateRecord",
    "Execution",
    "ExecutionReportError",
    "GenerationRecord",
    "PlotError",
    "Run",
    "RunError",
    "Timeline",
    "Usage",
    "final_population",
    "lineage",
    "load_execution",
    "load_run",
    "render",
    "render_execution",
    "save_plot",
    "text_gantt",
    "timeline_of",
    "write_execution_report",
    "write_report",
]
