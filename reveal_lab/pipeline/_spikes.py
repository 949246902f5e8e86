"""How far one spike of the raw series reaches in windows: the least run of flagged
windows that is more than a spike."""

from __future__ import annotations

import numpy as np

__all__ = ["spike_windows"]


def spike_windows(window_s: float, stride_s: float) -> int:
    """How many consecutive windows one sample lies in (``ceil(window / stride)``): a single
    spike of the raw series can flag that many windows in a row and no more.

    >>> spike_windows(3.0, 1.0), spike_windows(3.0, 2.0), spike_windows(1.0, 1.0)
    (3, 2, 1)
    """
    return max(1, int(np.ceil(window_s / stride_s - 1e-9)))
