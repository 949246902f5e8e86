"""Compiled tokenizer for proc files: pick integers at known token positions and
fingerprint the file's layout in one pass over the bytes.

``scan(buf, want, dest, out, colons)`` walks the whitespace-separated tokens of
``buf`` (``:`` counts as whitespace when ``colons`` is true or 1; with ``colons`` 3,
``:``, ``.``, ``/`` and ``=`` all do, so ``0.42`` is the two integers ``0`` and ``42``
and ``avg10=0.42`` the label ``avg10`` and two integers: see :data:`DECIMALS`). The integer at token
``want[j]`` (``want`` sorted) is written to ``out[dest[j]]``. Every token that is
not a number (labels, headers, units, device names) is fingerprinted by its
length, first and last byte (FNV-1a over those), together with the token count
and the number of values found; the returned signature
changes whenever the layout does (a device, IRQ or counter appeared, vanished or
moved), which sends the caller back to its slow, label-based path.

Compiled with numba when available (``cache=True``); a pure-Python version with
the same results is used otherwise.
"""

from __future__ import annotations

import numpy as np

__all__ = ["scan", "scan_py", "COMPILED", "DECIMALS", "split_blanks"]

#: the ``colons`` mode that also splits numbers at ``.``, ``/`` and ``=`` (fixed-point
#: values such as ``/proc/loadavg``'s ``0.42`` and PSI's ``avg10=0.00``, printed by the
#: kernel as ``%lu.%02lu``, become integer and hundredths)
DECIMALS = 3


def split_blanks(data: bytes, colons: int | bool) -> bytes:
    """``data`` with the extra blanks of mode ``colons`` replaced by spaces (what
    :func:`scan` sees)."""
    if colons:
        data = data.replace(b":", b" ")
    if int(colons) >= DECIMALS:
        data = data.replace(b".", b" ").replace(b"/", b" ").replace(b"=", b" ")
    return data


_FNV_OFFSET = 1469598103934665603
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1


def scan_py(buf: np.ndarray, want: np.ndarray, dest: np.ndarray, out: np.ndarray, colons: bool) -> int:
    """Reference implementation (also the fall-back without numba)."""
    data = split_blanks(bytes(buf), colons)
    h = _FNV_OFFSET
    w = 0
    m = len(want)
    toks = data.split()
    for tok_i, t in enumerate(toks):
        first = t[0]
        numeric = 48 <= first <= 57 or (first == 45 and len(t) > 1 and 48 <= t[1] <= 57)
        if numeric:
            if w < m and want[w] == tok_i:
                digits = t[1:] if first == 45 else t
                end = 0
                while end < len(digits) and 48 <= digits[end] <= 57:
                    end += 1
                v = int(digits[:end])
                out[dest[w]] = -v if first == 45 else v
                w += 1
        else:
            for c in (len(t), t[0], t[-1]):
                h = ((h ^ c) * _FNV_PRIME) & _MASK
    h = ((h ^ len(toks)) * _FNV_PRIME) & _MASK
    h = ((h ^ w) * _FNV_PRIME) & _MASK
    return h - (1 << 64) if h >= (1 << 63) else h


def _jit(fn=None, **options):  # noqa: ANN001, ANN202
    """numba.njit (``nogil``, plus ``options``) with an on-disk cache; where the package
    directory is read-only (an ordinary user running an installed copy) the cache goes
    to a per-user temporary directory, and without any writable place it compiles
    uncached. ``_jit(inline="always")`` returns a decorator."""
    import os
    import tempfile

    import numba

    if fn is None:
        return lambda f: _jit(f, **options)
    try:
        return numba.njit(cache=True, nogil=True, **options)(fn)
    except RuntimeError:
        pass
    try:
        numba.config.CACHE_DIR = os.path.join(tempfile.gettempdir(), f"reveal-lab-numba-{os.getuid()}")
        return numba.njit(cache=True, nogil=True, **options)(fn)
    except RuntimeError:
        return numba.njit(nogil=True, **options)(fn)


def _make_compiled():  # pragma: no cover - exercised when numba is present
    @_jit(inline="always")
    def _blank(c, mode):  # noqa: ANN001, ANN202
        """Whitespace, or ``:`` (mode >= 1), or ``.``, ``/``, ``=`` (mode >= 3)."""
        return (
            c == 32
            or c == 10
            or c == 9
            or c == 13
            or c == 11
            or c == 12
            or (mode >= 1 and c == 58)
            or (mode >= 3 and (c == 46 or c == 47 or c == 61))
        )

    @_jit
    def scan_nb(buf, want, dest, out, colons):  # noqa: ANN001, ANN202
        n = buf.shape[0]
        m = want.shape[0]
        h = np.uint64(_FNV_OFFSET)
        prime = np.uint64(_FNV_PRIME)
        i = 0
        tok = 0
        w = 0
        mode = np.int64(colons)
        while i < n:
            c = buf[i]
            if _blank(c, mode):
                i += 1
                continue
            start = i
            while i < n:
                c = buf[i]
                if _blank(c, mode):
                    break
                i += 1
            first = buf[start]
            neg = first == 45 and i - start > 1 and buf[start + 1] >= 48 and buf[start + 1] <= 57
            if (first >= 48 and first <= 57) or neg:
                if w < m and want[w] == tok:
                    k = start + 1 if neg else start
                    v = 0
                    while k < i and buf[k] >= 48 and buf[k] <= 57:
                        v = v * 10 + (buf[k] - 48)
                        k += 1
                    out[dest[w]] = -v if neg else v
                    w += 1
            else:
                h = (h ^ np.uint64(i - start)) * prime
                h = (h ^ np.uint64(first)) * prime
                h = (h ^ np.uint64(buf[i - 1])) * prime
            tok += 1
        h = (h ^ np.uint64(tok)) * prime
        h = (h ^ np.uint64(w)) * prime
        return np.int64(h)

    return scan_nb


try:
    scan = _make_compiled()
    COMPILED = True
except ImportError:  # pragma: no cover - numba is a core dependency, but stay usable without it
    scan = scan_py
    COMPILED = False
