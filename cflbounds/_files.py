"""Writes that stay inside their run directory: atomic file writes, the checks a run directory
passes before any work, and one clear error when a write fails.

A file is written to a uniquely named temporary file in its own directory and renamed into
place (``os.replace`` is atomic on POSIX), so a killed process never leaves a half-written
file and a reader sees either the old content or the new. A killed process may leave the
temporary file (``.NAME.XXXXXXXX.tmp``): :func:`open_run_directory` removes those.

A run directory is someone's to send and someone else's to resume, so nothing in it is
trusted to lead where its name says: :func:`open_run_directory` refuses, before any work, a
directory where an entry a command writes (or a file or folder inside such a folder) is a
symbolic link, and a write given ``within=`` its run directory refuses a link that appeared
since on the way to its file. The final step cannot follow a link anyway: the temporary file
is created with ``O_CREAT | O_EXCL`` (never through a link) and the rename replaces a link at
the target rather than writing where it points.
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd

from ._validation import InvalidParameterError

__all__ = ["WriteError", "atomic_write", "atomic_write_text", "atomic_write_bytes", "atomic_write_table",
           "absolute_directory", "writable_directory", "open_run_directory", "safe_file_name"]

# What this module's own writes leave behind when their process is killed: a temporary file of
# atomic_write (mkstemp: the prefix, 8 characters of [a-z0-9_], the suffix), one of the sweep
# store before it wrote through atomic_write, and writable_directory's probe.
_TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp|\.tmp-[a-z0-9_]{8}\.parquet|\.write-probe-[a-z0-9_]{8}")
_PREFIX_LENGTH = 64  # of the target's name in its temporary file's: the temporary's name stays short
NAME_LENGTH = 255  # bytes in a file name on every common file system (NAME_MAX)
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@\-]*")


class WriteError(Exception):
    """A file of a run could not be written: the file system refused it (no space left, a
    permission lost, a name too long) or a symbolic link appeared on its way (a write through
    it would leave the run directory). One line naming the file; ``cflbounds`` exits with
    status 74 (sysexits' EX_IOERR): the run stopped, what it wrote before is kept."""


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def safe_file_name(name: str, what: str) -> str:
    """``name`` if it is safe as one file name of a run directory (letters, digits, ``_``, ``-``,
    ``.`` and ``@``, not starting with ``.`` or ``-``, at most :data:`NAME_LENGTH` bytes), else
    :class:`WriteError` naming ``what`` it is. The names a run derives from claim IDs and table
    names pass by construction (:data:`cflbounds.verify.claim.ID_LENGTH`): this is the last
    check before a file is made of one."""
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or len(name.encode()) > NAME_LENGTH:
        raise WriteError(f"Cannot write {what} {str(name)[:80]!r}: not a safe file name (letters, digits, '_', '-', "
                         f"'.', '@'; at most {NAME_LENGTH} bytes).")
    return name


def _check_inside(path: Path, root: Path) -> None:
    """Raise :class:`WriteError` unless ``path`` lies under ``root`` with no symbolic link and
    no ``..`` between them; create the missing folders from ``root`` on."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = ("..",)
    if not parts or ".." in parts:
        raise WriteError(f"Cannot write {path}: it is not inside the run directory {root}.")
    current = root
    for index, part in enumerate(("", *parts)):
        current = current / part
        if index and current.is_symlink():
            raise WriteError(f"Cannot write {path}: {current} is a symbolic link, and a write through it would "
                             f"leave the run directory {root}.")
        if index < len(parts) and not current.is_dir():
            try:
                current.mkdir(parents=not index)
            except OSError as error:  # a file in the way, or a link made meanwhile (checked again next time)
                raise WriteError(f"Cannot write {path}: cannot create the folder {current} ({_reason(error)}).") \
                    from error


def atomic_write(path, write: Callable[[Path], None], *, within=None) -> Path:
    """Call ``write(temporary_path)`` and rename the result to ``path``. ``within``: the run
    directory ``path`` belongs to: the folders between them are created, and the write is
    refused if one of them, or ``path`` itself, is a symbolic link. Every failure of the file
    system is a :class:`WriteError` naming ``path``."""
    path = Path(path)
    if within is not None:
        _check_inside(path, Path(within))
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:_PREFIX_LENGTH]}.", suffix=".tmp")
    except OSError as error:
        raise WriteError(f"Cannot write {path}: {_reason(error)}.") from error
    os.close(handle)
    try:
        write(Path(temporary))
        os.chmod(temporary, 0o644)  # mkstemp makes it private; results are read by others
        os.replace(temporary, path)
    except OSError as error:
        raise WriteError(f"Cannot write {path}: {_reason(error)}.") from error
    finally:
        with contextlib.suppress(OSError):
            os.remove(temporary)
    return path


def atomic_write_text(path, text: str, *, within=None) -> Path:
    return atomic_write(path, lambda temporary: temporary.write_text(text, encoding="utf-8"), within=within)


def atomic_write_bytes(path, data: bytes, *, within=None) -> Path:
    return atomic_write(path, lambda temporary: temporary.write_bytes(data), within=within)


def atomic_write_table(path, frame: pd.DataFrame, *, within=None) -> Path:
    return atomic_write(path, lambda temporary: frame.to_parquet(temporary, index=False), within=within)


def absolute_directory(location, option: str) -> Path:
    """``location`` (an option's value naming a directory) as an absolute path, symbolic links
    resolved: a command resolves its run directory once, before any work, so that a claim's
    code changing the working directory cannot send the rest of the run elsewhere. An empty
    value raises :class:`InvalidParameterError` naming ``option``."""
    if isinstance(location, str) and not location.strip():
        raise InvalidParameterError(f"The '{option}' option must name a directory. Got an empty path instead.")
    return Path(location).resolve()


def writable_directory(location, option: str) -> Path:
    """``location`` as an absolute directory (:func:`absolute_directory`) that exists and takes
    new files, created if missing.

    Checked by doing it (creating the directory and a probe file in it), since permission
    bits do not tell the whole story (read-only mounts, immutable directories, root).
    Raises :class:`InvalidParameterError` naming ``option`` and the location otherwise.
    """
    path = absolute_directory(location, option)
    try:
        if path.exists() and not path.is_dir():
            raise InvalidParameterError(
                f"The '{option}' option must name a directory. Got {str(path)!r}, which is a file.")
        path.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=path, prefix=".write-probe-")
        os.close(handle)
        os.remove(probe)
    except OSError as error:
        raise InvalidParameterError(
            f"The '{option}' option must name a writable directory. Got {str(path)!r}: {_reason(error)}.") from None
    return path


def _refuse(entry: Path, directory: Path, option: str, what: str) -> InvalidParameterError:
    return InvalidParameterError(f"{entry} {what}; a run writes only inside its directory {directory}: remove it or "
                                 f"choose another {option}.")


def _check_entry(entry: Path, directory: Path, option: str, folder: bool) -> None:
    if entry.is_symlink():
        raise _refuse(entry, directory, option, f"is a symbolic link (to {os.readlink(entry)})")
    if entry.exists() and (not entry.is_dir() if folder else not entry.is_file()):
        raise _refuse(entry, directory, option, f"is not a {'folder' if folder else 'regular file'}")


def _entries(folder: Path):
    """Every entry under ``folder`` (itself excluded), links not followed."""
    for parent, folders, files in os.walk(folder, followlinks=False):
        for name in folders + files:
            yield Path(parent) / name


def open_run_directory(location, option: str, *, files=(), folders=()) -> Path:
    """``location`` as the absolute run directory of a command that writes ``files`` (names or
    glob patterns such as ``cell-*.parquet``) and ``folders`` (each with its whole tree) in it,
    checked before any work: a writable directory (created if missing: :func:`writable_directory`)
    none of those entries of which, nor any entry inside those folders, is a symbolic link (a
    write through it would land outside; the directory itself may be one: it is resolved here,
    once) or of the wrong kind (a file where a folder goes). Refusals raise
    :class:`InvalidParameterError` naming the entry and ``option``. Temporary files a killed
    run's atomic writes left in the directory or those folders are removed."""
    directory = writable_directory(location, option)
    for name in files:
        for entry in sorted(directory.glob(name)) if any(char in name for char in "*?[") else [directory / name]:
            _check_entry(entry, directory, option, folder=False)
    trees = [directory / name for name in folders]
    for tree in trees:
        _check_entry(tree, directory, option, folder=True)
        for entry in _entries(tree):
            if entry.is_symlink():
                raise _refuse(entry, directory, option, f"is a symbolic link (to {os.readlink(entry)})")
    for entry in [*directory.iterdir(), *(entry for tree in trees if tree.is_dir() for entry in _entries(tree))]:
        if _TEMPORARY.fullmatch(entry.name) and entry.is_file():
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
    return directory
