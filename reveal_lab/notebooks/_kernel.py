"""A Jupyter kernel that runs this very Python (the one that imports ``reveal_lab``)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["KERNEL_NAME", "kernel_spec", "ensure_kernel", "install_kernel"]

KERNEL_NAME = "reveal-lab"
DISPLAY_NAME = "Python (reveal-lab)"
_ENSURED: dict[str, Path] = {}


def kernel_spec() -> dict[str, object]:
    """The kernel.json of a kernel running ``sys.executable`` in Python's UTF-8 mode: the
    files a notebook writes are UTF-8 whatever the locale (a Latin-1 locale would otherwise
    fail on the first table holding a character outside it)."""
    return {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": DISPLAY_NAME,
        "language": "python",
        "env": {"PYTHONUTF8": "1"},
        "metadata": {"debugger": True},
    }


def ensure_kernel(name: str = KERNEL_NAME) -> Path:
    """Make kernel ``name`` resolve to this interpreter for this process and its children.

    The spec is written to a private folder that is put first on ``JUPYTER_PATH``, so a
    stale ``reveal-lab`` kernel elsewhere (another venv, ``~/.local``) cannot shadow it.
    Nothing outside that folder is written. Returns the kernel's folder.
    """
    known = _ENSURED.get(name)
    on_path = known is not None and str(known.parent.parent) in os.environ.get("JUPYTER_PATH", "")
    if known is not None and known.exists() and on_path:
        return known
    root = Path(tempfile.mkdtemp(prefix="reveal-lab-kernel-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    kdir = root / "kernels" / name
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps(kernel_spec(), indent=1), encoding="utf-8")
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    _ENSURED[name] = kdir
    return kdir


def install_kernel(name: str = KERNEL_NAME, prefix: str | None = None) -> Path:
    """Install the kernel for JupyterLab: into ``prefix`` (default ``sys.prefix``, the venv),
    like ``python -m ipykernel install --sys-prefix --name reveal-lab``."""
    from ipykernel.kernelspec import install

    path = install(kernel_name=name, display_name=DISPLAY_NAME, prefix=prefix or sys.prefix)
    return Path(path)
