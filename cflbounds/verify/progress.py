"""The one progress display of a verify run, on stderr (stdout stays for results and ``--json``).

On a terminal: a live line (claims done/total, the claim running with its sweep cells,
elapsed time, an ETA from the measured claim costs, :mod:`cflbounds.verify.costs`), and each
verdict printed above it as its claim finishes. Elsewhere (a log, a pipe, CI): one plain line
per finished claim, nothing else.
"""
from __future__ import annotations

import shutil
import sys
import threading
import time

from .._words import first_clause
from .costs import duration, remaining_seconds
from .verdict import Verdict

__all__ = ["RunDisplay", "PlainDisplay", "TerminalDisplay", "run_display", "verdict_line", "fit_line", "width"]


def width() -> int:
    """The terminal's width (``$COLUMNS`` first; 100 when stderr is not a terminal)."""
    return shutil.get_terminal_size((100, 24)).columns


def fit_line(text: str, columns: int | None = None) -> str:
    """``text`` cut to ``columns`` (default: :func:`width`), a cut ending in ``...`` (never
    ``~``, which the papers use in ``<~``): a progress line is one line; the whole text is in the
    run's table and files."""
    columns = columns or width()
    return text if len(text) <= columns else text[: max(columns - 3, 0)] + "..."


def verdict_line(verdict: Verdict, done: int, total: int, *, width: int | None = None, id_width: int = 11) -> str:
    """``[3/21] IFCA.C1  rate-consistent  12.3 s  summary...``: the summary's first clause, the
    line cut to ``width`` (default: the terminal's, 100 where stderr is not one)."""
    head = f"[{done}/{total}] {verdict.id:<{id_width}} {verdict.verdict:<17} {verdict.seconds:7.1f} s  "
    return fit_line(head + first_clause(verdict.summary), width)


class RunDisplay:
    """Silent; the plain and terminal displays tell what it is told. ``verify_claims`` calls
    :meth:`start` once, :meth:`claim_started` and :meth:`claim_finished` per claim checked,
    :meth:`cells` from a running sweep (it is the sweep's ``progress`` callable), then
    :meth:`close`. On Ray, :meth:`claims_scheduled` replaces :meth:`claim_started`: every claim
    is a task at once, and the count of finished claims counts tasks finished on any node."""

    def __init__(self, costs: dict[str, float] | None = None, clock=time.monotonic):
        self.costs, self.clock = costs or {}, clock
        self.pending: list[str] = []
        self.finished: dict[str, float] = {}
        self.running: str | None = None
        self.scheduled: list[str] = []  # claims running as Ray tasks
        self.total = self.done = 0
        self.id_width = 11
        self.started = self.claim_started_at = 0.0
        self.sweep = ""

    def start(self, claims: list[str], kept: int = 0) -> None:
        """``claims``: the claims to check, in order; ``kept``: claims already done (resumed)."""
        self.pending, self.total, self.done = list(claims), len(claims) + kept, kept
        self.id_width = max([11, *map(len, claims)])  # the ID column of the verdict lines
        self.started = self.clock()

    def claim_started(self, claim_id: str) -> None:
        self.pending.remove(claim_id)
        self.running, self.claim_started_at, self.sweep = claim_id, self.clock(), ""

    def claims_scheduled(self, claim_ids: list[str]) -> None:
        for claim_id in claim_ids:
            self.pending.remove(claim_id)
        self.scheduled = list(claim_ids)

    def cells(self, done: int, total: int) -> None:
        self.sweep = f"cells {done}/{total}"

    def claim_finished(self, verdict: Verdict) -> None:
        self.finished[verdict.id] = verdict.seconds
        if verdict.id in self.scheduled:
            self.scheduled.remove(verdict.id)
        self.running, self.done = None, self.done + 1

    def eta(self) -> float | None:
        """Seconds still to go as if the claims left ran one after the other (on Ray, where they
        run at once, an upper bound)."""
        running = (self.running, self.clock() - self.claim_started_at) if self.running else None
        return remaining_seconds(self.costs, self.finished, self.pending + self.scheduled, running)

    def close(self) -> None:
        pass


class PlainDisplay(RunDisplay):
    """One line per finished claim (id, verdict, seconds, short summary) on ``stream``."""

    def __init__(self, stream, **options):
        super().__init__(**options)
        self.stream = stream

    def claim_finished(self, verdict: Verdict) -> None:
        super().claim_finished(verdict)
        print(verdict_line(verdict, self.done, self.total, id_width=self.id_width), file=self.stream, flush=True)


class TerminalDisplay(RunDisplay):
    """A live tqdm line with verdict lines written above it; a thread redraws the line every
    ``refresh`` seconds so elapsed time and ETA move while a long claim runs (None: no thread)."""

    def __init__(self, stream, refresh: float | None = 1.0, **options):
        super().__init__(**options)
        self.stream, self.refresh, self.lock = stream, refresh, threading.Lock()
        self.bar, self.stopped = None, threading.Event()

    def start(self, claims, kept=0):
        from tqdm.auto import tqdm

        super().start(claims, kept)
        self.bar = tqdm(total=self.total, initial=self.done, file=self.stream, bar_format="{desc}", leave=False)
        self._draw()
        if self.refresh:
            threading.Thread(target=self._redraw, name="cflbounds-progress", daemon=True).start()

    def status(self, columns: int | None = None) -> str:
        """The live line, within ``columns`` (default: the terminal's): in words where they fit,
        else without them, else cut."""
        running = (f"{self.running} {self.sweep}".rstrip() if self.running else
                   f"{len(self.scheduled)} running as Ray tasks" if self.scheduled else "-")
        elapsed, eta = duration(self.clock() - self.started), duration(self.eta())
        words = f"verify {self.done}/{self.total} claims | {running} | {elapsed} elapsed | ETA {eta}"
        terse = f"{self.done}/{self.total} {running} {elapsed} ETA {eta}"
        columns = columns or width()
        return words if len(words) < columns else fit_line(terse, columns - 1)  # the cursor's column stays free

    def claim_started(self, claim_id):
        with self.lock:
            super().claim_started(claim_id)
            self._draw()

    def claims_scheduled(self, claim_ids):
        with self.lock:
            super().claims_scheduled(claim_ids)
            self._draw()

    def cells(self, done, total):
        with self.lock:
            super().cells(done, total)
            self._draw()

    def claim_finished(self, verdict):
        from tqdm.auto import tqdm

        with self.lock:
            super().claim_finished(verdict)
            tqdm.write(verdict_line(verdict, self.done, self.total, id_width=self.id_width), file=self.stream)
            self._draw()

    def close(self):
        self.stopped.set()
        with self.lock:
            if self.bar is not None:
                self.bar.close()

    def _draw(self):
        if self.bar is not None:
            self.bar.set_description_str(self.status(), refresh=True)

    def _redraw(self):
        while not self.stopped.wait(self.refresh):
            with self.lock:
                if not self.stopped.is_set():
                    self._draw()


def run_display(stream=None, *, interactive: bool | None = None, costs=None) -> RunDisplay:
    """The display for ``stream`` (stderr by default): live on a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    interactive = stream.isatty() if interactive is None else interactive
    return TerminalDisplay(stream, costs=costs) if interactive else PlainDisplay(stream, costs=costs)
