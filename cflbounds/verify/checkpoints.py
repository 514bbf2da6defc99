"""Checkpoint files as data only: reading one never executes code.

``VerifyContext.checkpoint`` keeps a long claim's finished configurations in the run directory
(``partial/*.npz``) so that ``verify --resume`` skips them. A run directory may come from someone
else, so its files are read as *data*: no pickle (``pickle.loads`` of a crafted file runs any
code it names). A checkpoint is one ``.npz`` archive (read with ``allow_pickle=False``) holding a
JSON tree that describes the value and, for every array in it, one archive member:

* ``None``, ``bool``, ``int``, ``float`` (NaN and infinities kept), ``str``: JSON values;
* ``list``, ``tuple``, ``dict`` (keys of any of these types): JSON arrays and tagged objects;
* numpy arrays and scalars of numeric, boolean or fixed-width text dtypes (never ``object``);
* torch tensors (their dtype and device kept), torch and numpy dtypes, torch devices;
* pandas DataFrames and Series: Parquet bytes (pyarrow reads them as data);
* dataclasses of cflbounds, or of a plugin that registers them with :func:`checkpoint_type`:
  their fields, rebuilt by calling the class. A file names a class by its exact qualified
  name (``module:Name``): a registered one, or a dataclass *defined* in a cflbounds module
  already imported, found in that module's namespace by a dictionary lookup. No attribute is
  walked (an attribute of a module may import another: ``torch._dynamo``), nothing is
  imported and nothing unregistered is called, also when a name is refused.

Anything else is refused when the checkpoint is *written* (a :class:`TypeError` naming the
type and where it sits in the value), so an unreadable checkpoint is never left behind.

Reading is bounded by the file: an archive member must be stored uncompressed (``np.savez``
writes so; a compressed member of 1.5 MB may expand to gigabytes) and hold exactly the bytes
its ``.npy`` header's shape and dtype say, checked before anything is allocated; a frame's
Parquet metadata must promise no more than :data:`FRAME_EXPANSION` times its stored bytes
(plus :data:`FRAME_ALLOWANCE`); the JSON tree is parsed with a depth limit.
:func:`check_checkpoints` checks every ``partial/*.npz`` of a run directory this way before
``verify --resume`` starts any work.
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from .._read_json import JSONProblem, parse_json, read_regular
from .._validation import InvalidParameterError

__all__ = ["checkpoint_type", "encode", "decode", "check_checkpoints", "CheckpointFormatError"]

FORMAT = 1
_TREE = "tree"
_REGISTERED: dict[str, type] = {}
_DEVICE = re.compile(r"cpu|cuda(:\d+)?|mps")
_QUALIFIED = re.compile(r"(cflbounds(?:\.\w+)*):(\w+)")  # a cflbounds module and a name defined at its top level
_CLASS_NAME = re.compile(r"\w+(?:\.\w+)*:\w+(?:\.\w+)*")  # what _class_key writes: module:qualname
_KINDS = "biufcUSM"  # numpy dtype kinds that are data (never object, never void)
MAX_TREE_DEPTH = 200  # levels of nested lists, tuples, dicts and dataclasses in one checkpoint
FRAME_EXPANSION = 16  # a frame may decode to this many times its stored Parquet bytes (booleans: 8 per byte) ...
FRAME_ALLOWANCE = 16 * 2**20  # ... plus this many bytes (a column of nulls takes no room on disk)
_NPY_VERSIONS = ((1, 0), (2, 0))  # what np.save writes for data dtypes


class CheckpointFormatError(ValueError):
    """A checkpoint file that is not one this module writes (damaged, crafted or foreign)."""


def checkpoint_type(cls: type) -> type:
    """Allow the dataclass ``cls`` in checkpoints (a class decorator for plugin code; cflbounds'
    own dataclasses are allowed already). Its fields must be data as well."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"checkpoint_type needs a dataclass, got {cls!r}")
    _REGISTERED[_class_key(cls)] = cls
    return cls


