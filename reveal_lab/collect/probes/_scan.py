"""Compiled tokenizer for proc files: pick integers at known token positions and
fingerprint the file's layout in one pass over the bytes.

``scan(buf, want, dest, out, colons)`` walks the whitespace-separated tokens of
``buf`` (``:`` counts as whitespace when ``colons`` is true or 1; with ``colons`` 3,
``:``, ``.``, ``/`` and ``=`` all do, so ``0.42`` is the two integers ``0`` and ``42``
and ``avg10=0.42`` the label ``avg10`` and two integers: see :data:`DECIMALS`; with ``colons``
:data:`FIXED_WIDTH` the blanks are whitespace only and the kernel's per-core columns are read
a column at a time, see below). The integer at token
``want[j]`` (``want`` sorted) is written to ``out[dest[j]]``. Every token that is
not a number (labels, headers, units, device names) is fingerprinted by its
length, first and last byte (FNV-1a over those), together with the token count
and the number of values found; the returned signature
changes whenever the layout does (a device, IRQ or counter appeared, vanished or
moved), which sends the caller back to its slow, label-based path.

``/proc/interrupts`` and ``/proc/softirqs`` print each core's count as `` %10u``: a blank
and ten characters, spaces then digits (a 32-bit count never needs more). Read byte by byte,
each column costs a branch where its spaces end and one where its digits end, most of the
time on a host of many cores. In mode :data:`FIXED_WIDTH` (little-endian hosts), at the first
blank after a token the scanner checks the next ten bytes in one step, eight of them as one
64-bit word (spaces then at least one digit, then a blank or the end): such a column is one
numeric token, with the value and place the byte-by-byte walk gives it; anything else (a
label, a wider or negative number, a row's description) is walked byte by byte. Values and
signature are those of mode 0.

Compiled with numba when available (``cache=True``); a pure-Python version with
the same results is used otherwise. numba is imported on first use of ``scan`` (see
:func:`load`), not when this module is imported.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = [
    "scan",
    "scan_py",
    "scan_now",
    "load",
    "dispatcher",
    "warmup_args",
    "COMPILED",
    "DECIMALS",
    "FIXED_WIDTH",
    "ONE_READ",
    "ROWS",
    "split_blanks",
    "drop_stale_cache",
]

#: the ``colons`` mode that also splits numbers at ``.``, ``/`` and ``=`` (fixed-point
#: values such as ``/proc/loadavg``'s ``0.42`` and PSI's ``avg10=0.00``, printed by the
#: kernel as ``%lu.%02lu``, become integer and hundredths)
DECIMALS = 3
#: the ``colons`` mode of whitespace blanks with the kernel's `` %10u`` per-core columns read
#: a column at a time (``/proc/interrupts``, ``/proc/softirqs``); the results of mode 0
FIXED_WIDTH = 4
#: flag added to a batched table's mode: one read returns the whole file
ONE_READ = 16
#: flag added to a batched table's mode: re-read only the rows whose bytes changed since its
#: last read (``rows_scan``; its state in the batch's ``prev``, ``rec``, ``cst``, ``vals``)
ROWS = 32


def split_blanks(data: bytes, colons: int | bool) -> bytes:
    """``data`` with the extra blanks of mode ``colons`` replaced by spaces (what
    :func:`scan` sees)."""
    if int(colons) == FIXED_WIDTH:
        return data
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


def drop_stale_cache(module_file: str, *deps: str) -> None:
    """numba keys a cached function on its own file only: a compiled function that calls
    jitted functions of other files keeps their old code after those files change. Drop
    the module's cached functions when ``module_file`` or any of ``deps`` changed since
    they were cached (a digest of their sources is kept beside the cache)."""
    import glob
    import hashlib
    import os

    try:
        import numba
    except ImportError:
        return
    h = hashlib.sha256()
    for f in (module_file, *deps):
        try:
            with open(f, "rb") as fh:
                h.update(fh.read())
        except OSError:
            return
    digest = h.hexdigest()
    stem = os.path.splitext(os.path.basename(module_file))[0]
    dirs = [os.path.join(os.path.dirname(module_file), "__pycache__")]
    if numba.config.CACHE_DIR:
        dirs += [
            d
            for d, _, files in os.walk(numba.config.CACHE_DIR)
            if any(f.startswith(stem + ".") for f in files)
        ]
        try:  # the folder numba will cache into: stamped now, so its first files count as fresh
            from numba.core.caching import _CacheLocator

            own = os.path.join(numba.config.CACHE_DIR, _CacheLocator.get_suitable_cache_subpath(module_file))
            os.makedirs(own, exist_ok=True)
            if own not in dirs:
                dirs.append(own)
        except (ImportError, AttributeError, OSError):
            pass
    for d in dirs:
        stamp = os.path.join(d, f"{stem}.deps-sha256")
        try:
            with open(stamp) as fh:
                if fh.read() == digest:
                    continue
        except OSError:
            pass
        try:
            for f in glob.glob(os.path.join(d, f"{stem}.*.nb[ic]")):
                os.unlink(f)
            if os.path.isdir(d):
                with open(stamp, "w") as fh:
                    fh.write(digest)
        except OSError:
            pass  # not ours to clean (read-only): numba then recompiles into its own fall-back


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


def _make_column():  # pragma: no cover - exercised when numba is present
    """The compiled reader of one `` %10u`` column at ``buf[i : i + 11]`` (``buf[i]`` a
    blank): its value, or -1 when the ten bytes are not spaces then at least one digit.
    Bytes 1 and 2 are read one by one, bytes 3 to 10 as one little-endian 64-bit word
    (a load numba has no array operation for: an intrinsic). The compiled functions refer
    to each other as module globals, not closure cells: numba keys its cache on the
    pickled cells, which for a function differ from one process to the next."""
    global _LOAD8  # noqa: PLW0603
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def load8(typingctx, arr, idx):  # noqa: ANN001, ANN202, ARG001
        sig = types.uint64(arr, idx)

        def codegen(context, builder, sig, args):  # noqa: ANN001, ANN202
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(64).as_pointer())
            return builder.load(ptr, align=1)

        return sig, codegen

    _LOAD8 = load8

    @_jit
    def column(buf, i):  # noqa: ANN001, ANN202
        x = _LOAD8(buf, i + 3)
        m10 = np.uint64(0x1010101010101010)
        lo = x & np.uint64(0x0F0F0F0F0F0F0F0F)
        dig = (x & m10) >> np.uint64(4)  # 0x01 at the bytes 0x30-0x3F
        ok = (x & np.uint64(0xE0E0E0E0E0E0E0E0)) == np.uint64(0x2020202020202020)  # all 0x20-0x3F
        ok &= (lo & ~(dig * np.uint64(15))) == np.uint64(0)  # those not 0x30-0x3F are 0x20
        nines = (lo + np.uint64(0x0606060606060606)) & m10  # 0x10 where the low nibble is over 9
        ok &= (nines & (dig << np.uint64(4))) == np.uint64(0)  # so the 0x30-0x3F are '0'-'9'
        sp = (dig ^ np.uint64(0x0101010101010101)) * np.uint64(255)  # 0xFF at the spaces
        ok &= (sp & (sp + np.uint64(1))) == np.uint64(0)  # spaces first (the low bytes), then digits
        ok &= (x >> np.uint64(56)) >= np.uint64(48)  # the last byte a digit
        d1 = np.int64(buf[i + 1]) - 48
        d2 = np.int64(buf[i + 2]) - 48
        isd1 = d1 >= 0 and d1 <= 9
        isd2 = d2 >= 0 and d2 <= 9
        ok &= (isd1 or d1 == -16) and (isd2 or d2 == -16)
        ok &= (not isd1 or isd2) and (not isd2 or sp == np.uint64(0))
        if not ok:
            return np.int64(-1)
        v = (x | m10) - np.uint64(0x3030303030303030)  # spaces read as zeros
        v = (v * np.uint64(10) + (v >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
        v = (v * np.uint64(100) + (v >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
        v = (v * np.uint64(10000) + (v >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
        return np.int64((d1 if isd1 else 0) * 10 + (d2 if isd2 else 0)) * 100000000 + np.int64(v)

    return column


_LOAD8 = None  # the 64-bit load of _make_column, set when it is made
_COLUMN = None  # its column reader, called by the scanner
_BLANKS = None  # the blank bytes of each mode (row), set when the scanner is made
_SPAN = None  # the scanner's walk over a range of bytes, from a given state
_SAME = None  # whether two byte ranges are equal
_ROWS = None  # the scan that re-reads only the rows whose bytes changed (see rows_scan)


def _make_compiled():  # pragma: no cover - exercised when numba is present
    global _BLANKS, _COLUMN, _SPAN, _SAME, _ROWS  # noqa: PLW0603
    # blanks by mode (row): whitespace; and ':' (1, 2); and '.', '/', '=' (3)
    blanks = np.zeros((4, 256), dtype=np.bool_)
    for mode_ in range(4):
        for ch in b" \n\t\r\x0b\x0c" + (b":" if mode_ >= 1 else b"") + (b"./=" if mode_ >= 3 else b""):
            blanks[mode_, ch] = True
    _BLANKS = blanks  # a global of the compiled functions: frozen in as a constant
    _COLUMN = _make_column()
    _SPAN = _make_span()

    @_jit
    def scan_nb(buf, want, dest, out, colons):  # noqa: ANN001, ANN202
        n = buf.shape[0]
        none = np.empty((0, 4), dtype=np.int64)
        _, tok, w, h, _, _ = _SPAN(buf, 0, n, n, want, dest, out, np.int64(colons), 0, 0,
                                   np.uint64(_FNV_OFFSET), False, none)  # fmt: skip
        prime = np.uint64(_FNV_PRIME)
        h = (h ^ np.uint64(tok)) * prime
        h = (h ^ np.uint64(w)) * prime
        return np.int64(h)

    _SAME, _ROWS = _make_rows()
    return scan_nb


def _make_span():  # noqa: ANN202 # pragma: no cover - exercised when numba is present
    """The scanner's walk over a range of bytes."""

    @_jit
    def span(buf, i, hi, n, want, dest, out, mode, tok, w, h, after, rec):  # noqa: ANN001, ANN202
        """The scan of ``buf[:n]`` from byte ``i`` in state ``(tok, w, h, after)`` until it
        reaches ``hi`` or beyond; returns ``(i, tok, w, h, after, r)``. Each newline it takes
        as a plain blank (not the start of a column) is a *clean point*: from the byte after
        it the scan depends only on ``(tok, w, h)``; the first ``len(rec)`` of them are
        written to ``rec`` as ``(byte after it, tok, w, h)``, ``r`` counts them all."""
        m = want.shape[0]
        prime = np.uint64(_FNV_PRIME)
        fixed = mode == FIXED_WIDTH
        blank = _BLANKS[0 if fixed else min(mode, 3)]
        cap = rec.shape[0]
        r = 0
        while i < hi:
            c = buf[i]
            if blank[c]:
                if fixed and after:
                    i0 = i
                    while i + 11 <= n:  # a row's columns one after the other
                        v = _COLUMN(buf, i)
                        if v < 0 or not (i + 11 == n or blank[buf[i + 11]]):
                            break
                        if w < m and want[w] == tok:
                            out[dest[w]] = v
                            w += 1
                        tok += 1
                        i += 11
                    if i > i0:
                        continue
                after = False
                i += 1
                if c == 10:
                    if r < cap:
                        rec[r, 0] = i
                        rec[r, 1] = tok
                        rec[r, 2] = w
                        rec[r, 3] = np.int64(h)
                    r += 1
                continue
            after = True
            start = i
            while i < n and not blank[buf[i]]:
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
        return i, tok, w, h, after, r

    return span


