"""Every default of evolve, in one place: the options, the API and the help texts all read these.

A default is the value a setting takes when the command line or the caller gives none. Fixed
bounds and layout are not settings and live beside the code that enforces them: the loader's
limits in ``evolve/model/limits.py`` (file size, nesting, names, numbers), the bounds of an LLM
reply in ``evolve/llm/reply.py`` and ``evolve/llm/htn.py``, the sizes of the hypothesis strategies
for plugin tests in ``evolve/fitness/strategies.py``, the tool-choice search's fixed rounds and
kick weight in ``evolve/search/toolchoice.py``, and the geometry of the report's pictures in
``evolve/report/``. ``tests/test_cli_defaults.py`` checks that every default of the command line
is one of these values.

The module imports nothing from evolve, so every layer may read it.
"""

from __future__ import annotations

from typing import Final, Literal

# -- validation ---------------------------------------------------------------------------------
EVIDENCE_PLAN_PATH = "outputs/evidence-plan.json"
"""Where ``evolve validate --evidence-out`` writes the evidence plan when given no path."""

# -- the search --------------------------------------------------------------------------------
POPULATION = 6
"""Candidates per generation."""
KEEP = 3
"""Survivors per generation."""
GENERATIONS = 12
"""Generations after the first population."""
SEED = 0
BACKEND = "loky"
CHECKPOINT_SECONDS = 1.0
"""A run checkpoints after its first generation and then after the first generation that ends
at least this long after the last checkpoint began (0: after every generation): a crash loses at
most about this much search, and a fast search does not spend most of its time writing its state."""
MAX_ATTEMPTS = 10
"""Tries to breed a child that is not a copy of a known plan."""
CROSSOVER_RATE = 0.3
"""The plan GA's chance that a child starts as a crossover of two parents (then one mutation)."""
OPERATOR = "random"
"""How ``evolve run`` makes children (``--operator``): the random operators alone, or ``llm``, which
asks a chat model for some of them."""
GC_YOUNG_THRESHOLD = 10_000
"""Allocations between collections of Python's youngest generation during ``evolve run`` and
``evolve plan`` (Python's own default: 700; see :func:`evolve.model.collector.settle_for_one_search`)."""

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
ANNEAL_MIN_TASKS = 40
"""First plans of problems whose greedy plan has more tasks than this are annealed on their work
(see ``work_anneal`` in evolve.search.anneal_kernels) instead of climbed on their schedule."""
ANNEAL_EVALS = 200_000
"""Moves (a decode each) one annealing of a first plan may try..."""
ANNEAL_TASK_MOVES = 1000
"""...at most this many per task of the greedy plan (a smaller plan has fewer facts to choose
producers for: at 74 tasks 50,000 moves found what 200,000 find)..."""
ANNEAL_TASK_EVALS = 50_000_000
"""...and moves times the greedy plan's tasks: a decode costs time linear in the plan, so this
keeps an annealing under about a second on this machine whatever the size."""
ANNEAL_START = 1.5
"""The annealing's first temperature, in work per task of the plan it starts from."""
ANNEAL_END = 0.05
"""Its last temperature, in the same unit."""
ANNEAL_REFRESH = 20
"""Accepted moves between two refreshes of the facts the plan does not need."""
ANNEAL_FLOOR = True
"""Anneal on the larger of the work and the critical path (``False``: the work alone)."""
ANNEAL_IMPROVE_SHARE = 0.5
"""The share of children of such problems annealed (short and cool) instead of climbed."""
ANNEAL_IMPROVE_EVALS = 20_000
"""Moves of a child's annealing."""
ANNEAL_IMPROVE_START = 0.3
"""A child's first temperature (it ends at ``ANNEAL_END``)."""

# -- the activity-list GA (evolve run x.sm, evolve bench psplib) ----------------------------------
# Its settings and their tuned defaults are the fields of GaParams in
# evolve/problems/rcpsp/search.py (some resolved per instance size and budget there, in _resolve);
# docs/psplib-seeds.md lists the settings that lost.

