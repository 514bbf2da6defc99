"""The five papers' claims, in CLAIMS.md's order: what cflbounds' own entry point names.

``pyproject.toml`` registers this list in the entry-point group ``cflbounds.claims`` exactly as
a plugin registers its own (one entry point, because installers write entry points in
alphabetical order and the papers' order is the order ``verify`` runs them in).
"""
from . import cfl_mgd, dsc, fedcluster, ifca, lcfl

CLAIMS = [*ifca.CLAIMS, *cfl_mgd.CLAIMS, *fedcluster.CLAIMS, *lcfl.CLAIMS, *dsc.CLAIMS]
