"""An on-disk cache of per-run work (a host's detection view, window features, fits, pruned space and scores).

A reproduction derives, windows and scores the same runs in several notebooks, and a
run's baseline features once for every other run of its workload. :func:`memoize`
stores a function's result under a key made of its arguments' *contents*: a frame by a
hash of its rows, columns and dtypes, an array by a hash of its bytes, a dataclass
(a preset, a policy) by its ``repr``, plus a fingerprint of the reveal_lab source code.
A changed file (hence frame), a changed setting or changed code gives another key, so
a stale entry is never read; entries are pickles written atomically (workers on one
folder may race: the last writer wins with identical bytes), each behind a digest of
its bytes: an entry that is damaged is computed again and rewritten, and a warning names
it. An entry that cannot be written (a full disk) leaves no partial file; the warning
names it and the results are computed from then on.

The cache is on when ``$REVEAL_LAB_CACHE`` names a folder (``reveal-lab reproduce``
sets it to ``OUT/cache``) or inside :func:`using_cache`; off otherwise, and when it says
off as such variables do (``0``, ``off``, ``false``, ``no``: a folder of that name is
``./0``).

Examples
--------
>>> import tempfile, polars as pl
>>> calls = []
>>> @memoize("demo")
... def total(frame):
...     calls.append(1)
...     return frame["x"].sum()
>>> with tempfile.TemporaryDirectory() as d, using_cache(d):
...     a = total(pl.DataFrame({"x": [1, 2]}))
...     b = total(pl.DataFrame({"x": [1, 2]}))   # read back: same contents, same key
...     c = total(pl.DataFrame({"x": [1, 3]}))   # other contents: computed
>>> (a, b, c, len(calls))
(3, 3, 4, 2)
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import os
import pickle
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl

__all__ = [
    "CACHE_ENV",
    "cache_dir",
    "using_cache",
    "memoize",
    "content_key",
    "code_fingerprint",
    "cache_stats",
    "LOOKUPS",
    "NOTEBOOK_ENV",
    "lookup_counts",
    "append_line",
    "read_lines",
    "CacheWarning",
]

#: the environment variable naming the cache folder (unset or empty: no cache)
CACHE_ENV = "REVEAL_LAB_CACHE"

F = TypeVar("F", bound=Callable[..., Any])

_STATS = {"hits": 0, "misses": 0}

#: the file in the cache folder each lookup is appended to (``notebook<TAB>kind<TAB>hit|miss``):
#: one line per lookup from every process that shares the folder (kernels, Dask workers)
LOOKUPS = "lookups.tsv"

#: the environment variable naming the notebook whose lookups are counted (the runner sets it)
NOTEBOOK_ENV = "REVEAL_LAB_NOTEBOOK"


#: values of ``$REVEAL_LAB_CACHE`` that turn the cache off, as the empty value does
CACHE_OFF = ("0", "off", "false", "no")


def cache_dir() -> Path | None:
    """The cache folder (``$REVEAL_LAB_CACHE``), or ``None`` when caching is off.

    >>> with using_cache("0"):  # off, not a folder named 0
    ...     cache_dir() is None
    True
    >>> with using_cache("./0"):
    ...     str(cache_dir())
    '0'
    """
    d = os.environ.get(CACHE_ENV, "")
    return Path(d) if d and d.strip().lower() not in CACHE_OFF else None


@contextlib.contextmanager
def using_cache(folder: str | Path | None) -> Iterator[Path | None]:
    """Cache into ``folder`` inside the ``with`` block (``None``: off), then restore."""
    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder) if folder else ""
    try:
        yield cache_dir()
    finally:
        if old is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = old


def cache_stats() -> dict[str, int]:
    """Hits and misses of this process so far, in all and per kind (``view_hits``, ...)."""
    return dict(_STATS)


def append_line(folder: Path, name: str, line: str) -> None:
    """Append ``line`` to the log ``folder/name`` in one ``O_APPEND`` write, so that lines of
    processes sharing the folder (kernels, Dask workers) do not interleave; a folder that
    cannot be written is left alone."""
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def _log_lookup(root: Path, kind: str, outcome: str) -> None:
    """Append one lookup to ``root/LOOKUPS``, under the notebook of :data:`NOTEBOOK_ENV`."""
    append_line(root, LOOKUPS, f"{os.environ.get(NOTEBOOK_ENV, '')}\t{kind}\t{outcome}\n")


def read_lines(folder: Path, name: str, since: int, fields: int) -> list[list[str]]:
    """The tab-separated lines of the log ``folder/name`` from byte ``since`` on, those with
    ``fields`` fields (a line torn by a full disk is left out); none when there is no log."""
    try:
        with open(folder / name, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    return [p for p in (line.split("\t") for line in text.splitlines()) if len(p) == fields]


def lookup_counts(folder: str | Path, since: int = 0) -> pl.DataFrame:
    """The lookups of every process that used the cache ``folder``, from byte ``since`` of its
    log on (the log's size when a reproduction began: that reproduction's lookups), counted
    per notebook and kind: ``notebook, kind, hits, misses`` (``notebook`` empty outside one).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for outcome in ("miss", "hit", "hit"):
    ...         _log_lookup(Path(d), "view", outcome)
    ...     lookup_counts(d).rows()
    [('', 'view', 2, 1)]
    """
    schema = {"notebook": pl.String, "kind": pl.String, "hits": pl.Int64, "misses": pl.Int64}
    counts: dict[tuple[str, str], list[int]] = {}
    for parts in read_lines(Path(folder), LOOKUPS, since, 3):
        if parts[2] not in ("hit", "miss"):
            continue
        c = counts.setdefault((parts[0], parts[1]), [0, 0])
        c[parts[2] == "miss"] += 1
    rows = [(nb, kind, h, m) for (nb, kind), (h, m) in counts.items()]
    return pl.DataFrame(rows, schema=schema, orient="row")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of every ``reveal_lab/**/*.py`` file and of the numeric libraries' versions:
    changed code or a changed library gives new keys."""
    import sklearn

    root = Path(__file__).resolve().parents[1]
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(p.read_bytes())
    h.update(f"{pl.__version__} {np.__version__} {sklearn.__version__}".encode())
    return h.hexdigest()


