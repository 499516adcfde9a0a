"""The five workflow patterns of the sources as functions, each run through the durable executor.

``prompt_chain``, ``route``, ``parallel_vote``, ``orchestrator_workers`` and
``evaluator_optimizer`` build a plan of their steps and run it with the plan-execute agent, so
every pattern run is journaled, resumable (call it again with the same ``out``) and reported.
``llm`` is any callable ``prompt -> text`` or an OpenAI-compatible client.
"""

from evolve.patterns.evaluator import evaluator_optimizer
from evolve.patterns.running import PatternResult, as_model
from evolve.patterns.workflows import orchestrator_workers, parallel_vote, prompt_chain, route

__all__ = [
    "PatternResult",
    "as_model",
    "evaluator_optimizer",
    "orchestrator_workers",
    "parallel_vote",
    "prompt_chain",
    "route",
]
