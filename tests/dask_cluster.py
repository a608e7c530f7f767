"""A real Dask cluster on 127.0.0.1 for the tests: a scheduler and worker processes started
with the ``dask`` command line, as on a cluster of one's own (no nanny: a killed worker stays
dead)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port nothing listens on (at the time of the call)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dask_cluster(
    env: dict[str, str], cwd: Path, workers: int
) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """``(address, [scheduler, *workers])`` once every worker has joined; all killed on
    exit."""
    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = dict(env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scheduler = [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port)]
    procs = [subprocess.Popen([*scheduler, "--no-dashboard"], **quiet)]
    for i in range(workers):
        worker = [BIN / "dask", "worker", address, "--nthreads", "1", "--no-nanny"]
        worker += ["--no-dashboard", "--name", f"w{i}", "--local-directory", str(cwd / f"w{i}")]
        procs.append(subprocess.Popen(worker, **quiet))
    try:
        end = time.monotonic() + 60
        while True:
            try:
                with Client(address, timeout=5) as client:
                    if len(client.scheduler_info()["workers"]) == workers:
                        break
            except OSError:
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"{workers} Dask workers did not join within 60 s")
            time.sleep(0.2)
        yield address, procs
    finally:
        for p in procs:
            p.kill()
            p.wait()