def _frame_digest(frame: pl.DataFrame) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(list(frame.schema.items())).encode())
    h.update(str(frame.height).encode())
    if frame.width:
        for seed in (0, 1):  # two 64-bit row hashes per row
            h.update(frame.hash_rows(seed=seed).to_numpy().tobytes())
    return h.digest()


_SCALARS = (str, int, float, bool, type(None))


def _plain(mapping: dict) -> bool:
    """Every key and value a scalar or a tuple of scalars: its ``repr`` is its whole contents."""
    for item in mapping.items():
        for v in item:
            parts = v if isinstance(v, tuple) else (v,)
            if not all(isinstance(x, _SCALARS) for x in parts):
                return False
    return True


def _feed(h: Any, value: Any) -> None:
    """Feed ``value``'s contents into the hash ``h`` (type-tagged, recursively)."""
    if isinstance(value, pl.DataFrame):
        h.update(b"F")
        h.update(_frame_digest(value))
    elif isinstance(value, pl.Series):
        _feed(h, value.to_frame())
    elif isinstance(value, np.ndarray):
        h.update(b"A" + str((value.dtype.str, value.shape)).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict) and _plain(value):  # e.g. a baseline's {(key, feature): column}
        h.update(b"d" + repr(list(value.items())).encode())
    elif isinstance(value, dict):
        h.update(b"D%d" % len(value))
        for k in sorted(value, key=repr):
            _feed(h, k)
            _feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(b"L%d" % len(value))
        for v in value:
            _feed(h, v)
    elif isinstance(value, (set, frozenset)):
        h.update(b"S")
        _feed(h, sorted(value, key=repr))
    elif hasattr(value, "meta") and hasattr(value, "frame"):  # a Run: its id, hosts and frame
        h.update(b"R")
        _feed(h, (value.meta.run_id, tuple(value.meta.hosts), value.meta.workload, value.frame))
    elif hasattr(value, "selected") and hasattr(value, "params"):  # a Pruning: its metric space
        h.update(b"P")
        _feed(h, sorted(value.selected))
    elif dataclasses.is_dataclass(value) or isinstance(value, (str, int, float, bool, type(None))):
        h.update(b"V" + repr(value).encode())
    elif isinstance(value, os.PathLike):
        h.update(b"V" + repr(value).encode())
    else:
        raise TypeError(f"run cache: cannot key an argument of type {type(value).__name__}")


