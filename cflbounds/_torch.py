"""Device and dtype resolution shared by generators and algorithms."""
from __future__ import annotations

import re

import torch

from ._validation import InvalidParameterError, Options

DEVICES = Options(("auto", "cpu", "cuda"))
DTYPES = Options(("float32", "float64"))
TENSOR_CONSTRAINTS = {"dtype": [DTYPES], "device": [DEVICES]}  # of every generator's tensors


def resolve_device(device: str) -> torch.device:
    """``auto`` picks CUDA when present; ``cpu``, ``cuda`` or ``cuda:N`` as named (a file's
    device string is checked here, before torch parses it); asking for ``cuda`` without one is
    an error."""
    if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:[0-9]{1,3})?", device):
        raise InvalidParameterError(f"The 'device' parameter must be 'auto', 'cpu', 'cuda' or 'cuda:N'. Got "
                                    f"{device!r:.60} instead.")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InvalidParameterError(
            "The 'device' parameter is 'cuda' but no CUDA device is available; "
            "use 'auto' or 'cpu'."
        )
    return torch.device(device)


def resolve_dtype(dtype: str) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[dtype]
