"""A resumable store of tidy result tables: one Parquet file per finished cell.

A cell's rows are written to a temporary file in the store's directory and renamed into
place (``os.replace`` is atomic on POSIX), so a killed sweep loses at most the cell in
flight, a reader never sees half a file, and ``--resume`` skips exactly the cells whose
file exists. Reading concatenates the cells in a fixed order (by cell key).

The store's directory is its run directory: a write never follows a symbolic link below it
(:func:`cflbounds._files.atomic_write`) nor one planted on the way to it since the store was made,
and ``cflbounds sweep`` refuses a store where one of :data:`STORE_FILES` is a link before any work.

A store holds one sweep's rows: a cell's key records every setting its rows depend on, and
:meth:`ResultStore.check_settings` refuses to add cells computed with other settings (a second
seed's trial i would be read as the same trial). A file the store cannot read is an
:class:`~cflbounds._validation.InvalidParameterError` naming the path, a file it cannot write a
:class:`~cflbounds._files.WriteError` naming the file.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._files import WriteError, atomic_write
from .._read_json import JSONProblem, parse_json, read_json
from .._schemas import SWEEP_MANIFEST
from .._validation import InvalidParameterError

__all__ = ["ResultStore", "STORE_FILES"]

MANIFEST = "sweep.json"
STORE_FILES = (MANIFEST, "cell-*.parquet")  # what the store writes in its directory


def _reason(error: Exception) -> str:
    """An exception's message as one short line."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class ResultStore:
    def __init__(self, directory):
        self.directory = Path(directory)
        self._place = self.directory.resolve()  # where its writes go, checked before each one

    def _path(self, cell_key: str) -> Path:
        return self.directory / f"cell-{hashlib.sha256(cell_key.encode()).hexdigest()[:20]}.parquet"

    def has(self, cell_key: str) -> bool:
        return self._path(cell_key).exists()

    def _write_atomically(self, target: Path, write) -> None:
        """``write(path)`` into a temporary file beside ``target``, then rename it into place; refused
        if the directory leads elsewhere than when the store was made (a symbolic link planted on
        its way since, e.g. at a run directory's ``sweeps/``)."""
        place = self.directory.resolve()
        if place != self._place:
            raise WriteError(f"Cannot write {target}: the store {self.directory} now leads to {place}, not "
                             f"{self._place} (a symbolic link on its way).")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:  # a file in the way, a read-only directory
            raise WriteError(f"Cannot write the store {self.directory}: {_reason(error)}.") from error
        atomic_write(target, write, within=self.directory)

    def write(self, cell_key: str, rows: pd.DataFrame) -> Path:
        """Write one cell's rows atomically (temp file + rename); the key is stored with them."""
        table = pa.Table.from_pandas(rows.assign(cell=cell_key), preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"cell": cell_key.encode()})
        target = self._path(cell_key)
        self._write_atomically(target, lambda path: pq.write_table(table, path))
        return target

    def _unreadable(self, path: Path, error: Exception) -> InvalidParameterError:
        return InvalidParameterError(f"{path} is not a readable cell file ({_reason(error)}); delete it to "
                                     "recompute that cell (sweep --resume).")

    def cells(self) -> list[str]:
        """Keys of the finished cells, sorted; every cell file's footer is read, so a corrupt
        or empty one is reported (naming it) before any work."""
        if not self.directory.exists():
            return []
        if not self.directory.is_dir():
            raise InvalidParameterError(f"{self.directory} is a file, not a sweep store directory.")
        keys = []
        for path in sorted(self.directory.glob("cell-*.parquet")):
            try:
                keys.append(pq.read_schema(path).metadata[b"cell"].decode())
            except (pa.ArrowException, OSError, KeyError, TypeError, UnicodeDecodeError) as error:
                raise self._unreadable(path, error) from error
        return sorted(keys)

    def read(self) -> pd.DataFrame:
        """All finished rows, cells in key order, rows in their written order."""
        frames = []
        for key in self.cells():
            try:
                frames.append(pq.read_table(self._path(key)).to_pandas())
            except (pa.ArrowException, OSError) as error:
                raise self._unreadable(self._path(key), error) from error
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def check_settings(self, settings: dict) -> None:
        """Refuse ``settings`` (values every cell of a sweep shares and its rows depend on: the
        seed, trials, restarts, ...) when a stored cell was computed with another value of one.

        Which cells a sweep selects (panels, axis values) may differ between runs into one
        store: a cell's rows depend on its own parameters only."""
        for key in self.cells():
            try:
                stored = parse_json(key.encode())
            except JSONProblem as problem:
                stored = problem
            if not isinstance(stored, dict):
                raise InvalidParameterError(f"{self._path(key)} is not a cell of a sweep (its key is not a JSON object: "
                                            f"{stored!s:.80}); delete it to recompute that cell.")
            for name, value in settings.items():
                if stored.get(name) != value:
                    raise InvalidParameterError(
                        f"The store {self.directory} holds cells computed with {name}={stored.get(name)!r}; this sweep "
                        f"has {name}={value!r}, and adding its cells would mix the rows of two sweeps. Use another "
                        f"--out, or {name}={stored.get(name)!r}.")

    def write_manifest(self, manifest: dict) -> None:
        """The sweep's definition (name, settings, the selections run) beside its cells."""
        text = json.dumps(manifest, indent=2, sort_keys=True)
        self._write_atomically(self.directory / MANIFEST, lambda path: Path(path).write_text(text))

    def read_manifest(self) -> dict | None:
        """The store's ``sweep.json``, checked against its schema (:mod:`cflbounds._schemas`;
        one line naming the file and the field otherwise), or None without one."""
        path = self.directory / MANIFEST
        if not path.exists():
            return None
        return read_json(path, SWEEP_MANIFEST, what="the JSON `cflbounds sweep` writes; delete it, the cells keep "
                                                    "their own settings")