# -- the PSPLIB benchmark (evolve bench psplib) --------------------------------------------------
BENCH_SET = "j30"
BENCH_SCHEDULES = 1000
"""Schedules per instance when neither a schedule nor a time budget is given."""
BENCH_JOBS = 1

# -- evaluation -------------------------------------------------------------------------------
MIN_PARALLEL_SECONDS = 0.05
"""In-process work per call above which the evaluator measures the pool too."""
POOL_AFTER_SECONDS = 2.0
"""Seconds of developing children in this process after which a run starts its local workers
(the climbs a run does before that would not win back the workers' start: about 1-2 s each
to import evolve and load the compiled kernels)."""
EVAL_AVERAGE_WEIGHT = 0.3
"""Weight of the newest measurement in the evaluator's moving averages of in-process and pool
time, so one noisy call does not flip its choice."""
LANE_MARGIN = 0.1
"""How much sooner (a share of the child's own estimated length) a generation must be predicted
to finish before a child waits in another child's thread rather than share the cores in a
thread of its own (see :mod:`evolve.run.lanes`): estimates are averages, and a near tie is
not worth the risk."""
EVAL_KILL_GRACE = 5.0
"""Seconds past ``--eval-timeout`` (times the plans of a call) before a call's workers are killed:
the backstop for a hang the in-worker signal cannot interrupt."""

# -- the plugin conformance check (evolve.fitness.testing.check_fitness) --------------------------
CHECK_FITNESS_EXAMPLES = 60
"""Generated (problem, plan) pairs ``check_fitness`` tries."""
CHECK_FITNESS_WORKER_CASES = 20
"""Of those, how many are scored again in a fresh worker process and compared."""

# -- the LLM operator -------------------------------------------------------------------------
LLM_SHARE = 0.5
"""The share of each generation's children asked of the LLM (``--llm-ratio``)."""
LLM_TIMEOUT = 60.0
"""Seconds one whole LLM call may take: every attempt, backoff and byte of the answer."""
LLM_CONCURRENCY = 4
LLM_TEMPERATURE = 0.7
LLM_MAX_TOKENS = 1024
LLM_RESPONSE_FORMAT: Final[Literal["json_object"]] = "json_object"
LLM_MAX_RETRIES = 3
LLM_BACKOFF = 0.5
"""Seconds before the first retry of a failed LLM call; each further retry waits twice as long..."""
LLM_MAX_BACKOFF = 8.0
"""...up to this many seconds (and never past the call's deadline)."""
LLM_DRAFT_MAX_TASKS = 20
"""The cap on a model-drafted plan's tasks when the problem sets no ``max_tasks``."""
LLM_ERROR_CHARS = 2000
"""Longest text of each replan field (failed step, error, partial results) a prompt quotes; the
rest is cut with a note of how much was left out."""
LLM_INSPIRATIONS = 2
"""Other good plans shown to the model beside the parent."""
LLM_MODE: Final[Literal["auto"]] = "auto"
"""``--llm-mode``: ``patch`` (the model writes a plan patch), ``menu`` (it picks one of the
engine's pre-scored edits) or ``auto`` (menu for models known or measured to be small)."""
LLM_TOKEN_PARAM: Final[Literal["max_tokens"]] = "max_tokens"
"""The request field carrying the completion limit (OpenAI's reasoning models require
``max_completion_tokens``)."""
LLM_MENU_SIZE = 5
"""Edits on a menu."""
LLM_MENU_ATTEMPTS = 4
"""Operator draws per menu slot before a menu is left shorter (when few edits change the parent)."""
LLM_MENU_MAX_TOKENS = 96
"""Completion limit in menu mode, where the reply is an index and one sentence."""
LLM_MENU_REASON_CHARS = 160
"""Longest reason the menu reply's schema allows, so a constrained model cannot ramble."""
LLM_SMALL_MODEL_PARAMS = 4e9
"""``auto`` picks menu mode for a model whose name says it has fewer parameters (``135m``, ``1.5b``)."""
LLM_AUTO_PROBE = 4
"""``auto`` judges a model it cannot size by its first this many patch replies..."""
LLM_AUTO_MIN_ACCEPTED = 0.5
"""...and switches to menu mode when fewer than this share of them were accepted."""
LLM_SCHEMA_MAX_ADD = 4
"""Tasks the patch schema sent to a constrained endpoint lets one reply add."""
LLM_EXTRA_BODY_ENV = "EVOLVE_LLM_EXTRA_BODY"
"""The environment variable ``--llm-extra-body`` is read from when not given: a JSON object of
request fields an OpenAI-compatible server accepts beside the standard ones, e.g.
``{"chat_template_kwargs": {"enable_thinking": false}}`` (llama.cpp, vLLM),
``{"enable_thinking": false}`` or ``{"reasoning_effort": "low"}``. None by default."""

