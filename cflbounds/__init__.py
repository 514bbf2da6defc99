"""cflbounds: check clustered federated learning convergence theorems against measurements."""
from ._validation import InvalidParameterError

__version__ = "0.1.0"
__all__ = ["InvalidParameterError", "__version__"]
