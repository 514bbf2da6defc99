"""``verdicts.json``: the record of a ``cflbounds verify`` run, its metadata and its verdicts.

A run directory holds (``docs/tables.md`` describes every table column)::

    verdicts.json          {"metadata": {...}, "verdicts": [...]}, rewritten after every claim
    tables/<name>.parquet  each claim's tidy tables, written just before its verdict
    partial/*.npz          finished configurations of long claims (VerifyContext.checkpoint), data only
    sweeps/ifca-fig2/      the IFCA.F2 sweep's store (one file per finished cell)
    counterexamples/<ID>.json  a counterexample the search of a claim's domain confirmed
    report.pdf             built once every claim is done: page 1 the verdicts, then a page per claim
    report.html            the same, self-contained (figures inline, nothing fetched), beside it

Every file is replaced atomically, so a killed run keeps each verdict that was printed and
``verify --resume`` recomputes only the rest. A directory resumes only under the settings
that decide its results (:data:`RESUME_SETTINGS`). Before any work the directory is checked
(:data:`RUN_FILES`, :data:`RUN_FOLDERS`: no symbolic link among them or inside them, so that no
write leaves it: :func:`cflbounds._files.open_run_directory`), and every write checks its way
again. ``finished`` is set once the report is on disk.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import re
import subprocess
from datetime import datetime, timezone
from importlib import metadata as distributions
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import torch
from pyarrow import ArrowException

from .. import __version__
from .._files import atomic_write_table, atomic_write_text, open_run_directory, safe_file_name
from .._read_json import check_json, check_unique_ids, load_json
from .._schemas import VERDICTS_FILE
from .._validation import InvalidParameterError
from .checkpoints import check_checkpoints
from .context import table_name_of
from .verdict import Verdict, json_safe

__all__ = ["RECORD_NAME", "RESUME_SETTINGS", "RUN_FILES", "RUN_FOLDERS", "RunRecord", "read_record", "run_metadata",
           "dependency_versions"]

RECORD_NAME = "verdicts.json"
# What a verify run writes in its directory: these files, and in these folders (the checkpoints of
# VerifyContext.checkpoint, IFCA.F2's sweep store); tests/test_run_directory_safety.py checks the list
RUN_FILES = (RECORD_NAME, "report.pdf", "report.html")
RUN_FOLDERS = ("tables", "partial", "counterexamples", "sweeps")
# What a verdict depends on. Not the threads or the executor: results are identical across them
# (DESIGN.md, Determinism; tested). The device is: CUDA kernels sum in other orders than CPU ones.
# So is the search a claim with a domain got (its evaluations, or its seconds).
RESUME_SETTINGS = ("cflbounds", "scale", "seed", "device", "search")


def now() -> str:
    """The local time, ISO 8601 with its UTC offset, to the second."""
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


def dependency_versions() -> dict:
    """Installed versions of cflbounds' requirements (optional extras only when installed)."""
    try:
        requirements = distributions.requires("cflbounds") or []
    except distributions.PackageNotFoundError:  # running from a source tree that is not installed
        return {}
    versions = {}
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        try:
            versions[name] = distributions.version(name)
        except distributions.PackageNotFoundError:
            if "extra ==" not in requirement:
                versions[name] = None  # a required package missing is worth recording
    return versions