# -- the plan's condition language (see evolve.model.expression) ---------------------------------
EXPRESSION_MAX_LENGTH = 2000
"""The longest ``when`` or ``assumes`` condition, in characters: a bound on parse time."""
EXPRESSION_MAX_DEPTH = 32
"""The deepest nesting (parentheses, lists, calls, ``not``, ``-``) a condition may have."""

# -- what a task does when its call fails (the plan keys on_failure and retries) -----------------
ON_FAILURE: Final = "fail_plan"
"""A task's ``on_failure`` when neither the plan nor its tool's catalog entry names one: a failure
ends the run (the values: :data:`evolve.model.plan.FailurePolicy`)."""
RETRIES = 0

# -- a write's idempotency key (see evolve.model.keys) --------------------------------------------
IDEMPOTENCY_KEY = "{request_id}:{tool}:{inputs}"
"""The key template the search gives a write whose tool's catalog entry names none: the run's
request id, the tool and a digest of the task's bound inputs, resolved at dispatch. Two runs
(two requests) never share a key; a replanned write of the same inputs keeps its key."""
KEY_DIGEST_LENGTH = 12
"""Hex digits of the digest of a write's bound inputs (``{inputs}`` in a key template)."""
"""A task's ``retries`` when neither the plan nor its tool's catalog entry names them: further
attempts after the first."""

# -- running a plan (evolve execute; see evolve.execute) ---------------------------------------
EXECUTE_MAX_STEPS: int | None = None
"""Step executions a run may spend (every tool call, retry and replan actually made):
``--max-steps``. ``None``: derived from the plan run (:func:`evolve.execute.options.step_budget`):
a call for each task and each retry its tasks allow, and :data:`EXECUTE_STEPS_PER_REPLAN` for each
replan ``--max-replans`` allows. A fixed default was wrong for some plan: the former 12 was below
the plans the search itself makes (``limits.max_tasks`` 16), so a plan ``evolve run`` called
feasible stopped ``step_budget`` half done. A fixed budget (the sources' "12-step budget") is
``--max-steps 12``."""
EXECUTE_STEPS_PER_REPLAN = 3
"""Steps the derived ``--max-steps`` gives each replan ``--max-replans`` allows: the replan itself,
and calls of the tasks it adds in place of the one that failed (a replan swaps one failed task for
a task or two; under ``--horizon`` a replan adds none, and the spare steps are headroom)."""
PATTERN_MIN_STEPS = 12
"""The least ``max_steps`` a workflow pattern's run gets (twice its first plan's tasks when that is
more): its rounds add tasks the first plan does not hold."""
EXECUTE_MAX_REPLANS = 5
"""Replans a run may spend: ``--max-replans``."""
EXECUTE_TIMEOUT = 300.0
"""Seconds a tool call may take when its task names no ``timeout``; past it the call is a timeout
failure (retryable), and the run goes on without waiting for it."""
EXECUTE_BACKOFF = 0.5
"""Seconds before the first retry of a failed call; each further retry waits twice as long."""
EXECUTE_BACKOFF_CAP = 30.0
"""The longest wait between two attempts of a call."""
EXECUTE_RETRY_WINDOW = 300.0
"""Seconds from a task's first failure within which retries may start; past it the failure is final."""
EXECUTE_JOURNAL_SYNC = "FULL"
"""SQLite ``synchronous`` of the journal: ``FULL`` makes every commit reach the disk before the
call it records is made (``NORMAL`` survives a killed process but not a lost machine)."""
EXECUTE_WAIT = 0.0
"""Seconds a session keeps waiting for a person (``--wait``), polling the journal for their
decision; 0: it stops at once with ``status: waiting`` (exit 4) and ``--resume`` goes on."""
EXECUTE_WAIT_POLL = 0.5
"""Seconds between two looks at the journal while a session waits for a person."""
EXECUTE_DEADLINE_INCLUDES_WAITING = False
"""Whether waiting for people counts against a problem's ``limits.deadline_s`` (``False``: the
deadline measures the run's own time; ``--deadline-includes-waiting`` counts it)."""
EXECUTE_DISPATCHERS = ("local", "dask")
"""Where tool calls run: threads of this process, or a Dask cluster (``--dispatcher``)."""
EXECUTE_DISPATCHER = "local"
"""``--dispatcher`` when none is named: tool calls run in threads of this process."""
EXECUTE_HORIZON: int | None = None
"""``--horizon`` when none is given: the whole plan is committed at once (no rolling horizon).
With ``K``, only the next ``K`` tasks of the plan are committed; when they are over, the rest is
planned again from what they made (a revision with the reason ``horizon``)."""
EXECUTE_REPLANNERS = ("search", "llm")
"""Who proposes a new plan (``--replanner``): the plan search, or the LLM operator."""
EXECUTE_REPLANNER = "search"
"""``--replanner`` when none is named: the plan search."""
REPLAN_GENERATIONS = 12
"""Generations of the search that replans (its population and seed: the search's defaults and
the run's seed plus the revision)."""

