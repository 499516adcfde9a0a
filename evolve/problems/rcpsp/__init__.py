"""Resource-constrained project scheduling (RCPSP) on PSPLIB.

The public API: read an instance, search for a short makespan, check a
schedule, benchmark on PSPLIB sets. The decoders, kernels and readers are
used from their own modules (``decode``, ``kernels``, ``instance``).
"""

from evolve.problems.rcpsp.bench import run_psplib_benchmark
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.instance import RcpspInstance, critical_path_bound, load_instance
from evolve.problems.rcpsp.search import BiPopulationGA, Crossover, GaParams, RcpspResult, solve

__all__ = [
    "BiPopulationGA",
    "Crossover",
    "GaParams",
    "RcpspInstance",
    "RcpspResult",
    "critical_path_bound",
    "load_instance",
    "run_psplib_benchmark",
    "schedule_violations",
    "solve",
]
