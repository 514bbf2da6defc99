"""Textbook claims checked by cflbounds: a template for your own theorem.

``CLAIMS`` is what the entry point ``cflbounds.claims`` names in ``pyproject.toml``: a list
of :class:`cflbounds.claims.Claim`. Two true statements, each beside a planted wrong twin
that the checks must find ``violated``.

It imports what the five papers in ``cflbounds/papers/`` import, nothing more: the plugin API
``cflbounds.claims`` (and its ``stats``, ``orderings``, ``assumptions``, ``recovery``) plus
``cflbounds.algorithms``, ``bounds``, ``synthetic`` and ``sweeps``.
"""
from .gradient_descent import GD, GD_PLANTED
from .hoeffding import HOEFFDING, HOEFFDING_PLANTED

CLAIMS = [GD, GD_PLANTED, HOEFFDING, HOEFFDING_PLANTED]
