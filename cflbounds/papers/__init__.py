"""The five papers' claims (IFCA, CFL-MGD, FedCluster, LCFL, DSC) and the catalogue's (FedAvg, local GD,
SCAFFOLD, FedProx, CFL: ``CATALOGUE.md``), a plugin like any other.

Each subpackage declares its paper's ``CLAIMS`` (ID, statement, check, bound, reference,
domain) with the public plugin API only: :mod:`cflbounds.claims` (and its submodules
``stats``, ``orderings``, ``assumptions``, ``recovery``) plus ``cflbounds.algorithms``,
``cflbounds.bounds``, ``cflbounds.synthetic`` and ``cflbounds.sweeps``; nothing of the engine.
:mod:`.rotated_digits` is the rotated-digits experiment LCFL.ACC and IFCA.TAB1 share.
The import contracts in ``pyproject.toml`` (``[tool.importlinter]``) hold it to that, and no
engine module imports this package.

``pyproject.toml`` registers :data:`CLAIMS` in the entry-point group ``cflbounds.claims``
exactly as a plugin registers its own (one entry point, because installers write entry points
in alphabetical order and the papers' order, ``tests/data/CLAIMS.md``'s and then
``CATALOGUE.md``'s, is the order ``verify`` runs them in).
"""
from . import cfl, cfl_mgd, dsc, fedavg, fedcluster, fedprox, ifca, lcfl, localgd, scaffold

CLAIMS = [*ifca.CLAIMS, *cfl_mgd.CLAIMS, *fedcluster.CLAIMS, *lcfl.CLAIMS, *dsc.CLAIMS,
          *fedavg.CLAIMS, *localgd.CLAIMS, *scaffold.CLAIMS, *fedprox.CLAIMS, *cfl.CLAIMS]
