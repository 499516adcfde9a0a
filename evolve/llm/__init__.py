"""The LLM operator: plan patches, or picks from pre-scored menus, from any OpenAI-compatible endpoint.

Nothing here is imported by the engine: a run without ``--operator llm`` needs neither this
package's dependency (httpx) nor a network, and the names below load on first use
(:mod:`evolve.model.lazy`), so a module of this package is imported without the others. Start from
:func:`make_llm_operator`; pass the operator to ``Search(..., proposer=op,
proposer_share=ratio)`` and put ``op.usage_summary()`` in the run summary.
"""

from evolve.model.lazy import exports

TYPE_CHECKING = False

if TYPE_CHECKING:
    from evolve.llm.baselines import BestOfN, best_of_n
    from evolve.llm.cache import ReplyCache, cache_key, default_cache_dir, prompt_hash
    from evolve.llm.client import CallError, ChatClient, Completion
    from evolve.llm.factory import API_KEY_ENV, api_key_from_env, make_llm_operator, scrub_api_keys
    from evolve.llm.menu import (
        Menu,
        MenuPicks,
        Option,
        RandomPick,
        choice_from_reply,
        draft_menu,
        menu_schema,
    )
    from evolve.llm.modes import MODES, Mode, known_small, model_params
    from evolve.llm.operator import (
        RESPONSE_FORMATS,
        TOKEN_PARAMS,
        LLMOperator,
        ResponseFormat,
        Sampling,
        TokenParam,
    )
    from evolve.llm.prompt import Templates, build_menu_messages, build_messages, describe_ranking
    from evolve.llm.reply import REASONS, Rejected, child_from_reply, extract_json, patch_schema

__all__ = [
    "API_KEY_ENV",
    "MODES",
    "REASONS",
    "RESPONSE_FORMATS",
    "TOKEN_PARAMS",
    "BestOfN",
    "CallError",
    "ChatClient",
    "Completion",
    "LLMOperator",
    "Menu",
    "MenuPicks",
    "Mode",
    "Option",
    "RandomPick",
    "Rejected",
    "ReplyCache",
    "ResponseFormat",
    "Sampling",
    "Templates",
    "TokenParam",
    "api_key_from_env",
    "best_of_n",
    "build_menu_messages",
    "build_messages",
    "cache_key",
    "child_from_reply",
    "choice_from_reply",
    "default_cache_dir",
    "describe_ranking",
    "draft_menu",
    "extract_json",
    "known_small",
    "make_llm_operator",
    "menu_schema",
    "model_params",
    "patch_schema",
    "prompt_hash",
    "scrub_api_keys",
]

__getattr__, __dir__ = exports(__name__, __file__, __all__)  # loaded on first use
