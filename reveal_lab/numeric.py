"""Small numeric helpers shared by several subpackages (detectors, attribution).

>>> import numpy as np
>>> safe_divide(np.array([1.0, 2.0]), np.array([2.0, 0.0])).tolist()
[0.5, 0.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["safe_divide"]


def safe_divide(a: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``a / scale`` with 0 where ``scale`` is 0 (constant features are neutral)."""
    out = np.zeros_like(a)
    nz = scale > 0
    with np.errstate(over="ignore"):  # a denormal scale: the quotient is +-inf (most extreme), on purpose
        np.divide(a, scale, out=out, where=np.broadcast_to(nz, a.shape))
    return out
