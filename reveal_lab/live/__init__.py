"""Live detection on a running collector: follow its output, score each window as it completes.

* :class:`CollectorFollower` reads only the new bytes of the collector's journal
  (and the tail of a segment at roll-over) and returns canonical rows.
* :class:`LiveDetector` builds each window as it completes, computes that one
  window's features, scores it with detectors fitted on a warm-up period or a
  baseline run, and attributes an anomaly to metric-feature pairs and subsystems.
* :func:`watch` ties them together (``reveal-lab watch DIR``).
"""

from reveal_lab.live._engine import LiveDetector, Verdict, make_detectors, pair_keys
from reveal_lab.live._follow import CollectorFollower, FollowStats
from reveal_lab.live._watch import watch

__all__ = [
    "CollectorFollower",
    "FollowStats",
    "LiveDetector",
    "Verdict",
    "watch",
    "make_detectors",
    "pair_keys",
]
