"""The secret that signs the build cache's entries (tools/core/cache.py) and check-links' replayed results
(tools/checks/links/replay.py): only what this user's tool wrote is ever loaded. Standard library only, so that the
replay, which runs before click is imported, can check a signature."""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

MACHINE_IDS = ("/etc/machine-id", "/var/lib/dbus/machine-id")


@lru_cache(maxsize=1)
def signing_key() -> bytes:
    """This user's secret for signing the cache's entries, which no repository can know or hold.

    A pickle runs code when it is loaded, and `.cache/build` lies in the folder a build starts from, which may be a
    repository somebody else wrote: only entries signed with this key are loaded. The key is derived from the
    machine's random id and the user id, so the tool writes nothing for it; a system without a machine id keeps a
    random key in `$XDG_CACHE_HOME/mlbook-tools/cache-key` (or, with no writable home, one for this process only).
    """
    from tools.core.safe_io import UnsafeFile, read_bytes

    for source in MACHINE_IDS:
        try:
            machine = read_bytes(source, limit=256).strip()
        except UnsafeFile:
            continue
        if len(machine) >= 16:
            return hashlib.sha256(b"mlbook-tools cache key\0" + machine + b"\0" + str(os.getuid()).encode()).digest()
    path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlbook-tools" / "cache-key"
    try:
        return read_bytes(path, limit=64)[:32].ljust(32, b"\0")
    except UnsafeFile:
        pass
    import secrets  # a machine without an id only

    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
    except OSError:
        pass
    return key


def signature(namespace: str, key: str, payload: bytes) -> bytes:
    import hmac

    return hmac.new(signing_key(), f"{namespace}/{key}\0".encode() + payload, "sha256").digest()
