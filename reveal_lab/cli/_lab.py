"""``reveal-lab lab``: open the study notebooks in JupyterLab with a kernel that imports reveal_lab."""

from __future__ import annotations

import argparse

from reveal_lab.cli._ranges import int_in


def register(sub) -> None:  # noqa: ANN001 - argparse's private subparsers type
    p = sub.add_parser(
        "lab",
        help="open the study notebooks in JupyterLab (kernel 'reveal-lab')",
        description="Install the 'Python (reveal-lab)' kernel into this environment (sys.prefix) and start "
        "JupyterLab on notebooks/. Needs the 'lab' extra: pip install -e '.[lab]' (or make lab).",
    )
    p.add_argument("--notebooks", default=None, help="folder to open (default: the project's notebooks/)")
    p.add_argument("--port", type=int_in(1, 65535), default=None, help="port for JupyterLab")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--kernel-only", action="store_true", help="install the kernel and exit")
    p.add_argument(
        "--prefix", default=None, help="install the kernel under this prefix (default: sys.prefix)"
    )
    p.set_defaults(func=_run)


def jupyterlab_command(root: str, *, port: int | None, no_browser: bool, euid: int) -> list[str]:
    """The JupyterLab command line; ``--allow-root`` when the effective uid is 0
    (JupyterLab exits at once as root otherwise: "Running as root is not recommended").

    Examples
    --------
    >>> jupyterlab_command("nb", port=None, no_browser=True, euid=0)[3:]
    ['--notebook-dir=nb', '--no-browser', '--allow-root']
    >>> "--allow-root" in jupyterlab_command("nb", port=8888, no_browser=False, euid=1000)
    False
    """
    import sys

    cmd = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={root}"]
    if port:
        cmd.append(f"--port={port}")
    if no_browser:
        cmd.append("--no-browser")
    if euid == 0:
        cmd.append("--allow-root")
    return cmd


def _run(args: argparse.Namespace) -> int:
    import importlib.util
    import os
    import subprocess
    import sys

    from reveal_lab.notebooks import install_kernel, notebooks_dir

    path = install_kernel(prefix=args.prefix)
    print(f"kernel 'reveal-lab' ({sys.executable}) installed in {path}")
    if args.kernel_only:
        return 0
    if importlib.util.find_spec("jupyterlab") is None:
        print(
            "JupyterLab is not installed in this environment. Install the optional extra:\n"
            f"    {sys.executable} -m pip install -e '.[lab]'     (or: make lab)\n"
            "then run `reveal-lab lab` again. The kernel above also works in any Jupyter front end.",
            file=sys.stderr,
        )
        return 1
    root = args.notebooks or str(notebooks_dir())
    cmd = jupyterlab_command(root, port=args.port, no_browser=args.no_browser, euid=os.geteuid())
    if "--allow-root" in cmd:
        print(
            "running as root (containers and lab VMs do): passing --allow-root to JupyterLab, "
            "which otherwise refuses to start",
            file=sys.stderr,
        )
    print("starting:", " ".join(cmd))
    return subprocess.call(cmd, env=os.environ.copy())
