"""Textbook claims checked by cflbounds: a template for your own theorem, in both forms.

``CLAIMS`` is what the entry point ``cflbounds.claims`` names in ``pyproject.toml``: a list of
``cflbounds.claims.Claim``. Four true statements, each beside a planted wrong twin that
``cflbounds verify`` must find ``violated``:

* the short form, a bound and a domain and nothing else (``verify`` searches the domain):
  ``gd_convex`` (TEXTBOOK.GD-CONVEX, deterministic) and ``gaussian_max`` (TEXTBOOK.GAUSSIAN-MAX,
  an expectation);
* a designed experiment, a check that measures and judges with a decision rule, and a domain
  for the search as well: ``gradient_descent`` (TEXTBOOK.GD, deterministic) and ``hoeffding``
  (TEXTBOOK.HOEFFDING, a probability).

It imports what the five papers in ``cflbounds/papers/`` import, nothing more: the plugin API
``cflbounds.claims`` (and its ``stats``, ``orderings``, ``assumptions``, ``recovery``) plus
``cflbounds.algorithms``, ``bounds``, ``synthetic`` and ``sweeps``.
"""
from .gaussian_max import GAUSSIAN_MAX, GAUSSIAN_MAX_PLANTED
from .gd_convex import GD_CONVEX, GD_CONVEX_PLANTED
from .gradient_descent import GD, GD_PLANTED
from .hoeffding import HOEFFDING, HOEFFDING_PLANTED

CLAIMS = [GD_CONVEX, GD_CONVEX_PLANTED, GAUSSIAN_MAX, GAUSSIAN_MAX_PLANTED, GD, GD_PLANTED, HOEFFDING,
          HOEFFDING_PLANTED]