def content_key(*parts: Any) -> str:
    """A hex key of ``parts``' contents and the code fingerprint.

    >>> import polars as pl
    >>> content_key(pl.DataFrame({"a": [1.0]}), "x") == content_key(pl.DataFrame({"a": [1.0]}), "x")
    True
    >>> content_key(pl.DataFrame({"a": [1.0]})) == content_key(pl.DataFrame({"a": [2.0]}))
    False
    """
    h = hashlib.blake2b(digest_size=20)
    h.update(code_fingerprint().encode())
    _feed(h, parts)
    return h.hexdigest()


#: every entry starts with this tag and a digest of the pickle after it, so a damaged
#: entry is found before it is unpickled (a flipped byte can still unpickle, as another object)
_MAGIC = b"reveal-lab cache 1\n"
_DIGEST = 32


class CacheWarning(UserWarning):
    """A cache entry could not be used or written; the result was computed instead."""


def _read(path: Path) -> tuple[bool, Any, str | None]:
    """``(found, entry, damage)``: ``damage`` says why an entry that exists cannot be used
    (torn, damaged, another version's or not an entry at all); it is then computed again."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return False, None, None
    except OSError as exc:
        return False, None, f"unreadable ({exc.strerror or exc})"
    head = len(_MAGIC) + _DIGEST
    if not data.startswith(_MAGIC) or len(data) < head:
        return False, None, f"not a cache entry of this version ({len(data)} bytes, no header)"
    body = data[head:]
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != data[len(_MAGIC):head]:
        return False, None, f"damaged ({len(body)} bytes after the header do not match their digest)"
    try:
        entry = pickle.loads(body)
    except Exception as exc:  # noqa: BLE001 - any failure to unpickle: an unusable entry
        return False, None, f"cannot be read back ({type(exc).__name__}: {exc})"
    if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], list)):
        return False, None, f"holds a {type(entry).__name__}, not a (warnings, result) pair"
    return True, entry, None


_UNWRITABLE: set[Path] = set()  # cache folders a write failed in: not tried again in this process


def _write(path: Path, value: Any) -> None:
    """Write an entry atomically (a temporary file renamed); a failure (a full disk, a
    read-only folder) leaves no partial file, is said once per cache folder with the entry's
    path, and the cache is not written again in this process: the result is kept anyway."""
    root = path.parents[2]
    if root in _UNWRITABLE:
        return
    tmp = None
    try:
        body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pkl")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.blake2b(body, digest_size=_DIGEST).digest())
            f.write(body)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        _UNWRITABLE.add(root)
        warnings.warn(
            f"run cache: cannot write {path} ({exc.strerror or exc}); the cache in {root} is not "
            "written again by this process (results are computed instead)",
            CacheWarning,
            stacklevel=3,
        )
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def memoize(kind: str, *, ignore: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Decorate a deterministic function so its results are kept in the cache folder
    under ``kind/``, keyed by :func:`content_key` of its bound arguments (except the
    parameters named in ``ignore``, e.g. a timings dict it only writes into).

    The warnings the function raises are stored with its result and raised again on
    every call, read back or computed, so a caller that records them sees the same list.
    An argument that cannot be keyed (an unknown type) means the call is not cached.
    """

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def cached(*args: Any, **kwargs: Any) -> Any:
            root = cache_dir()
            if root is None:
                return fn(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            try:
                key = content_key(kind, [(k, v) for k, v in bound.arguments.items() if k not in ignore])
            except TypeError:
                return fn(*args, **kwargs)
            path = root / kind / key[:2] / f"{key}.pkl"
            found, entry, damage = _read(path)
            if damage is not None:
                warnings.warn(f"run cache: entry {path} is {damage}; computed again",
                              CacheWarning, stacklevel=2)
            outcome = "hits" if found else "misses"
            _STATS[outcome] += 1
            _STATS[f"{kind}_{outcome}"] = _STATS.get(f"{kind}_{outcome}", 0) + 1
            _log_lookup(root, kind, "hit" if found else "miss")
            if not found:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    value = fn(*args, **kwargs)
                entry = ([(w.category, str(w.message), w.filename, w.lineno) for w in caught], value)
                _write(path, entry)
            for category, message, filename, lineno in entry[0]:
                warnings.warn_explicit(message, category, filename, lineno)
            return entry[1]

        cached.uncached = fn  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return wrap
