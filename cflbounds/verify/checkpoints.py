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
  their fields, rebuilt by calling the class. A file names a class only by a key of the
  registry, so it can never make this module import a module or call anything unregistered.

Anything else is refused when the checkpoint is *written* (a :class:`TypeError` naming the
type and where it sits in the value), so an unreadable checkpoint is never left behind.
"""
from __future__ import annotations

import dataclasses
import io
import json
import math
import re
import sys

import numpy as np
import pandas as pd

__all__ = ["checkpoint_type", "encode", "decode", "CheckpointFormatError"]

FORMAT = 1
_TREE = "tree"
_REGISTERED: dict[str, type] = {}
_DEVICE = re.compile(r"cpu|cuda(:\d+)?|mps")


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
    if key in _REGISTERED:
        return _REGISTERED[key]
    module_name, _, qualname = key.partition(":")
    module = sys.modules.get(module_name) if module_name.split(".")[0] == "cflbounds" else None
    cls = module
    for part in qualname.split(".") if module is not None else ():
        cls = getattr(cls, part, None)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise CheckpointFormatError(f"it names the class {key!r}, which is not a registered data class")
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
    for anything else. Only data is read: no pickle, no import, no call but to the registered
    data classes."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            members = {name: archive[name] for name in archive.files}
        header = json.loads(members.pop(_TREE).tobytes().decode())
    except CheckpointFormatError:
        raise
    except Exception as error:  # a foreign or damaged file: say so, never guess
        raise CheckpointFormatError(f"not a cflbounds checkpoint ({type(error).__name__}: {error})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT or "tree" not in header:
        raise CheckpointFormatError(f"unknown checkpoint format {header.get('format') if isinstance(header, dict) else header!r}")
    return _decode(header["tree"], members)


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
        if array.dtype.hasobject or array.dtype.kind not in "biufcUSM":
            raise TypeError(f"checkpoint: {where} is a numpy array of dtype {array.dtype}, which is not data "
                            "(object arrays would need pickle)")
        arrays.append(array)
        return {"array": len(arrays) - 1, "scalar": isinstance(value, np.generic)}
    if isinstance(value, np.dtype):
        if value.hasobject or value.kind not in "biufcUSM":
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
        frame.to_parquet(buffer)
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


def _decode(tree, members: dict):
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if isinstance(tree, list):
        return [_decode(item, members) for item in tree]
    if not isinstance(tree, dict) or len(tree) == 0:
        raise CheckpointFormatError(f"unexpected entry {tree!r:.80}")
    if "float" in tree:
        if tree["float"] not in ("nan", "inf", "-inf"):
            raise CheckpointFormatError(f"bad float {tree['float']!r:.40}")
        return float(tree["float"])
    if "tuple" in tree:
        return tuple(_decode(item, members) for item in _list(tree["tuple"]))
    if "dict" in tree:
        pairs = [_decode(pair, members) for pair in _list(tree["dict"])]
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
            raise CheckpointFormatError("a dict entry is not a key and a value")
        return {key: item for key, item in pairs}
    if "array" in tree:
        array = _member(members, tree["array"])
        return array[()] if tree.get("scalar") else array
    if "numpy_dtype" in tree:
        try:
            dtype = np.dtype(str(tree["numpy_dtype"]))
        except TypeError:
            raise CheckpointFormatError(f"bad numpy dtype {tree['numpy_dtype']!r:.40}") from None
        if dtype.hasobject:
            raise CheckpointFormatError("an object dtype is not data")
        return dtype
    if "torch_dtype" in tree:
        return _torch_dtype(tree["torch_dtype"])
    if "torch_device" in tree:
        return _torch_device(tree["torch_device"])
    if "tensor" in tree:
        return _tensor(_member(members, tree["tensor"]), tree.get("dtype"), tree.get("device"))
    if "frame" in tree:
        frame = pd.read_parquet(io.BytesIO(_member(members, tree["frame"]).tobytes()))
        return frame.iloc[:, 0] if tree.get("series") else frame
    if "dataclass" in tree:
        cls = _allowed_class(str(tree["dataclass"]))
        fields = tree.get("fields")
        if not isinstance(fields, dict):
            raise CheckpointFormatError(f"the fields of {tree['dataclass']} are not an object")
        names = {field.name for field in dataclasses.fields(cls) if field.init}
        if set(fields) - names:
            raise CheckpointFormatError(f"{tree['dataclass']} has no fields {sorted(set(fields) - names)}")
        return cls(**{name: _decode(item, members) for name, item in fields.items()})
    raise CheckpointFormatError(f"unexpected entry {tree!r:.80}")


def _list(value) -> list:
    if not isinstance(value, list):
        raise CheckpointFormatError(f"expected a list, got {value!r:.80}")
    return value


def _torch_dtype(name):
    import torch

    kind = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
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
