"""Where evaluations run: joblib's own backends, plus Dask and Ray clusters through joblib.

We never schedule workers ourselves: this module only opens what joblib needs
(a Dask client, a Ray connection) and closes it again at the end of the run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from evolve.model.errors import EvolveError

BACKENDS = ("loky", "threading", "dask", "ray")


class BackendError(EvolveError):
    """A backend that cannot be used here: missing extra, unreachable scheduler."""


@contextmanager
def backend_session(backend: str, jobs: int, address: str | None = None) -> Iterator[dict[str, Any]]:
    """Open what ``backend`` needs for the run; yields extra keyword arguments for ``Parallel``.

    Without an address, ``dask`` starts a local cluster on 127.0.0.1 with one
    single-threaded worker process per job and stops it at the end.
    """
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if backend in ("loky", "threading"):
        if address:
            raise BackendError(f"--scheduler-address is only for dask or ray, not {backend}")
        yield {}
        return
    with ExitStack() as stack:
        if backend == "dask":
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                raise BackendError(
                    "backend 'dask' needs the dask extra: pip install 'evolve[dask]'") from None
            if address:
                try:
                    client = stack.enter_context(Client(address, timeout="10s"))
                except (OSError, TimeoutError) as exc:
                    raise BackendError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
            else:
                cluster = stack.enter_context(LocalCluster(
                    n_workers=jobs, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None))
                client = stack.enter_context(Client(cluster))
            yield {"client": client}
        else:
            try:
                import ray
                from ray.util.joblib import register_ray
            except ImportError:
                raise BackendError("backend 'ray' needs the ray extra: pip install 'evolve[ray]'") from None
            register_ray()
            # a local cluster's workers get this process's import path, as loky workers do
            runtime = None if address else {"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}}
            ray.init(address=address or None, ignore_reinit_error=True, include_dashboard=False,
                     runtime_env=runtime)
            stack.callback(ray.shutdown)
            yield {}
