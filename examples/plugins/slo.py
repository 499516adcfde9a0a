"""A fitness plugin as a plain module, used by its import path::

    evolve run examples/refund.yaml --fitness validity --fitness completeness \\
        --fitness examples.plugins.slo:approval_wait

Any importable module works the same way (the current directory is searched
too). The function reuses the schedule the engine has already simulated, from
the context, rather than simulating the plan again.
"""

from __future__ import annotations

from evolve import Plan, Problem
from fitness import Context, fitness


@fitness(direction="min", low=0)
def approval_wait(problem: Problem, plan: Plan, context: Context) -> float:
    """Time the critical path spends in approval tasks: what the customer waits on sign-off."""
    # Only the critical path counts: an approval running in parallel with
    # slower work delays nobody, and a plan that moves it there should win.
    sched = context.schedule
    tasks = plan.by_id()
    waited = 0.0
    for tid in sched.critical_path:
        tool = problem.tools.get(tasks[tid].tool)
        if tool is not None and tool.risk == "approval":
            waited += sched.finish[tid] - sched.start[tid]
    return waited
