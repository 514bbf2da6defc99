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

import inspect
import sys
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["CONTAINED", "ClaimFailure", "ContractError", "describe_failure", "declaring_root", "declared_at",
           "declaration_site", "mark_raised", "raised_by_claim"]

CONTAINED = (Exception, SystemExit)  # what a claim's code may raise without ending the run
STAGES = ("check", "bound", "evaluation", "contract", "declaration", "process")


class ContractError(ValueError):
    """A claim's code returned something that breaks cflbounds' contract (e.g. a domain's
    evaluation returning fewer instances than points); the message names the broken rule.
    ``function``: the claim's function that returned it (where :func:`describe_failure`
    points, since none of its frames is left in the traceback)."""

    def __init__(self, message: str, function=None):
        super().__init__(message)
        self.function = function


@dataclass(frozen=True)
class ClaimFailure:
    """``stage``: what was running (:data:`STAGES`; ``process``: the claim's worker process ended
    without a result, :mod:`cflbounds.verify.workers`); ``kind``: the exception's type name;
    ``message``: its text; ``where``: ``file:line`` of the innermost frame in the declaring
    package (else the innermost frame; for a :class:`ContractError`, where the function that
    returned the malformed value is defined); ``traceback``: the formatted traceback."""

    stage: str
    kind: str
    message: str
    where: str
    traceback: str = ""

    @property
    def summary(self) -> str:
        """One line: ``check raised: KeyError: 'x' (at mine/checks.py:12)``, or for a contract
        break ``contract broken: FOO.BAR: evaluate returned ... (at the function's definition)``."""
        if self.stage == "contract":
            return f"contract broken: {self.message} (at {self.where})"
        if self.kind == "ClaimTimeout":  # stopped where it was, or its worker process killed
            return f"{self.message}, " + (f"stopped at {self.where}" if self.where else "its process killed")
        if self.stage == "process":
            return f"{self.message} (its check is defined at {self.where})"
        return f"{self.stage} raised: {self.kind}: {self.message} (at {self.where})"

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


def describe_failure(error: BaseException, stage: str, *, root: Path | None = None) -> ClaimFailure:
    """``error`` as a :class:`ClaimFailure` at ``stage``; ``where`` is the innermost frame under
    ``root`` (:func:`declaring_root` of the claim's code), else the innermost frame."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    frames = traceback.extract_tb(error.__traceback__)
    inside = [frame for frame in frames if root is not None and _under(frame.filename, root)]
    frame = (inside or frames or [None])[-1]
    where = f"{_short(frame.filename)}:{frame.lineno}" if frame is not None else "unknown location"
    if isinstance(error, ContractError) and declared_at(error.function):
        where = declared_at(error.function)
    message = str(error) if not isinstance(error, SystemExit) else f"exit status {error.code!r}"
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return ClaimFailure(stage, type(error).__name__, message or "(no message)", where, text)


def declared_at(function) -> str | None:
    """``file:line`` where ``function`` is defined (None when it has no Python source)."""
    code = getattr(inspect.unwrap(function), "__code__", None) if function is not None else None
    return f"{_short(code.co_filename)}:{code.co_firstlineno}" if code is not None else None


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


def mark_raised(error: BaseException, claim_id: str) -> BaseException:
    """``error``, marked as raised by ``claim_id``'s code and let through on purpose (``--raise``:
    a plugin author wants the traceback, or a debugger's post-mortem). The command line then
    re-raises it as it is, even an ``InvalidParameterError``, which it would otherwise print as
    one line of bad usage (:func:`raised_by_claim`)."""
    try:
        error.cflbounds_claim = claim_id
    except AttributeError:  # an exception type without instance attributes: left unmarked
        pass
    return error


def raised_by_claim(error: BaseException) -> str | None:
    """The claim whose code raised ``error`` under ``--raise`` (:func:`mark_raised`), else None."""
    return getattr(error, "cflbounds_claim", None)