def _make_rows():  # noqa: ANN202 # pragma: no cover - exercised when numba is present
    """The equality of two byte ranges, and the scan that re-reads only the rows whose
    bytes changed (``rows_scan``)."""

    @_jit
    def same(a, b, lo, hi):  # noqa: ANN001, ANN202
        j = lo
        while j + 8 <= hi:
            if _LOAD8(a, j) != _LOAD8(b, j):
                return False
            j += 8
        while j < hi:
            if a[j] != b[j]:
                return False
            j += 1
        return True

    @_jit
    def rows_scan(buf, prev, want, dest, out, mode, rec, st):  # noqa: ANN001, ANN202
        """:func:`scan` of ``buf`` (values into ``out``, the signature returned) that
        re-reads only the rows whose bytes differ from the last call's (``prev``), the
        values of the others being in ``out`` since that call. ``rec`` (rows of 4) holds
        the clean points of the last full scan (see ``span``), ``st`` (6 slots) their
        number (0: none, scan it all), the length, signature and final ``(tok, w, h)``
        of the bytes in ``prev``. A changed row is scanned from the blank before it with
        the state its clean point recorded; when it ends at the next clean point in the
        recorded state, every later row reads as before and the signature is the last
        one; otherwise (a row grew, a label changed, a different length) the whole file
        is scanned again and its clean points recorded."""
        n = buf.shape[0]
        nrec = st[0]
        blank = _BLANKS[0 if mode == FIXED_WIDTH else min(mode, 3)]
        if nrec > 0 and st[1] == n:
            none = np.empty((0, 4), dtype=np.int64)
            ok = True
            for k in range(nrec):
                lo = rec[k, 0]
                hi = rec[k + 1, 0] if k + 1 < nrec else n
                if _SAME(buf, prev, lo, hi):
                    continue
                i0 = lo - 1 if lo > 0 else 0  # the newline before the row: a column may start there
                after = lo >= 2 and not blank[buf[lo - 2]]
                i, tok, w, h, after, _ = _SPAN(buf, i0, hi, n, want, dest, out, mode, rec[k, 1],
                                               rec[k, 2], np.uint64(rec[k, 3]), after, none)  # fmt: skip
                if k + 1 < nrec:
                    et, ew, eh, clean = rec[k + 1, 1], rec[k + 1, 2], rec[k + 1, 3], not after
                else:
                    et, ew, eh, clean = st[3], st[4], st[5], True
                if i != hi or not clean or tok != et or w != ew or np.int64(h) != eh:
                    ok = False
                    break
                prev[lo:hi] = buf[lo:hi]
            if ok:
                return st[2]
        rec[0, 0] = 0
        rec[0, 1] = 0
        rec[0, 2] = 0
        rec[0, 3] = np.int64(np.uint64(_FNV_OFFSET))
        _, tok, w, h, _, r = _SPAN(buf, 0, n, n, want, dest, out, mode, 0, 0, np.uint64(_FNV_OFFSET), False,
                                   rec[1:])  # fmt: skip
        prime = np.uint64(_FNV_PRIME)
        sig = np.int64((((h ^ np.uint64(tok)) * prime) ^ np.uint64(w)) * prime)
        st[0] = r + 1 if r + 1 <= rec.shape[0] else 0
        st[1] = n
        st[2] = sig
        st[3] = tok
        st[4] = w
        st[5] = np.int64(h)
        prev[:n] = buf
        return sig

    return same, rows_scan


