"""A claim's own code failed: what raised, where in the plugin, and at which stage.

cflbounds runs other people's code (a plugin's check, bound or domain evaluation) and contains
its failures the way pytest contains a failing test: the exception becomes that claim's
``error`` verdict (or falsify outcome), every other claim runs on, every output is written. A
:class:`ClaimFailure` is what a reader needs to fix it: the exception's type and message, the
*plugin's* file and line (the innermost frame of the traceback inside the package that declared
the claim, not cflbounds' own frames around it) and the traceback's text.

``KeyboardInterrupt`` (and the interpreter's other non-``Exception`` signals except
``SystemExit``) are never contained: the user stops a run, a plugin does not.
"""
from __future__ import annotations

import sys
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["CONTAINED", "ClaimFailure", "ContractError", "describe_failure", "declaring_root", "defined_at",
           "declaration_site"]

CONTAINED = (Exception, SystemExit)  # what a claim's code may raise without ending the run
STAGES = ("check", "bound", "evaluation", "contract", "declaration")


class ContractError(ValueError):
    """A claim's code returned something that breaks cflbounds' contract (e.g. a domain's
    evaluation returning fewer instances than points); the message names the broken rule."""


@dataclass(frozen=True)
class ClaimFailure:
    """``stage``: what was running (:data:`STAGES`); ``kind``: the exception's type name;
    ``message``: its text; ``where``: ``file:line`` of the innermost frame in the declaring
    package (else the innermost frame); ``traceback``: the formatted traceback."""

    stage: str
    kind: str
    message: str
    where: str
    traceback: str = ""

    @property
    def summary(self) -> str:
        """One line: ``check raised KeyError: 'x' at mine/checks.py:12``."""
        verb = "broke the contract" if self.stage == "contract" else "raised"
        return f"{self.stage} {verb}: {self.kind}: {self.message} (at {self.where})"

    def as_details(self) -> dict:
        """The strings a verdict's ``details`` (or a falsify result) carries."""
        return {f"error_{key}": value for key, value in asdict(self).items()}

    @classmethod
    def from_details(cls, details: dict) -> "ClaimFailure | None":
        fields = {key[len("error_"):]: value for key, value in details.items() if key.startswith("error_")}
        return cls(**fields) if set(fields) >= {"stage", "kind", "message", "where"} else None


def declaring_root(*functions) -> Path | None:
    """The directory of the top-level package that defines the first of ``functions`` with a
    module (``.../cflbounds_textbook`` for a check in ``cflbounds_textbook.hoeffding``), or
    the module's file itself for a top-level module; None when none is found."""
    for function in functions:
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        if module is None:
            continue
        top = sys.modules.get(module.__name__.split(".")[0], module)
        location = getattr(top, "__file__", None)
        if location is None:  # a namespace package
            paths = list(getattr(top, "__path__", []))
            return Path(paths[0]).resolve() if paths else None
        location = Path(location).resolve()
        return location.parent if location.name == "__init__.py" else location
    return None


def declaration_site() -> str:
    """``file:line`` of the code that made the declaration being constructed: the first frame
    up the stack outside cflbounds' declaration classes and the dataclass machinery."""
    frame = sys._getframe(1)
    own = {__file__, str(Path(__file__).with_name("domain.py")), str(Path(__file__).with_name("claim.py"))}
    def machinery(code) -> bool:  # our declaration classes, or the __init__ that dataclass generated for them
        return code.co_filename in own or (code.co_filename.startswith("<") and code.co_name == "__init__")

    while frame is not None and machinery(frame.f_code):
        frame = frame.f_back
    return f"{_short(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else ""


def defined_at(function) -> str:
    """``file:line`` where ``function`` is defined (what a contract error points to: the code
    that returned the wrong thing), or its repr when it has no source."""
    code = getattr(getattr(function, "__wrapped__", function), "__code__", None)
    return f"{_short(code.co_filename)}:{code.co_firstlineno}" if code is not None else repr(function)


def describe_failure(error: BaseException, stage: str, *, root: Path | None = None,
                     where: str | None = None) -> ClaimFailure:
    """``error`` as a :class:`ClaimFailure` at ``stage``; ``where`` defaults to the innermost
    frame under ``root`` (:func:`declaring_root` of the claim's code), else the innermost frame."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    if where is None:
        frames = traceback.extract_tb(error.__traceback__)
        inside = [frame for frame in frames if root is not None and _under(frame.filename, root)]
        frame = (inside or frames or [None])[-1]
        where = f"{_short(frame.filename)}:{frame.lineno}" if frame is not None else "unknown location"
    message = str(error) if not isinstance(error, SystemExit) else f"exit status {error.code!r}"
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return ClaimFailure(stage, type(error).__name__, message or "(no message)", where, text)


def _under(filename: str, root: Path) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, RuntimeError):
        return False
    return path == root or root in path.parents


def _short(filename: str) -> str:
    """``filename`` relative to the working directory when under it, else as it is."""
    try:
        return str(Path(filename).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return filename