def source_revision() -> str | None:
    """The git commit of the cflbounds source tree running (``+dirty`` with uncommitted
    changes), or None outside a git checkout (an installed wheel)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        if commit.returncode:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                "cflbounds"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return commit.stdout.strip() + ("+dirty" if dirty else "")


def provenance(command, **settings) -> dict:
    """Who made a run's results, how and where: version, source revision, command, the given
    settings, torch threads, start time (``finished`` to be filled in), Python, platform and
    dependency versions."""
    return {"cflbounds": __version__, "revision": source_revision(), "command": list(command), **settings,
            "threads": torch.get_num_threads(), "started": now(), "finished": None,
            "python": platform.python_version(), "platform": platform.platform(),
            "dependencies": dependency_versions()}


def run_metadata(context, command, search: dict | None = None) -> dict:
    """What a run's verdicts depend on and where they were made (``verdicts.json``'s ``metadata``);
    ``search``: the search each claim with a domain got (:class:`cflbounds.falsify.judge.SearchPlan`)."""
    return provenance(command, scale=context.scale, seed=context.seed, device=context.device,
                      executor=context.executor, search=search)


def _with_defaults(entry: dict) -> dict:
    """A verdict read back with every :class:`Verdict` field: one missing (a file of an older
    cflbounds) takes its default."""
    defaults = {field.name: field.default if field.default is not dataclasses.MISSING else field.default_factory()
                for field in dataclasses.fields(Verdict) if field.name not in entry
                and (field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING)}
    return {**entry, **defaults}


def read_record(path) -> dict:
    """The validated content of a ``verdicts.json`` as ``{"metadata", "verdicts"}``, checked
    against its schema (:data:`cflbounds._schemas.VERDICTS_FILE`) before it is used.

    Raises :class:`InvalidParameterError` naming the file, the field and what is wrong with it.
    The list-only format of cflbounds before run metadata is read with empty metadata; a
    verdict's fields with a default (:class:`Verdict`) may be missing and read as it.
    """
    data = load_json(path, what="the JSON `cflbounds verify` writes")
    if isinstance(data, list):  # the format before run metadata
        data = {"metadata": {}, "verdicts": data}
    check_json(path, data, VERDICTS_FILE)
    check_unique_ids(path, data["verdicts"], "verdicts")
    return {"metadata": data.get("metadata", {}), "verdicts": [_with_defaults(entry) for entry in data["verdicts"]]}


class RunRecord:
    """A run directory's ``verdicts.json`` and tables, written as each claim finishes."""

    def __init__(self, directory, metadata: dict, verdicts: list[dict]):
        self.directory = Path(directory)
        self.path = self.directory / RECORD_NAME
        self.metadata = metadata
        self.verdicts = {entry["id"]: entry for entry in verdicts}

    @classmethod
    def open(cls, context, *, resume: bool = False, command=(), option: str = "--out",
             search: dict | None = None) -> "RunRecord":
        """Open the run directory ``context.workdir`` for a run of ``context``'s settings,
        before any work: it must be a writable directory (created if missing; ``option``
        names it in errors) with no symbolic link among what a run writes
        (:func:`~cflbounds._files.open_run_directory`, which also removes the temporary files of
        a killed run), holding no earlier run, or with ``resume`` an earlier run made under the
        same :data:`RESUME_SETTINGS`, whose verdicts are kept and whose checkpoints are all
        readable (:func:`~cflbounds.verify.checkpoints.check_checkpoints`). Refusals raise
        :class:`InvalidParameterError`. ``command``: the command line, for the metadata.
        """
        if context.workdir is None:
            raise InvalidParameterError(f"The '{option}' option must name a directory. Got None instead.")
        directory = open_run_directory(context.workdir, option, files=RUN_FILES, folders=RUN_FOLDERS)
        metadata, path = run_metadata(context, command, search), directory / RECORD_NAME
        if not path.exists():
            record = cls(directory, metadata, [])
        elif not resume:
            raise InvalidParameterError(f"{path} already holds a verify run; pass --resume to continue it or "
                                        f"choose another {option}.")
        else:
            earlier = read_record(path)
            _check_resumable(path, earlier, metadata, option)
            check_checkpoints(directory)  # a damaged or crafted checkpoint is said now, in one line
            resumed = {key: metadata[key] for key in ("command", "started", "threads", "executor")}
            kept = {**earlier["metadata"], "finished": None,
                    "resumed": earlier["metadata"].get("resumed", []) + [resumed]}
            record = cls(directory, kept, earlier["verdicts"])
        record._write()
        return record

    def done(self, claim_id: str) -> bool:
        """Whether ``--resume`` skips ``claim_id``: it has a verdict, and not ``error`` (a claim
        whose code failed is checked again: its author has perhaps fixed it)."""
        return claim_id in self.verdicts and self.verdicts[claim_id]["verdict"] != "error"

    def add(self, verdict: Verdict, tables: dict) -> None:
        """Store one finished claim: its tables first, then ``verdicts.json`` (so a verdict on
        disk always has its tables). A table file another claim wrote (in an earlier part of a
        resumed run) is never replaced: this claim's is kept as ``name@CLAIM-ID``."""
        for name, frame in tables.items():
            if self._owner(name) not in (None, verdict.id):
                name = table_name_of(name, verdict.id)
            atomic_write_table(self._table_path(name), frame, within=self.directory)
        self.verdicts[verdict.id] = verdict.to_dict()
        self._write()

    def _table_path(self, name: str) -> Path:
        return self.directory / "tables" / safe_file_name(f"{name}.parquet", "the table")

    def _owner(self, name: str) -> str | None:
        """The claim whose table ``tables/name.parquet`` is, or None when there is none."""
        path = self._table_path(name)
        if not path.exists():
            return None
        try:
            claims = pd.read_parquet(path, columns=["claim"])["claim"]
        except (OSError, ValueError, KeyError, ArrowException):  # unreadable or not ours: keep it, write beside it
            return ""
        return str(claims.iloc[0]) if len(claims) else None

    def arrange(self, ids: list[str]) -> None:
        """List the verdicts of ``ids`` in that order, after those of other claims (kept from an
        earlier run); the file is rewritten by :meth:`finish`."""
        order = {claim_id: index for index, claim_id in enumerate(ids)}
        self.verdicts = dict(sorted(self.verdicts.items(), key=lambda item: order.get(item[0], -1)))

    def finish(self, write_report: Callable[[dict], Any] | None = None, **metadata):
        """Mark the run complete; ``metadata`` adds what only the end knows (e.g. the thread
        counts ``--threads auto`` chose). ``write_report(record)``, given, writes the report of
        the finished record (as ``verdicts.json`` will hold it) first, and returns what it
        returns: ``verdicts.json`` says ``finished`` only once the report is on disk, so a run
        killed while its report is written is not finished (``--resume`` writes the report;
        so does ``cflbounds report``)."""
        self.metadata.update(metadata, finished=now())
        text = self._text()
        written = write_report(json.loads(text)) if write_report is not None else None
        atomic_write_text(self.path, text, within=self.directory)
        return written

    def as_dict(self) -> dict:
        return {"metadata": json_safe(self.metadata), "verdicts": list(self.verdicts.values())}

    def _text(self) -> str:
        return json.dumps(self.as_dict(), indent=2, allow_nan=False)

    def _write(self) -> None:
        atomic_write_text(self.path, self._text(), within=self.directory)


def _check_resumable(path: Path, earlier: dict, metadata: dict, option: str) -> None:
    if not earlier["metadata"]:
        raise InvalidParameterError(f"{path} has no run metadata (written before cflbounds recorded it), so it "
                                    f"cannot be resumed; choose another {option}.")
    for setting in RESUME_SETTINGS:
        before, now = earlier["metadata"].get(setting), metadata[setting]
        if before != now:
            name = "cflbounds version" if setting == "cflbounds" else setting
            raise InvalidParameterError(f"{path} was made with {name} {before!r}, this run has {now!r}; resume it "
                                        f"with the same {name} or choose another {option}.")
    for entry in earlier["verdicts"]:  # each verdict states its own seed and scale; they must agree
        for setting in ("seed", "scale"):
            if setting in entry and entry[setting] != metadata[setting]:
                raise InvalidParameterError(f"{path}: the verdict of {entry['id']} has {setting} {entry[setting]!r}, "
                                            f"this run has {metadata[setting]!r}; choose another {option}.")