#: set by the collector while it starts: :func:`scan_now` then scans in Python until
#: another thread has loaded the compiled scanner (:func:`load`), so that numba's import
#: and start-up (most of a second) are not on the way to the first sample
DEFER = False
_FAST = None  # the compiled scanner, loaded and called once (or scan_py without numba)
_DISPATCHER: list = []  # the numba dispatcher of the scanner, made once (not yet called)
_LOCK = threading.Lock()


def dispatcher():  # noqa: ANN201
    """The scanner's numba dispatcher, made on first use but not called: nothing is
    compiled or loaded from the cache yet (:func:`load` does). Raises ``ImportError``
    without numba."""
    with _LOCK:
        if not _DISPATCHER:
            _DISPATCHER.append(_make_compiled())
        return _DISPATCHER[0]


def warmup_args() -> list[tuple]:
    """The calls :func:`load` tries the scanner with: a read-only buffer (as
    ``np.frombuffer`` gives) with a bool and with an int ``colons`` (the tables pass
    either); they make the two signatures Python code calls it with."""
    one = np.frombuffer(b"a 1", np.uint8)
    want, dest, out = np.array([1], np.int64), np.array([0], np.int64), np.zeros(1, np.int64)
    return [(one, want, dest, out, colons) for colons in (False, 0)]


def load():  # noqa: ANN201
    """Import numba and load (or compile) the scanner, try it once on both kinds of
    ``colons``, then publish it as ``scan``/``COMPILED`` and to :func:`scan_now`."""
    global _FAST  # noqa: PLW0603
    if _FAST is not None:
        return _FAST
    try:
        fn = dispatcher()
        ok = True
    except ImportError:  # pragma: no cover - numba is a core dependency, but stay usable without it
        fn, ok = scan_py, False
    with _LOCK:
        if _FAST is not None:
            return _FAST
        for args in warmup_args():
            fn(*args)
        globals().update(scan=fn, COMPILED=ok)
        _FAST = fn
        return fn


def scan_now(buf, want, dest, out, colons):  # noqa: ANN001, ANN201
    """:func:`scan` where it is loaded (loading it here unless :data:`DEFER`), else
    :func:`scan_py` (same results)."""
    fn = _FAST
    if fn is None:
        if DEFER:
            return scan_py(buf, want, dest, out, colons)
        fn = load()
    return fn(buf, want, dest, out, colons)


def __getattr__(name: str):  # noqa: ANN202 - ``scan`` and ``COMPILED`` load numba on first use
    if name in ("scan", "COMPILED"):
        load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
