"""The LLM mutation operator: plan patches from any OpenAI-compatible chat-completions endpoint.

Nothing here is imported by the engine: a run without ``--operator llm`` needs
neither this package's dependency (httpx) nor a network. Start from
:func:`make_llm_operator`; pass the operator to ``Search(..., proposer=op,
proposer_share=ratio)`` and put ``op.usage_summary()`` in the run summary.
"""

from evolve.llm.cache import ReplyCache, cache_key, default_cache_dir, prompt_hash
from evolve.llm.client import CallError, ChatClient, Completion
from evolve.llm.factory import API_KEY_ENV, api_key_from_env, make_llm_operator
from evolve.llm.operator import RESPONSE_FORMATS, LLMOperator, ResponseFormat, Sampling
from evolve.llm.prompt import Templates, build_messages
from evolve.llm.reply import REASONS, Rejected, child_from_reply, extract_json, patch_schema

__all__ = [
    "API_KEY_ENV",
    "REASONS",
    "RESPONSE_FORMATS",
    "CallError",
    "ChatClient",
    "Completion",
    "LLMOperator",
    "Rejected",
    "ReplyCache",
    "ResponseFormat",
    "Sampling",
    "Templates",
    "api_key_from_env",
    "build_messages",
    "cache_key",
    "child_from_reply",
    "default_cache_dir",
    "extract_json",
    "make_llm_operator",
    "patch_schema",
    "prompt_hash",
]
