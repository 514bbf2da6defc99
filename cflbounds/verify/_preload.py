"""Imported once by the server the claims' worker processes are forked from (:mod:`.workers`):
torch, the engine, the search and every installed plugin's claims, so that each worker starts
with them loaded instead of importing them again (seconds) for every claim."""
import torch  # noqa: F401

from . import run  # noqa: F401
from .registry import claims

claims()
