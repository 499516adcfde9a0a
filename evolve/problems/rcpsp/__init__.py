"""Resource-constrained project scheduling (RCPSP) on PSPLIB.

Public API: read an instance, decode activity lists, search for a short
makespan, check a schedule, and benchmark on PSPLIB sets.
"""

from evolve.problems.rcpsp.bench import (
    BenchSummary,
    InstanceRecord,
    format_table,
    run_psplib_benchmark,
    summarise,
)
from evolve.problems.rcpsp.check import is_feasible, schedule_violations
from evolve.problems.rcpsp.decode import (
    FBI_SCHEDULES,
    forward_backward_improvement,
    makespan,
    parallel_sgs,
    parallel_sgs_batch,
    serial_sgs,
    serial_sgs_batch,
    serial_sgs_python,
)
from evolve.problems.rcpsp.instance import (
    PSPLIB_SETS,
    BestKnown,
    RcpspInstance,
    critical_path_bound,
    from_arrays,
    load_best_known,
    load_instance,
    psplib_dir,
    set_files,
)
from evolve.problems.rcpsp.search import GaParams, RcpspResult, solve

__all__ = [
    "FBI_SCHEDULES",
    "PSPLIB_SETS",
    "BenchSummary",
    "BestKnown",
    "GaParams",
    "InstanceRecord",
    "RcpspInstance",
    "RcpspResult",
    "critical_path_bound",
    "format_table",
    "forward_backward_improvement",
    "from_arrays",
    "is_feasible",
    "load_best_known",
    "load_instance",
    "makespan",
    "parallel_sgs",
    "parallel_sgs_batch",
    "psplib_dir",
    "run_psplib_benchmark",
    "schedule_violations",
    "serial_sgs",
    "serial_sgs_batch",
    "serial_sgs_python",
    "set_files",
    "solve",
    "summarise",
]
