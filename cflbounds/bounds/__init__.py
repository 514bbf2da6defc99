"""Each paper's theorems and assumptions as functions of named constants.

Bounds depend on nothing in the package but parameter validation: a theorem must be
auditable without the code that is checked against it.
"""
from . import cfl, cfl_mgd, dsc, fedavg, fedcluster, fedprox, ifca, lcfl, localgd, pep, scaffold
from ._report import BoundResult, Inequality

__all__ = ["dsc", "ifca", "cfl_mgd", "fedcluster", "lcfl", "pep", "fedavg", "localgd", "scaffold", "fedprox", "cfl",
           "BoundResult", "Inequality"]