# -- the plan-execute agent and the workflow patterns (see evolve.agent, evolve.patterns) ------
AGENT_PLAN_ATTEMPTS = 3
"""Answers a planner may give per plan: a plan the validator rejects goes back to it with the
errors, and after this many the run ends with ``no_plan``."""
PATTERN_VOTERS = 5
"""Samples ``parallel_vote`` draws (``n``)."""
PATTERN_MAX_ITER = 5
"""Rounds ``evaluator_optimizer`` may spend before it stops without a PASS (``max_iter``)."""

DEFAULT_OBJECTIVES = ("validity", "completeness", "makespan", "minimality")
"""The objectives a run ranks by, in priority order, when no ``--fitness`` is given."""

# -- HTN domains (see evolve.problems.htn) -------------------------------------------------------
HTN_MAX_DEPTH = 12
"""How deep compound tasks may nest (``htn.max_depth``); past it a branch fails, so a recursive
domain ends in "no plan", never a hang."""
HTN_MAX_NODES = 20_000
"""Search nodes one decomposition may visit (``htn.max_nodes``): the planner's hard stop."""
HTN_MAX_DEPTH_LIMIT = 1000
"""The most ``max_depth`` may be (``--max-depth``, a domain file's ``htn.max_depth``)."""
HDDL_MAX_DEPTH = 1000
"""``max_depth`` of a domain grounded from HDDL (``evolve hddl``): the competition's domains recurse
deeply; iterative deepening finds shallow plans first, so a high limit costs nothing when unused."""
HDDL_MAX_NODES = 500_000
"""``max_nodes`` of a domain grounded from HDDL: its ground search spaces are larger than a file's."""
HTN_DEPTH_FIRST_NODES = 2_000
"""The fewest nodes the planner's first plan searches depth-first in the domain's order before it
turns to the heuristic best-first search (the rest of max_nodes)."""
HTN_DEPTH_FIRST_SHARE = 8
"""... or max_nodes divided by this, when that is more (62,500 of the HDDL default 500,000):
depth first is cheap per node (about a tenth of a best-first node), enough for a small domain
and for many the competition's winner, a depth-first planner, solves fast (Hiking p04: 51,911
nodes, 2.7 s, where the best-first search had found no plan after 20,000 nodes and 8 s); a
large one with no plan that near is left to the heuristic, which starts a few seconds later."""
HDDL_LIFTED_WORK = 100_000
"""The bindings :mod:`evolve.problems.htn.lifted`'s depth-first search of an HDDL problem may try
before ``evolve run`` grounds it (a second or two at most on the competition's problems; most of
their small and mid-size ones need a few hundred to a few thousand): the first plan, on disk
before grounding begins, where that search finds one within it. Work, not seconds, so a run's
result does not depend on the machine's speed."""
HTN_FOLLOW_NODES = 20
"""Search nodes a step the grounded planner may spend finding that plan again in its domain's
terms (:meth:`evolve.problems.htn.planner.Planner.follow`), its first plan when found."""
HTN_OWN_FIRST_NODES = 50_000
"""When the lifted search's plan is the first (:data:`HTN_FOLLOW_NODES`), the grounded planner's
own first plan (usually shorter: its search is guided by a heuristic) is still searched, in at
most this many nodes, and both join the first population."""
HTN_DECODE_FACTOR = 1
"""The search over method choices gives each decoding after the planner's first plan this many
times the nodes that plan took (at least :data:`HTN_DECODE_MIN_NODES`, at most max_nodes): a
genome whose preferences lead the planner astray costs a bounded detour, not the whole budget."""
HTN_DECODE_MIN_NODES = 2_000
HTN_SEARCH_FACTOR = 4
"""The search over method choices stops (``bound``) once its decodings have searched this many
times the nodes the planner's first plan took in all (at least :data:`HTN_SEARCH_MIN_NODES`), so
``evolve run`` on a large domain costs a few first plans, not generations x population of them."""
HTN_SEARCH_MIN_NODES = 50_000
HTN_LNS_RATE = 0.5
"""The share of the search's mutations over method choices that are a large-neighbourhood step
(:mod:`evolve.problems.htn.lns`) on a parent whose decomposition is known: subtrees of its plan
re-planned for the fewest actions."""
HTN_LNS_NODES = 20_000
"""Search nodes one large-neighbourhood step spends on re-planning subtrees, over all of them."""
HTN_LNS_SUBTREE_NODES = 2_000
"""Search nodes the re-planning of one subtree (one compound-task occurrence) may spend: its
branch and bound ends there with the shortest sub-plan found so far."""
MEMORY_FLOOR_SHARE = 0.1
"""An HTN search stops (``memory``: no plan, or the best so far kept) once the machine's free
memory is below this share of it, so the kernel's OOM killer never ends a run without a word
(see :mod:`evolve.problems.htn.memory`)."""
MEMORY_CHECK_SECONDS = 0.1
"""How often that free memory is read: a search grows by a few tens of megabytes in that time."""
HTN_VALIDATE_STATES = 256
"""Synthetic world states ``evolve validate-domain`` tries; more combinations are sampled."""
HTN_FALLBACK_TEMPERATURE = 0.0
"""Sampling temperature of the LLM decomposition fallback: one answer per question, cacheable."""
HTN_FALLBACK_MAX_TOKENS = 512
HTN_FALLBACK = "none"
"""Who decomposes a compound task no method applies to (``--htn-fallback``): nobody, or ``llm``."""

