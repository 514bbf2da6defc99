"""One claim's check in a worker process of its own (:mod:`.workers`), as ``cflbounds verify``
runs every claim by default.

The worker runs the same :func:`~cflbounds.verify.check.check_claim` as a check in this
process, with the run's settings, the tables names other claims took (so a clash is resolved
as in one process) and the experiments the claim's package shared so far
(:meth:`VerifyContext.shared`, read from files only when asked for: :class:`SharedExperiments`);
it sends back its verdict and its tables in the checkpoint format (:mod:`.checkpoints`: data
only, decoded here without executing anything), and writes the experiments it computed as files
for the claims after it. An experiment that is not data (a problem object, say) cannot cross:
a later claim of the package computes it again, which costs time, never a different verdict.

When the worker gives no result (it exited, crashed, was killed, or ran past the claim's time
limit) the claim's verdict is ``error`` saying so, and the run goes on.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from .check import check_claim
from .checkpoints import decode, encode
from .context import VerifyContext
from .registry import claims, get_claim
from .verdict import Verdict
from .workers import WorkerFailure, run_in_worker

__all__ = ["SharedExperiments", "check_in_worker"]


class SharedExperiments:
    """The experiments a run's claims shared so far: a private temporary folder holding one file
    per experiment, in the checkpoint format (:mod:`.checkpoints`), written by the worker that
    computed it, and the cache key ``(package, key)`` of each. A later worker of that package
    reads (and decodes) only the experiments its claim asks for (:class:`_FromFiles`), so a large
    experiment costs nothing to the claims that do not use it."""

    def __init__(self):
        self._folder = tempfile.TemporaryDirectory(prefix="cflbounds-shared-")
        self.folder = Path(self._folder.name)
        self.files: dict[tuple, str] = {}

    def of_package(self, package: str) -> list:
        return [[key, path] for key, path in self.files.items() if key[0] == package]

    def add(self, entries: list) -> None:
        """Keep the ``[key, file name]`` pairs a worker wrote into :attr:`folder`."""
        for key, name in entries:
            path = self.folder / name
            if path.parent == self.folder and path.is_file():  # a name the worker made, inside the folder
                self.files[tuple(key)] = str(path)

    def close(self) -> None:
        self._folder.cleanup()


class _FromFiles(dict):
    """A context's cache whose experiments from other workers are read from their files when a
    claim first asks for one (``in`` and ``[]``, what :meth:`VerifyContext.shared` uses)."""

    def __init__(self, files: list):
        super().__init__()
        self.pending = {tuple(key): path for key, path in files}

    def __contains__(self, key) -> bool:
        return super().__contains__(key) or key in self.pending

    def __getitem__(self, key):
        if not super().__contains__(key) and key in self.pending:
            self[key] = decode(Path(self.pending.pop(key)).read_bytes())
        return super().__getitem__(key)


def check_in_worker(claim_id: str, context: VerifyContext, *, search: Callable | None = None,
                    timeout: float | None = None, shared: SharedExperiments,
                    on_cells: Callable[[int, int], None] | None = None,
                    preload: tuple[str, ...] = ()) -> tuple[Verdict, dict]:
    """:func:`~cflbounds.verify.check.check_claim` of ``claim_id`` in a fresh worker process, at
    most ``timeout`` seconds; ``on_cells(done, total)`` hears of its sweep's cells. The tables
    it saved join ``context.tables``, the experiments it shared join ``shared``."""
    claim = get_claim(claim_id)
    if claim.check is None and claim.domain is None:  # nothing of the claim's own code runs
        return check_claim(claim_id, context)
    settings = {"scale": context.scale, "seed": context.seed, "device": context.device,
                "executor": context.executor, "workdir": context.workdir,
                "progress": None if callable(context.progress) or on_cells else context.progress}
    request = (claim_id, claim.package, claim.statement, settings, context.table_owners,
               shared.of_package(claim.package), str(shared.folder), search, on_cells is not None)
    started = time.perf_counter()
    try:
        reply = decode(run_in_worker(_check_here, request, timeout=timeout, preload=preload,
                                     on_message=lambda message: on_cells(*message["cells"]) if on_cells else None,
                                     name=f"cflbounds {claim_id}"))
    except WorkerFailure as failure:
        verdict = _failed_verdict(claim, context, failure)
        verdict.seconds = time.perf_counter() - started
        return verdict, {}
    shared.add(reply["shared"])
    context.adopt_tables(reply["tables"], claim_id)
    return Verdict.from_dict(reply["verdict"]), reply["tables"]


def _failed_verdict(claim, context: VerifyContext, failure: WorkerFailure) -> Verdict:
    what = failure.as_claim_failure("check", claim.check)
    return Verdict(claim.id, "error", {}, context.seed, 0, 0.0, what.summary, claim.statement, context.scale,
                   details=what.as_details())


def _check_here(claim_id: str, package: str, statement: str, settings: dict, owners: dict, experiments: list,
                folder: str, search, forward_cells: bool, *, send) -> bytes:
    """The worker's side: find the claim among the installed plugins' (the one the caller
    means: same package and statement), check it, and encode what goes back."""
    claim = claims().get(claim_id)
    if claim is None or (claim.package, claim.statement) != (package, statement):
        raise LookupError(f"{claim_id} (package {package!r}) is not among the claims of the installed plugins, so it "
                          "cannot run in a worker process (a claim registered another way, e.g. a test's fake entry "
                          "point, runs with --isolation none)")
    bar = settings.pop("progress")
    progress = (lambda done, total: send({"cells": [done, total]})) if forward_cells else bar
    context = VerifyContext(**settings, progress=progress, _table_owner=owners, cache=_FromFiles(experiments))
    known = {tuple(key) for key, _ in experiments}  # in files already, also once read from them
    verdict, tables = check_claim(claim_id, context, search=search)
    added = []
    for key in set(context.cache) - known:
        try:
            data = encode(context.cache[key])
        except TypeError:  # not data: a later claim computes it again (module docstring)
            continue
        name = f"{claim_id}-{len(added)}.npz"  # claim IDs are safe file names (verify.claim.ID_PATTERN)
        (Path(folder) / name).write_bytes(data)
        added.append([key, name])
    return encode({"verdict": verdict.to_dict(), "tables": tables, "shared": added})
