"""A disk cache for deterministic, expensive evaluations (performance-estimation SDPs).

Each value is a JSON file named by the SHA-256 of its key (every parameter, the function
and the versions that produced it; for a certified worst case also the certificate's version
and a digest of its source), so a rerun reads it instead of solving again. The
directory is ``$CFLBOUNDS_CACHE`` if set, else ``$XDG_CACHE_HOME/cflbounds``, else
``~/.cache/cflbounds``. Writes are atomic (temp file + rename); an unreadable or
mismatching file is recomputed.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["cache_directory", "cached"]


def cache_directory() -> Path:
    if os.environ.get("CFLBOUNDS_CACHE"):
        return Path(os.environ["CFLBOUNDS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cflbounds"


def cached(namespace: str, key: dict, compute: Callable[[], dict]) -> dict:
    """``compute()`` (a JSON-able dict), read from the cache when ``key`` was computed before."""
    text = json.dumps(key, sort_keys=True)
    folder = cache_directory() / namespace
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()}.json"
    try:
        stored = json.loads(path.read_text())
        if stored.get("key") == json.loads(text):
            return stored["value"]
    except (OSError, ValueError, AttributeError):
        pass
    value = compute()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as handle:
        json.dump({"key": json.loads(text), "value": value}, handle)
    os.replace(handle.name, path)
    return value