# -- generated problems (evolve generate; see evolve.problems.synthetic) ---------------------------
GENERATE_TOOLS = 60
"""Tools in a generated problem (``evolve generate --tools``)."""
GENERATE_MAX_TOOLS = 100_000
"""The most tools ``evolve generate --tools`` makes: about 16 values a tool keeps the file within
the loader's value limit (``evolve.model.limits.MAX_NODES``), and a far larger count would only
exhaust memory before failing."""

# -- lower bounds (evolve bound) -----------------------------------------------------------------
BOUND_MIP_SECONDS = 5.0
"""``evolve bound --mip-seconds``: time for the least-work and whole energy MIPs together."""
BOUND_PATH_SECONDS = 30.0
"""``evolve bound --path-seconds``: time for the chosen-path MIP (seconds at 300 facts; at 1,000
it stops at this limit with its dual bound)."""

# -- the terminal view (evolve show) ---------------------------------------------------------------
SHOW_WIDTH = 100
"""Line width of ``evolve show`` when neither ``--width`` nor a terminal gives one."""
CHAIN_ENDS = 10
"""A critical path longer than twice this many ids is printed on the terminal as its first and
last this many with the count between (a 398-step HTN plan's path is 398 ids)."""

# -- authoring a domain from a trace (evolve author) -------------------------------------------
AUTHOR_CANDIDATES = 8
"""Candidate domains ``evolve author`` asks for at first, and children each generation (``--n``)."""
AUTHOR_GENERATIONS = 4
"""Generations of LLM mutation ``evolve author`` runs while no candidate passes (``--generations``)."""
AUTHOR_TEMPERATURE = 0.8
"""Sampling temperature of the authoring calls: above 0, so the candidates differ (each call has
a seed of its own, so the reply cache still answers a rerun)."""
AUTHOR_MAX_TOKENS = 3000
AUTHOR_RICHNESS = 0.01
"""Score per method and per guard of a candidate: ranks passers, never outweighs a state."""

