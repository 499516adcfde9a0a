"""Every default of evolve, in one place: the options, the API and the help texts all read these.

The module imports nothing from evolve, so every layer may read it.
"""

from __future__ import annotations

from typing import Final, Literal

# -- the search --------------------------------------------------------------------------------
POPULATION = 6
"""Candidates per generation."""
KEEP = 3
"""Survivors per generation."""
GENERATIONS = 12
"""Generations after the first population."""
SEED = 0
BACKEND = "loky"
MAX_ATTEMPTS = 10
"""Tries to breed a child that is not a copy of a known plan."""

# -- the tool-choice search (see evolve.search.toolchoice) ---------------------------------------
CHOICE_EVALS = 1500
"""Decodes (decode + schedule + justification) one tool-choice climb may spend."""
PRIORITY_EVALS = 150
"""Schedules of the priority search that follows a climb."""
CHOICE_PROBE = 40
"""Schedules of the short priority search that values a promising tool-choice move (0: off)."""
CHOICE_NEAR = 0.05
"""How close (a fraction) a move's greedy schedule must come to the current value to be probed."""
CHOICE_PROBE_MAX_TASKS = 40
"""Probing is on for plans of at most this many tasks: there it finds optima a greedy priority
misses (e.g. 3468 instead of 3714 at 40 facts), above it costs more time than it wins."""

# -- the PSPLIB benchmark (evolve bench psplib) --------------------------------------------------
BENCH_SET = "j30"
BENCH_SCHEDULES = 1000
"""Schedules per instance when neither a schedule nor a time budget is given."""
BENCH_JOBS = 1

# -- evaluation -------------------------------------------------------------------------------
MIN_PARALLEL_SECONDS = 0.05
"""In-process work per call above which the evaluator measures the pool too."""

# -- the LLM operator -------------------------------------------------------------------------
LLM_SHARE = 0.5
"""The share of each generation's children asked of the LLM (``--llm-ratio``)."""
LLM_TIMEOUT = 60.0
LLM_CONCURRENCY = 4
LLM_TEMPERATURE = 0.7
LLM_MAX_TOKENS = 1024
LLM_RESPONSE_FORMAT: Final[Literal["json_object"]] = "json_object"
LLM_MAX_RETRIES = 3
LLM_BACKOFF = 0.5
LLM_INSPIRATIONS = 2
"""Other good plans shown to the model beside the parent."""

# -- the plan's condition language (see evolve.model.expression) ---------------------------------
EXPRESSION_MAX_LENGTH = 2000
"""The longest ``when`` or ``assumes`` condition, in characters: a bound on parse time."""
EXPRESSION_MAX_DEPTH = 32
"""The deepest nesting (parentheses, lists, calls, ``not``, ``-``) a condition may have."""

# -- what a task does when its call fails (the plan keys on_failure and retries) -----------------
ON_FAILURE: Final[Literal["fail_plan"]] = "fail_plan"
"""A task's ``on_failure`` when the plan names none: a failure ends the run."""
ON_FAILURE_POLICIES: Final = ("retry", "fail_plan", "skip_dependents", "replan")
"""The values ``on_failure`` may take."""
RETRIES = 0
"""A task's ``retries`` when the plan names none: further attempts after the first."""
