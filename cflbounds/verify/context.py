"""What a claim's check is given: the run's settings (read-only), and where its results go."""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import pandas as pd

from .. import __version__
from .._files import atomic_write_bytes
from .._validation import Options
from .checkpoints import CheckpointFormatError, decode, encode

__all__ = ["SCALES", "SCALE_DESCRIPTIONS", "TABLE_KEYS", "TABLE_NAME_LENGTH", "VerifyContext", "table_name_of"]

SCALES = ("smoke", "default", "paper")
SCALE_OPTION = Options(SCALES)
SCALE_DESCRIPTIONS = {
    "smoke": "tiny problems and a few trials per claim (the test suite's size)",
    "default": "reduced protocols sized for minutes on a 2-core CPU",
    "paper": "the papers' experiment sizes (a GPU or Ray advised)",
}
TABLE_KEYS = ("claim", "run_seed")  # the columns every saved table starts with
# A table name is a file name (tables/<name>.parquet, or name@CLAIM-ID.parquet: claim IDs are as
# long at most, cflbounds.verify.claim.ID_LENGTH): letters, digits, '_', '-' and '.', never a path.
TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
TABLE_NAME_LENGTH = 100


def table_name_of(name: str, claim_id: str) -> str:
    """The name a claim's table ``name`` is kept under when another claim has a table of that name."""
    return f"{name}@{claim_id}"