RUNS_DIR = "runs"
"""Where new run folders go when no --out is given (``$EVOLVE_RUNS_DIR`` overrides it)."""

# -- importing tool specs (evolve import-tools; see evolve.problems.toolspec) --------------------
IMPORT_DURATION = 1.0
"""Duration of an imported tool neither its spec nor the side file times (a guess, reported): one
unit each, so a plan's makespan counts the calls on its longest chain."""
IMPORT_RISK = "read"
"""Risk of an imported tool neither its spec nor the side file classes (a guess, reported)."""

# -- the web view (evolve serve; see evolve.serve) ------------------------------------------------
SERVE_HOST = "127.0.0.1"
"""Where ``evolve serve`` listens unless ``--host`` says otherwise: this machine only. Another
address must be given explicitly, and is warned about (anyone who can reach it and has the token
can decide on the runs)."""
SERVE_PORT = 8765
"""``evolve serve --port`` (0: any free port, printed at start)."""
SERVE_REFRESH_MS = 2000
"""How often the runs page and the inbox fetch their lists again (milliseconds)."""
SERVE_SCAN_TTL = 1.0
"""How long one scan of RUNS_DIR (every run's status, every pending item) answers requests before
the folder is looked at again (seconds); a decision made through the server clears it at once."""
SERVE_STREAM_POLL = 0.05
"""How often a run page's event stream looks for new events in the run's journal (seconds)."""
SERVE_STREAM_BATCH = 2000
"""Most events one read of the stream sends at once (a run far ahead is caught up in batches)."""
SERVE_HEARTBEAT = 15.0
"""Seconds between the keep-alive comments of an idle event stream."""
SERVE_SHUTDOWN_GRACE = 5.0
"""Seconds ``evolve serve`` waits at Ctrl-C for open streams and resume workers before it stops them
(a stopped worker's run is resumable like any killed run)."""

# -- MCP servers (evolve import-tools --mcp, evolve execute --mcp, evolve mcp; see evolve.mcp) ----
MCP_CONNECT_TIMEOUT = 30.0
"""Seconds an MCP server may take to start and answer the handshake, or to list its tools, before
the command says it is not answering (a command that is not an MCP server ends sooner: it exits
or writes what is not JSON-RPC)."""
MCP_LIST_PAGES = 100
"""Pages of a paginated ``tools/list`` read at most: a server whose cursor never ends cannot hang
the import."""
MCP_RESTARTS = 1
"""Times a server that died is started again in one session before its calls fail."""
MCP_STDERR_TAIL = 800
"""Characters of a dead server's stderr quoted in the error (its last ones)."""
MCP_HTTP_HOST = "127.0.0.1"
"""Where ``evolve mcp --http PORT`` listens: this machine only."""
MCP_PLAN_GENERATIONS = 30
"""Generations the ``plan`` tool of ``evolve mcp`` searches when its caller names no budget."""
MCP_RUN_WAIT = 3600.0
"""``evolve mcp --wait``: seconds a run the server started keeps waiting for a person (polling
its journal) before it stops; a decision given through the server resumes a stopped run."""
MCP_TIMEOUT_SLACK = 1.0
"""Seconds an MCP call is let run past its task's deadline before the client itself cancels it:
the executor's own deadline always comes first, so a write cut off by its timeout takes the
executor's path (reconciled, else unknown), never a retry."""
