"""A resumable store of tidy result tables: one Parquet file per finished cell.

A cell's rows are written to a temporary file in the store's directory and renamed into
place (``os.replace`` is atomic on POSIX), so a killed sweep loses at most the cell in
flight, a reader never sees half a file, and ``--resume`` skips exactly the cells whose
file exists. Reading concatenates the cells in a fixed order (by cell key).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["ResultStore"]


class ResultStore:
    def __init__(self, directory):
        self.directory = Path(directory)

    def _path(self, cell_key: str) -> Path:
        return self.directory / f"cell-{hashlib.sha256(cell_key.encode()).hexdigest()[:20]}.parquet"

    def has(self, cell_key: str) -> bool:
        return self._path(cell_key).exists()

    def write(self, cell_key: str, rows: pd.DataFrame) -> Path:
        """Write one cell's rows atomically (temp file + rename); the key is stored with them."""
        self.directory.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pandas(rows.assign(cell=cell_key), preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"cell": cell_key.encode()})
        target = self._path(cell_key)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".parquet")
        os.close(handle)
        try:
            pq.write_table(table, temporary)
            os.chmod(temporary, 0o644)  # mkstemp makes it private; a store is read by others
            os.replace(temporary, target)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        return target

    def cells(self) -> list[str]:
        """Keys of the finished cells, sorted."""
        if not self.directory.exists():
            return []
        keys = [pq.read_schema(path).metadata[b"cell"].decode() for path in self.directory.glob("cell-*.parquet")]
        return sorted(keys)

    def read(self) -> pd.DataFrame:
        """All finished rows, cells in key order, rows in their written order."""
        frames = [pq.read_table(self._path(key)).to_pandas() for key in self.cells()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def write_manifest(self, manifest: dict) -> None:
        """The sweep's definition (name, grid, seed, protocol) beside its cells."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "sweep.json"
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True))
        os.replace(temporary, path)

    def read_manifest(self) -> dict | None:
        path = self.directory / "sweep.json"
        return json.loads(path.read_text()) if path.exists() else None