@dataclass(frozen=True)
class VerifyContext:
    """What a claim's check is given: the run's settings, read-only, and where its results go.

    ``scale``: ``smoke``, ``default`` or ``paper`` (``cflbounds verify --help`` says what each
    runs). ``workdir``: the run directory (sweep
    stores and checkpoints go there; nothing is kept on disk if None), made absolute when the
    context is made, so a later ``os.chdir`` cannot move it. ``progress``: sweep progress,
    True/False/None (a bar only on an interactive terminal) or a callable told ``(cells done,
    cells to do)`` after each cell. ``claim`` is the claim being checked and ``package`` the
    distribution that declared it: the keys of :meth:`shared` and :meth:`checkpoint` are the
    package's own, so two plugins that happen to pick one key never see each other's experiment
    (give ``package`` to call a package's checks directly with its experiments shared).

    The settings cannot be changed (the dataclass is frozen: ``ctx.seed = 1`` raises), and the
    engine gives each claim a context of its own (:meth:`for_claim`), so one claim's code can
    never change the seed, scale or run directory another claim runs with. What a run shares
    between its claims: ``tables`` (every table saved so far, by name) and ``cache`` (the
    experiments of :meth:`shared`, by package and key).
    """

    scale: str = "default"
    seed: int = 0
    device: str = "cpu"
    executor: str = "local"
    workdir: Path | None = None
    progress: bool | None | Callable[[int, int], None] = field(default=None, compare=False)
    claim: str | None = None
    package: str = ""
    tables: dict = field(default_factory=dict, compare=False, repr=False)
    cache: dict = field(default_factory=dict, compare=False, repr=False)
    _table_owner: dict = field(default_factory=dict, compare=False, repr=False)
    _claim_tables: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.workdir is not None and str(self.workdir).strip():  # an empty one is refused where it is opened
            object.__setattr__(self, "workdir", Path(os.path.abspath(self.workdir)))

    def for_claim(self, claim_id: str, package: str = "", **settings) -> "VerifyContext":
        """The context one claim's check gets: this run's settings (``settings`` may replace
        ``progress``), its tables and shared experiments, and a record of its own saved tables
        (:attr:`claim_tables`)."""
        return replace(self, claim=claim_id, package=package, **settings)

    @property
    def claim_tables(self) -> dict:
        """The tables this claim's check saved, by the name each is kept under."""
        return self._claim_tables

    @property
    def table_owners(self) -> dict:
        """Which claim each table name of this run belongs to (a copy)."""
        return dict(self._table_owner)

    def adopt_tables(self, tables: dict, claim_id: str) -> None:
        """Keep ``tables``, saved by ``claim_id``'s check in another process (a worker, a Ray
        task), as this run's: the names are the ones that check kept them under."""
        for name, frame in tables.items():
            self.tables[name] = frame
            self._table_owner.setdefault(name, claim_id)

    def save_table(self, name: str, frame: pd.DataFrame) -> str:
        """Keep ``frame`` as the table ``name``, its first columns the claim and the run's seed
        (``claim`` and ``run_seed``), and return the name it is kept under. A table name belongs to one
        claim: when another claim of this run saved one of that name first (two plugins may well
        pick the same), this claim's is kept as ``name@CLAIM-ID`` instead, so neither is lost.
        ``name`` becomes a file name: letters, digits, ``_``, ``-`` and ``.``, not starting with
        ``.`` or ``-``, at most :data:`TABLE_NAME_LENGTH` characters (a ValueError otherwise)."""
        if not isinstance(name, str) or not TABLE_NAME.fullmatch(name) or len(name) > TABLE_NAME_LENGTH:
            raise ValueError(f"the table name {str(name)[:80]!r} is not a file name: letters, digits, '_', '-' and "
                             f"'.', starting with a letter, a digit or '_', at most {TABLE_NAME_LENGTH} characters")
        clash = [key for key in TABLE_KEYS if key in frame.columns]
        if clash:
            raise ValueError(f"table {name!r} already has the column(s) {clash}, which save_table adds")
        owner = self._table_owner.setdefault(name, self.claim)
        if None not in (owner, self.claim) and owner != self.claim:
            name = table_name_of(name, self.claim)
            self._table_owner[name] = self.claim
        keyed = frame.copy()  # the frame may be a shared experiment's: leave it as it is
        keyed.insert(0, "run_seed", self.seed)
        keyed.insert(0, "claim", self.claim)
        self.tables[name] = self._claim_tables[name] = keyed
        return name

    def discard_tables(self) -> None:
        """Forget the tables this claim saved (its check failed: half a claim's tables would
        read as a finished experiment)."""
        for name in self._claim_tables:
            self.tables.pop(name, None)
            self._table_owner.pop(name, None)
        self._claim_tables.clear()

    def _scoped(self, key):
        return (self.package, key)

    def shared(self, key, compute):
        """``compute()`` once per key per context and declaring package (an experiment used by
        several claims of one package; another package's identical key is another experiment)."""
        scoped = self._scoped(key)
        if scoped not in self.cache:
            self.cache[scoped] = compute()
        return self.cache[scoped]

    def checkpoint(self, key, compute):
        """Like :meth:`shared`, and kept on disk: with a ``workdir`` the result of ``compute()``
        is written atomically to ``workdir/partial/`` and read back by a later run in the same
        directory (``verify --resume``), so a long claim killed half-way keeps its finished
        configurations. Use it for configurations that take minutes at the paper scale. The
        result must be data (numbers, strings, lists, dicts, numpy arrays, torch tensors,
        pandas frames, dataclasses registered with :func:`cflbounds.claims.checkpoint_type`), which is
        all a file is ever read as: resuming a run directory someone sent never executes code
        from it. The file name holds the version, scale, seed, device and package too, so a file
        is only ever read under the settings that made it."""
        scoped = self._scoped(key)
        if scoped in self.cache or self.workdir is None:
            return self.shared(key, compute)
        path = self._checkpoint_path(key)
        if path.exists():
            try:
                self.cache[scoped] = decode(path.read_bytes())
            except CheckpointFormatError as error:
                raise CheckpointFormatError(f"{path}: {error}; delete it to recompute that part") from None
        else:
            data = encode(compute())  # refuses what is not data before anything is written
            atomic_write_bytes(path, data, within=self.workdir)  # partial/ made; never through a link
            self.cache[scoped] = decode(data)  # what a resumed run reads: both runs judge the same values
        return self.cache[scoped]

    def _checkpoint_path(self, key) -> Path:
        """``workdir/partial/<slug>-<hash>.npz``: the slug (at most 60 characters of letters,
        digits, '-' and '.', never first) says what it holds, the hash of every setting it
        depends on keeps files apart; so any key gives one short file name."""
        identity = repr((__version__, self.scale, self.seed, self.device, self.package, key))
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", repr((self.package, key))).strip("-.")[:60]
        return Path(self.workdir) / "partial" / f"{slug}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.npz"
