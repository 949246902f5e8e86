"""What every command needs from the process it runs in: output that a non-UTF-8 terminal
can show, text files in UTF-8, library caches it can write, and errors of the machine (full disk, no memory)
said with the path or the input they concern."""

from __future__ import annotations

import codecs
import errno
import glob
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["prepare_process", "resource_message", "NUMBA_CACHE_ENV"]

NUMBA_CACHE_ENV = "NUMBA_CACHE_DIR"

#: typographic characters the help and messages use, as ASCII for a terminal that lacks them
_ASCII = {
    "\u2013": "-", "\u2014": "--", "\u2212": "-", "\u2248": "~", "\u00d7": "x", "\u2264": "<=",
    "\u2265": ">=", "\u2192": "->", "\u2190": "<-", "\u2026": "...", "\u2018": "'", "\u2019": "'",
    "\u201c": '"', "\u201d": '"', "\u00b7": ".", "\u03c3": "sigma", "\u00b1": "+/-", "\u2260": "!=",
}
ERRORS = "reveal-lab-ascii"


def _ascii_or_escape(exc: UnicodeError) -> tuple[str, int]:
    """A codec error handler: the ASCII look-alike of each character the encoding lacks
    (``–`` → ``-``), else its ``\\uXXXX`` escape."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(_ASCII.get(c, c.encode("ascii", "backslashreplace").decode()) for c in bad), exc.end


codecs.register_error(ERRORS, _ascii_or_escape)


def _readable_text_streams() -> None:
    """stdout and stderr keep their encoding (the terminal's) but never fail on a character
    it lacks: ``reveal-lab synth public --help`` under a Latin-1 locale prints ``1-1,000``
    where UTF-8 prints ``1–1,000``."""
    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
        if enc in ("utf-8", "utf8") or not hasattr(stream, "reconfigure"):
            continue
        try:
            stream.reconfigure(errors=ERRORS)
        except (ValueError, OSError):  # a closed or detached stream: nothing to print to
            pass


def _writable(path: Path) -> bool:
    """Whether a folder can be made at ``path`` (or is there) and written by this user
    (``False`` when a folder on the way cannot even be looked into)."""
    p = path
    while True:
        try:
            if p.exists():
                return p.is_dir() and os.access(p, os.W_OK | os.X_OK)
        except OSError:
            return False
        if p.parent == p:
            return False
        p = p.parent


def _private_folder(env: str, usual: Path) -> None:
    """Set ``env`` to a private folder under the temporary directory (mode 0700, this user's)
    when it is unset and ``usual``, the folder the library would use, cannot be written;
    children (notebook kernels) inherit it."""
    if os.environ.get(env) or _writable(usual):
        return
    folder = Path(tempfile.gettempdir()) / f"reveal-lab-{env.lower()}-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        mine = folder.is_dir() and not folder.is_symlink() and folder.stat().st_uid == os.getuid()
    except OSError:
        return  # the library then says what it cannot do
    if mine:
        os.environ[env] = str(folder)
        if env == NUMBA_CACHE_ENV:
            _seed_numba_cache(folder)


def _seed_numba_cache(folder: Path) -> None:
    """Copy the compiled functions numba has cached beside the package (``__pycache__``, written
    by a user who can write there) into ``folder``, the private cache of a user who cannot:
    numba reads an in-tree cache only where it may also write it, so without the copy this user
    compiles every kernel again (half a minute of CPU for ``detect``). The copy goes where numba
    looks under ``NUMBA_CACHE_DIR``; an entry is taken when this user's copy is missing or older,
    its data files before its index; numba checks each entry's source hash and version on
    loading, and compiles what is stale or missing. Nothing is copied where a file cannot be
    read or written."""
    package = Path(os.path.abspath(__file__)).parents[1]  # as numba names a module's file
    for cache in package.rglob("__pycache__"):
        try:
            indexes = [p for p in cache.iterdir() if p.suffix == ".nbi"]
            if not indexes:
                continue
            dest = folder / _numba_subpath(cache.parent)
            for index in indexes:
                mine = dest / index.name
                if mine.exists() and mine.stat().st_mtime >= index.stat().st_mtime:
                    continue
                dest.mkdir(mode=0o700, parents=True, exist_ok=True)
                for data in sorted(cache.glob(f"{glob.escape(index.stem)}.*.nbc")):
                    _copy_whole(data, dest / data.name)
                _copy_whole(index, mine)
        except OSError:
            continue


def _numba_subpath(source_dir: Path) -> str:
    """The folder under ``NUMBA_CACHE_DIR`` where numba caches the functions of the modules in
    ``source_dir`` (``numba.core.caching._CacheLocator.get_suitable_cache_subpath``, computed
    here so that a command that compiles nothing does not import numba)."""
    return f"{source_dir.name}_{hashlib.sha1(str(source_dir).encode()).hexdigest()}"


def _copy_whole(src: Path, dst: Path) -> None:
    """``src`` to ``dst`` through a temporary file beside it: a reader sees the old file or the
    new one, never part of one."""
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        shutil.copy2(src, tmp)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def _writable_caches() -> None:
    """Caches the libraries can write as an ordinary user without a writable HOME: numba's
    (its choices are the package's ``__pycache__`` and ``~/.cache/numba``; with neither
    writable every cached function fails, "no locator available") and matplotlib's
    (``~/.config/matplotlib``; else a new temporary one each process, with a warning)."""
    home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    package = Path(__file__).resolve().parents[1]
    if not os.access(package, os.W_OK):
        _private_folder(NUMBA_CACHE_ENV, home / ".cache" / "numba")
    _private_folder("MPLCONFIGDIR", home / ".config" / "matplotlib")


def _utf8_files() -> None:
    """Text files opened without an encoding are UTF-8 in this process whatever the locale:
    under a Latin-1 locale, the character type is switched to a UTF-8 one (``C.UTF-8``), as
    Python's own locale coercion does for the C locale. The output streams keep the
    terminal's encoding (:func:`_readable_text_streams`); notebook kernels run in UTF-8 mode
    (:func:`reveal_lab.notebooks.kernel_spec`)."""
    import locale

    if sys.flags.utf8_mode or locale.getpreferredencoding(False).lower().replace("-", "") == "utf8":
        return
    for name in ("C.UTF-8", "C.utf8", "en_US.UTF-8"):
        try:
            locale.setlocale(locale.LC_CTYPE, name)
            return
        except locale.Error:
            continue


def prepare_process() -> None:
    """Run once before a command: readable output streams, UTF-8 files and writable library
    caches."""
    _readable_text_streams()
    _utf8_files()
    _writable_caches()


#: the least address space (``ulimit -v``) a command starts under: below it numba's compiler
#: (llvmlite) fails to load with a message about a missing shared object (seen at 1 GiB; 2 GiB ran
#: ``detect`` on a host recording)
MIN_ADDRESS_SPACE = 2 * 2**30


def address_space_message(limit: int | None = None) -> str | None:
    """Why a command cannot start under the address-space limit ``limit`` (default: this
    process's soft ``RLIMIT_AS``), or ``None`` when it can.

    >>> print(address_space_message(2**30))  # doctest: +ELLIPSIS
    the address-space limit (ulimit -v) is 1.0 GiB; ...: raise it (ulimit -v 2097152 or more)
    >>> address_space_message(-1) is None and address_space_message(4 * 2**30) is None
    True
    """
    import resource

    if limit is None:
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY or limit < 0 or limit >= MIN_ADDRESS_SPACE:
        return None
    return (
        f"the address-space limit (ulimit -v) is {limit / 2**30:.1f} GiB; reveal-lab needs at least "
        f"{MIN_ADDRESS_SPACE / 2**30:.1f} GiB (numba's compiler and the columnar libraries reserve address "
        f"space): raise it (ulimit -v {MIN_ADDRESS_SPACE // 1024} or more)"
    )


#: the options that name what a command writes, in the order a message names them
OUTPUT_OPTIONS = ("out", "hf", "dest", "cache", "jsonl", "json", "raw")


def resource_message(exc: BaseException, args: object) -> str | None:
    """A message for an error of the machine rather than of the input: a full disk or quota
    without a file name says which output was being written (``--out DIR``); memory
    exhausted says so, with what to make smaller. ``None`` for other errors."""
    if isinstance(exc, MemoryError):
        detail = str(exc) or "no detail"
        return (
            f"out of memory ({detail}); give smaller inputs (fewer or shorter runs, a smaller --scale) "
            "or run where more memory is free"
        )
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT) and not exc.filename:
        where = [f"--{o} {v}" for o in OUTPUT_OPTIONS if isinstance(v := getattr(args, o, None), str) and v]
        target = f" while writing {where[0]}" if where else ""
        return f"{exc.strerror or 'no space left on the device'}{target}: free some space or write elsewhere"
    return None
