"""The collector tests check the compiled hot loop from a run's first tick: they turn off
the deferred start (first ticks interpreted while numba loads in a thread), which
``test_deferred_start.py`` checks on its own. Child processes inherit the setting."""

import os

os.environ.setdefault("REVEAL_LAB_COLLECT_DEFER", "0")