def _class_key(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _allowed_class(key: str) -> type:
    """The dataclass a checkpoint names by ``key`` (module docstring): registered, or defined
    at the top level of an imported cflbounds module under exactly that name."""
    if key in _REGISTERED:
        return _REGISTERED[key]
    qualified = _QUALIFIED.fullmatch(key)
    module = sys.modules.get(qualified.group(1)) if qualified else None
    cls = vars(module).get(qualified.group(2)) if module is not None else None  # a dict lookup: no __getattr__
    if not (isinstance(cls, type) and cls.__module__ == qualified.group(1) and cls.__qualname__ == qualified.group(2)
            and dataclasses.is_dataclass(cls)):
        raise CheckpointFormatError(f"it names the class {key!r:.120}, which is not a registered data class")
    return cls


def encode(value) -> bytes:
    """``value`` as the bytes of a checkpoint file; TypeError if some part of it is not data."""
    arrays: list[np.ndarray] = []
    tree = _encode(value, arrays, "value")
    buffer = io.BytesIO()
    members = {f"a{index}": array for index, array in enumerate(arrays)}
    header = json.dumps({"format": FORMAT, "tree": tree}).encode()
    np.savez(buffer, **{_TREE: np.frombuffer(header, dtype=np.uint8)}, **members)
    return buffer.getvalue()


def decode(data: bytes):
    """The value of checkpoint bytes written by :func:`encode`; :class:`CheckpointFormatError`
    for anything else. Only data is read (no pickle, no import, no call but to the registered
    data classes) and only what the file's size allows is allocated (module docstring)."""
    header, members = _read_archive(data)
    return _decode(header["tree"], members)


def _read_archive(data: bytes) -> tuple[dict, dict]:
    """The JSON header and the arrays of a checkpoint archive, each member checked before it
    is read (module docstring)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = {info.filename.removesuffix(".npy"): _member_array(archive, info, len(data))
                       for info in archive.infolist()}
    except CheckpointFormatError:
        raise
    except Exception as error:  # a foreign or damaged file: say so, never guess
        raise CheckpointFormatError(f"not a cflbounds checkpoint ({type(error).__name__}: {error})") from None
    if _TREE not in members or members[_TREE].dtype != np.uint8 or members[_TREE].ndim != 1:
        raise CheckpointFormatError("not a cflbounds checkpoint (no tree)")
    try:
        header = parse_json(members.pop(_TREE).tobytes(), max_depth=MAX_TREE_DEPTH)
    except JSONProblem as problem:
        raise CheckpointFormatError(f"its tree is {problem}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT or "tree" not in header:
        raise CheckpointFormatError(f"unknown checkpoint format {header.get('format') if isinstance(header, dict) else header!r:.40}")
    return header, members


def _member_array(archive: zipfile.ZipFile, info: zipfile.ZipInfo, archive_size: int) -> np.ndarray:
    """One ``.npy`` member, read only once its header is known to describe exactly the bytes
    stored (so nothing larger than the file is allocated)."""
    where = f"its member {info.filename!r:.60}"
    if info.compress_type != zipfile.ZIP_STORED:
        raise CheckpointFormatError(f"{where} is compressed (cflbounds writes checkpoints uncompressed)")
    if info.file_size > archive_size or info.compress_size != info.file_size:
        raise CheckpointFormatError(f"{where} claims {info.file_size} bytes in a file of {archive_size}")
    with archive.open(info) as stream:
        version = np.lib.format.read_magic(stream)
        if version not in _NPY_VERSIONS:
            raise CheckpointFormatError(f"{where} is an .npy file of version {version}")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(stream)
        if dtype.hasobject or dtype.kind not in _KINDS:
            raise CheckpointFormatError(f"{where} has the dtype {dtype}, which is not data")
        expected = stream.tell() + math.prod(shape) * dtype.itemsize
        if expected != info.file_size:
            raise CheckpointFormatError(f"{where} has a header of shape {shape!s:.60} and dtype {dtype}, which need "
                                        f"{expected} bytes, but {info.file_size} are stored")
    with archive.open(info) as stream:
        return np.lib.format.read_array(stream, allow_pickle=False)


def check_checkpoints(directory) -> None:
    """Refuse a run directory whose ``partial/*.npz`` holds a file that is not a checkpoint of
    this module (damaged, crafted, compressed, a FIFO): one line naming the file and what is
    wrong (:class:`InvalidParameterError`), before ``verify --resume`` starts any work. The
    classes a file names are resolved when a claim reads it (a plugin may register them only
    then): here only their names' form is checked."""
    partial = Path(directory) / "partial"
    for path in sorted(partial.glob("*.npz")) if partial.is_dir() else ():
        try:
            header, members = _read_archive(read_regular(path))
            _decode(header["tree"], members, resolve=False)
        except (CheckpointFormatError, JSONProblem) as problem:
            raise InvalidParameterError(f"{path}: {problem}; delete it to recompute that part, or choose another "
                                        "--out.") from None


def _encode(value, arrays: list, where: str):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (list, tuple)):
        items = [_encode(item, arrays, f"{where}[{index}]") for index, item in enumerate(value)]
        return items if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        return {"dict": [[_encode(key, arrays, f"{where} key"), _encode(item, arrays, f"{where}[{key!r}]")]
                         for key, item in value.items()]}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.hasobject or array.dtype.kind not in _KINDS:
            raise TypeError(f"checkpoint: {where} is a numpy array of dtype {array.dtype}, which is not data "
                            "(object arrays would need pickle)")
        arrays.append(array)
        return {"array": len(arrays) - 1, "scalar": isinstance(value, np.generic)}
    if isinstance(value, np.dtype):
        if value.hasobject or value.kind not in _KINDS:
            raise TypeError(f"checkpoint: {where} is the numpy dtype {value}, which is not data")
        return {"numpy_dtype": value.str}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return {"torch_dtype": str(value).removeprefix("torch.")}
    if torch is not None and isinstance(value, torch.device):
        return {"torch_device": str(value)}
    if _is_tensor(value):
        array = value.detach().cpu().numpy()
        arrays.append(array)
        return {"tensor": len(arrays) - 1, "dtype": str(value.dtype).removeprefix("torch."),
                "device": str(value.device)}
    if isinstance(value, (pd.DataFrame, pd.Series)):
        frame = value.to_frame() if isinstance(value, pd.Series) else value
        buffer = io.BytesIO()
        frame.to_parquet(buffer, use_dictionary=False)  # no dictionary: a string's bytes are stored per row
        arrays.append(np.frombuffer(buffer.getvalue(), dtype=np.uint8))
        return {"frame": len(arrays) - 1, "series": isinstance(value, pd.Series)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        key = _class_key(type(value))
        try:
            _allowed_class(key)
        except CheckpointFormatError:
            raise TypeError(f"checkpoint: {where} is a {key}, a dataclass not registered with "
                            "cflbounds.claims.checkpoint_type") from None
        fields = {field.name: _encode(getattr(value, field.name), arrays, f"{where}.{field.name}")
                  for field in dataclasses.fields(value) if field.init}
        return {"dataclass": key, "fields": fields}
    raise TypeError(f"checkpoint: {where} is a {type(value).__module__}.{type(value).__qualname__}, which is not "
                    "data (allowed: numbers, strings, lists, tuples, dicts, numpy arrays, torch tensors, pandas "
                    "frames and registered dataclasses)")


def _is_tensor(value) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _member(members: dict, index) -> np.ndarray:
    if not isinstance(index, int) or f"a{index}" not in members:
        raise CheckpointFormatError(f"it refers to a missing array {index!r}")
    return members[f"a{index}"]


def _decode(tree, members: dict, resolve: bool = True):
    """The value of ``tree``; with ``resolve`` False, only checked: its classes' names are
    checked for their form and nothing is built of them (None stands for each)."""
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if isinstance(tree, list):
        return [_decode(item, members, resolve) for item in tree]
    if not isinstance(tree, dict) or len(tree) == 0:
        raise CheckpointFormatError(f"unexpected entry {tree!r:.80}")
    if "float" in tree:
        if tree["float"] not in ("nan", "inf", "-inf"):
            raise CheckpointFormatError(f"bad float {tree['float']!r:.40}")
        return float(tree["float"])
    if "tuple" in tree:
        return tuple(_decode(item, members, resolve) for item in _list(tree["tuple"]))
    if "dict" in tree:
        pairs = [_decode(pair, members, resolve) for pair in _list(tree["dict"])]
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
            raise CheckpointFormatError("a dict entry is not a key and a value")
        try:
            return {key: item for key, item in pairs}
        except TypeError:  # a key that is a list or a dict
            raise CheckpointFormatError("a dict key is not a number, a string, a tuple or a class instance") from None
    if "array" in tree:
        array = _member(members, tree["array"])
        return array[()] if tree.get("scalar") else array
    if "numpy_dtype" in tree:
        try:
            dtype = np.dtype(str(tree["numpy_dtype"])[:40])
        except TypeError:
            raise CheckpointFormatError(f"bad numpy dtype {tree['numpy_dtype']!r:.40}") from None
        if dtype.hasobject or dtype.kind not in _KINDS:
            raise CheckpointFormatError(f"the numpy dtype {dtype} is not data")
        return dtype
    if "torch_dtype" in tree:
        return _torch_dtype(tree["torch_dtype"])
    if "torch_device" in tree:
        return _torch_device(tree["torch_device"])
    if "tensor" in tree:
        return _tensor(_member(members, tree["tensor"]), tree.get("dtype"), tree.get("device"))
    if "frame" in tree:
        frame = _frame(_member(members, tree["frame"]).tobytes())
        return frame.iloc[:, 0] if tree.get("series") else frame
    if "dataclass" in tree:
        key, fields = str(tree["dataclass"]), tree.get("fields")
        if not isinstance(fields, dict):
            raise CheckpointFormatError(f"the fields of {key!r:.120} are not an object")
        if not resolve:  # a plugin may register its classes only once its claim runs: the name's form only
            if not _CLASS_NAME.fullmatch(key):
                raise CheckpointFormatError(f"it names the class {key!r:.120}, which is not a class's name")
            for item in fields.values():
                _decode(item, members, resolve)
            return None
        cls = _allowed_class(key)
        names = {field.name for field in dataclasses.fields(cls) if field.init}
        if set(fields) - names:
            raise CheckpointFormatError(f"{key} has no fields {sorted(set(fields) - names)!s:.200}")
        return cls(**{name: _decode(item, members) for name, item in fields.items()})
    raise CheckpointFormatError(f"unexpected entry {tree!r:.80}")


def _frame(data: bytes) -> pd.DataFrame:
    """The frame in Parquet bytes, read once its metadata promises no more than
    :data:`FRAME_EXPANSION` times the bytes stored (plus :data:`FRAME_ALLOWANCE`): its rows
    times each column's width (a string column: its uncompressed bytes; times its rows where it
    is dictionary-encoded, each row a copy of a dictionary value)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
        promised = 0
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            for column in range(row_group.num_columns):
                chunk = row_group.column(column)
                width = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12}.get(
                    chunk.physical_type)
                if width is None:  # a byte array
                    stored = chunk.total_uncompressed_size
                    width = 8 + (stored if "PLAIN_DICTIONARY" in chunk.encodings or "RLE_DICTIONARY" in chunk.encodings
                                 else stored / max(row_group.num_rows, 1))
                promised += row_group.num_rows * width
    except (pa.ArrowException, OSError, ValueError) as error:
        raise CheckpointFormatError(f"a frame is not Parquet ({error})") from None
    if promised > FRAME_EXPANSION * len(data) + FRAME_ALLOWANCE:
        raise CheckpointFormatError(f"a frame of {len(data)} bytes would take {promised:.0f} bytes once read")
    return pd.read_parquet(io.BytesIO(data))


def _list(value) -> list:
    if not isinstance(value, list):
        raise CheckpointFormatError(f"expected a list, got {value!r:.80}")
    return value


def _torch_dtype(name):
    import torch

    kind = vars(torch).get(name) if isinstance(name, str) else None  # a dict lookup: no lazy submodule import
    if not isinstance(kind, torch.dtype):
        raise CheckpointFormatError(f"bad torch dtype {name!r:.40}")
    return kind


def _torch_device(name):
    import torch

    if not isinstance(name, str) or not _DEVICE.fullmatch(name):
        raise CheckpointFormatError(f"bad torch device {name!r:.40}")
    return torch.device(name)


def _tensor(array: np.ndarray, dtype, device):
    import torch

    return torch.from_numpy(np.array(array)).to(dtype=_torch_dtype(dtype), device=_torch_device(device))
