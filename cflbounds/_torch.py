"""Device and dtype resolution shared by generators and algorithms."""
from __future__ import annotations

import torch

from ._validation import InvalidParameterError, Options

DEVICES = Options(("auto", "cpu", "cuda"))
DTYPES = Options(("float32", "float64"))
TENSOR_CONSTRAINTS = {"dtype": [DTYPES], "device": [DEVICES]}  # of every generator's tensors


def resolve_device(device: str) -> torch.device:
    """``auto`` picks CUDA when present; asking for ``cuda`` without one is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise InvalidParameterError(
            "The 'device' parameter is 'cuda' but no CUDA device is available; "
            "use 'auto' or 'cpu'."
        )
    return torch.device(device)


def resolve_dtype(dtype: str) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[dtype]
