"""The environment a test starts a book script in: no variable of an outer launcher (torchrun, a Slurm job) that would
make the script think it is one rank of a bigger job, one thread per CPU rank, unbuffered output, and gloo kept on
the loopback interface (every rank lives on this host, whatever the host name resolves to)."""
from __future__ import annotations

import os
from pathlib import Path

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "GROUP_RANK")


def script_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"
    return env
