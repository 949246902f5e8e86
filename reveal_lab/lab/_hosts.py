"""Lab "hosts" on one Linux machine: a network namespace + a cgroup pinned to its own core.

A :class:`LabHost` is what one machine of a cluster is in the lab dataset:

* its own **network namespace** (``ip netns``) with one end of a veth pair and an address
  on a private test subnet created *inside* the namespaces (default ``10.77.0.0/24``), so
  ``/proc/net/*`` (interface bytes, TCP retransmissions, sockets) is per host and traffic
  flows only between our own namespaces. Two hosts share one veth pair; three or more
  are each joined by a veth to a bridge ``br0`` in a namespace of its own (the "switch",
  :func:`bridge_namespace`), so nothing of the lab touches the machine's own network;
* its **network processing steered** to its own core: receive packet steering
  (``rps_cpus``) of its veth's receive queue and transmit steering (``xps_cpus``) set to
  its core's mask, on both ends of its link ("spread", :meth:`LabHost.set_steering`); the
  IRQ-imbalance case study moves every host's to one core. A veth has no hardware IRQ, so
  ``/proc/irq/*/smp_affinity`` does not apply; RPS is where its softirq work is placed;
* its own **cgroup** (v2 when the machine runs the unified hierarchy, else the v1
  ``cpuset``/``cpu``/``cpuacct``/``memory``/``blkio`` controllers) whose cpuset pins every
  process of the host to its own CPU core, so per-core CPU metrics differ by host and a
  per-host CPU quota or memory limit is a real configuration difference.

``/proc/stat``, ``/proc/meminfo`` and ``/proc/diskstats`` stay global (one kernel): the
hosts share them, which the dataset's provenance README states.

Processes are started in a host with :meth:`LabHost.popen`: the child joins the host's
cgroups before it execs, and enters the namespace with ``nsenter --net`` (not
``ip netns exec``, which remounts ``/sys`` and would hide ``/sys/fs/cgroup`` from the
collector's cgroup probe; ``/proc/net`` follows the network namespace either way).

Everything needs root. :func:`lab_hosts` is a context manager that always tears down
what it set up (namespaces, veths, iptables rules die with the namespace; cgroups are
emptied and removed), also when the body raises.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MAX_HOSTS",
    "bridge_namespace",
    "LabHost",
    "LabError",
    "lab_hosts",
    "setup_hosts",
    "teardown_hosts",
    "require_root",
    "cgroup_version",
    "CGROUP_ROOT",
]

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: parent cgroup of all lab hosts
CGROUP_PARENT = "reveal_lab"
V1_CONTROLLERS = ("cpuset", "cpu", "cpuacct", "memory", "blkio")
#: most hosts one lab may have (addresses .1 to .8 of the subnet)
MAX_HOSTS = 8


class LabError(RuntimeError):
    """The lab harness could not set up or drive a host (not root, missing tool, ...)."""


def require_root(tools: Sequence[str] = ("ip", "nsenter")) -> None:
    """Raise :class:`LabError` unless we are root and ``tools`` are on ``PATH``."""
    if os.geteuid() != 0:
        raise LabError("the lab harness needs root (network namespaces, cgroups, iptables)")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise LabError(f"missing tools: {', '.join(missing)} (scripts/bootstrap.sh installs iptables)")


def cgroup_version() -> int:
    """2 when ``/sys/fs/cgroup`` is the unified hierarchy with controllers, else 1."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return 2
    if (CGROUP_ROOT / "cpuset").is_dir():
        return 1
    raise LabError(f"no usable cgroup hierarchy under {CGROUP_ROOT}")


def _run(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise LabError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise LabError(f"cannot write {value!r} to {path}: {exc}") from exc


@dataclass
class LabHost:
    """One lab host: namespace ``name``, veth ``veth`` with ``address``, cgroup pinned to ``core``."""

    name: str
    address: str
    core: int
    veth: str
    prefix_len: int = 24
    cgroups: dict[str, Path] = field(default_factory=dict)  #: controller ("" on v2) -> cgroup dir
    bridge_ns: str | None = None  #: the switch namespace (three hosts or more), else None
    peer_veth: str | None = None  #: the other end of this host's veth (in ``bridge_ns``)

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.name}"

    @property
    def cgroup_v2_root(self) -> Path | None:
        """A v2 directory whose only child cgroup is this host (for ``collect --cgroup-root``)."""
        d = self.cgroups.get("", self.cgroups.get("unified"))
        return None if d is None else d.parent

    @property
    def cgroup_path(self) -> Path:
        """The host's main cgroup directory (v2: the one dir; v1: the cpuacct one)."""
        return self.cgroups.get("", self.cgroups.get("cpuacct", next(iter(self.cgroups.values()))))

    # -- processes -------------------------------------------------------------------------
    def _join_cgroups(self) -> None:  # runs in the child between fork and exec
        pid = str(os.getpid())
        for d in self.cgroups.values():
            with open(d / "cgroup.procs", "w") as fh:
                fh.write(pid)

    def wrap(self, cmd: Sequence[str]) -> list[str]:
        """``cmd`` as run inside this host's network namespace."""
        return ["nsenter", f"--net={self.netns_path}", "--", *cmd]

    def popen(self, cmd: Sequence[str], *, netns: bool = True, **kw) -> subprocess.Popen:
        """Start ``cmd`` inside this host (its cgroups, and its namespace unless ``netns=False``)."""
        full = self.wrap(cmd) if netns else list(cmd)
        kw.setdefault("start_new_session", True)
        return subprocess.Popen(full, preexec_fn=self._join_cgroups, **kw)  # noqa: PLW1509

    def run(
        self, cmd: Sequence[str], *, check: bool = True, timeout: float | None = 60
    ) -> subprocess.CompletedProcess:
        """Run ``cmd`` inside this host's namespace and wait."""
        r = subprocess.run(self.wrap(cmd), capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise LabError(f"[{self.name}] {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    # -- configuration ---------------------------------------------------------------------
    def set_cpu_quota(self, fraction: float | None) -> None:
        """Limit the host to ``fraction`` of one core (``None``: no limit)."""
        period = 100_000
        if "" in self.cgroups:
            _write(
                self.cgroups[""] / "cpu.max",
                "max" if fraction is None else f"{int(fraction * period)} {period}",
            )
        else:
            _write(self.cgroups["cpu"] / "cpu.cfs_period_us", str(period))
            _write(
                self.cgroups["cpu"] / "cpu.cfs_quota_us",
                "-1" if fraction is None else str(int(fraction * period)),
            )

    def cpu_quota(self) -> float | None:
        """The host's CPU quota as a fraction of one core, ``None`` when unlimited."""
        if "" in self.cgroups:
            q, p = (self.cgroups[""] / "cpu.max").read_text().split()
            return None if q == "max" else int(q) / int(p)
        q = int((self.cgroups["cpu"] / "cpu.cfs_quota_us").read_text())
        p = int((self.cgroups["cpu"] / "cpu.cfs_period_us").read_text())
        return None if q < 0 else q / p

    def _steering_files(self) -> list[tuple[str, str]]:
        """(namespace, sysfs file) pairs that place this host's network processing."""
        q = "/sys/class/net/{dev}/queues/{q}"
        out = [(self.name, q.format(dev=self.veth, q="rx-0") + "/rps_cpus")]
        out.append((self.name, q.format(dev=self.veth, q="tx-0") + "/xps_cpus"))
        if self.bridge_ns and self.peer_veth:
            out.append((self.bridge_ns, q.format(dev=self.peer_veth, q="rx-0") + "/rps_cpus"))
        return out

    def set_steering(self, core: int | None = None) -> dict[str, str]:
        """Steer this host's network processing (RPS/XPS of its link) to ``core`` (default: its own).

        Runs ``ip netns exec`` (which mounts the namespace's own ``/sys``) to write the
        hexadecimal CPU masks; returns ``{file: mask}`` as written. Raises
        :class:`LabError` when the kernel lacks the files (no ``CONFIG_RPS``).
        """
        mask = f"{1 << (self.core if core is None else core):x}"
        done = {}
        for ns, path in self._steering_files():
            r = subprocess.run(
                ["ip", "netns", "exec", ns, "sh", "-c", f"echo {mask} > {path}"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            if r.returncode != 0:
                raise LabError(f"[{ns}] cannot steer network processing: {path}: {r.stderr.strip()}")
            done[f"{ns}:{path}"] = mask
        return done

    def steering(self) -> dict[str, str]:
        """The current RPS/XPS masks of this host's link (``{file: mask}``)."""
        out = {}
        for ns, path in self._steering_files():
            r = subprocess.run(
                ["ip", "netns", "exec", ns, "cat", path], capture_output=True, text=True, timeout=30
            )
            out[f"{ns}:{path}"] = r.stdout.strip() if r.returncode == 0 else "unavailable"
        return out

    def pids(self) -> list[int]:
        out: set[int] = set()
        for d in self.cgroups.values():
            with contextlib.suppress(OSError):
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
        return sorted(out)


def _make_cgroups(name: str, core: int) -> dict[str, Path]:
    if cgroup_version() == 2:
        parent = CGROUP_ROOT / CGROUP_PARENT
        parent.mkdir(exist_ok=True)
        wanted = {"cpuset", "cpu", "memory", "io"}
        avail = set((CGROUP_ROOT / "cgroup.controllers").read_text().split())
        enable = " ".join(f"+{c}" for c in sorted(wanted & avail))
        (parent / name).mkdir(exist_ok=True)
        for d in (CGROUP_ROOT, parent, parent / name):  # host dir nested one level: see cgroup_v2_root
            with contextlib.suppress(LabError):
                _write(d / "cgroup.subtree_control", enable)
        d = parent / name / name
        d.mkdir(exist_ok=True)
        if (d / "cpuset.cpus").exists():
            _write(d / "cpuset.cpus", str(core))
        return {"": d}
    dirs: dict[str, Path] = {}
    for ctl in V1_CONTROLLERS:
        base = CGROUP_ROOT / ctl
        if not base.is_dir():
            continue
        parent = base / CGROUP_PARENT
        parent.mkdir(exist_ok=True)
        if ctl == "cpuset":
            for f in ("cpuset.cpus", "cpuset.mems"):  # a v1 cpuset needs both before tasks join
                if not (parent / f).read_text().strip():
                    _write(parent / f, (base / f).read_text().strip())
        d = parent / name
        d.mkdir(exist_ok=True)
        if ctl == "cpuset":
            _write(d / "cpuset.cpus", str(core))
            _write(d / "cpuset.mems", (parent / "cpuset.mems").read_text().strip())
        dirs[ctl] = d
    if "cpuset" not in dirs:
        raise LabError("the cgroup v1 cpuset controller is not mounted")
    # hybrid hierarchy: also a v2 cgroup (cpu.stat, *.pressure exist without controllers), one level
    # below a per-host root, so the collector's cgroup probe can follow exactly this host
    unified = CGROUP_ROOT / "unified"
    if (unified / "cgroup.controllers").exists():
        d = unified / CGROUP_PARENT / name / name
        d.mkdir(parents=True, exist_ok=True)
        dirs["unified"] = d
    return dirs


def _kill_cgroup(host: LabHost, timeout: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = host.pids()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        end = time.time() + timeout
        while time.time() < end and host.pids():
            time.sleep(0.05)


def _remove_cgroups(host: LabHost) -> None:
    for d in host.cgroups.values():
        for _ in range(50):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        else:
            log.warning("could not remove cgroup %s", d)
    # the per-host and shared parents go when they are empty
    parents = {p.parent for p in host.cgroups.values()}
    parents |= {p.parent for p in parents if p.name == host.name}
    for d in sorted(parents, key=lambda p: -len(p.parts)):
        if d.name in (host.name, CGROUP_PARENT):
            with contextlib.suppress(OSError):
                d.rmdir()


def bridge_namespace(names: Sequence[str]) -> str:
    """The switch namespace of a lab of three hosts or more: the names' common prefix + ``sw``.

    >>> bridge_namespace(["labA", "labB", "labC"])
    'labsw'
    """
    prefix = os.path.commonprefix(list(names)) or "reveal"
    return f"{prefix[:10]}sw"


def setup_hosts(
    names: Sequence[str] = ("labA", "labB"), *, subnet: str = "10.77.0", cores: Sequence[int] | None = None
) -> list[LabHost]:
    """Create the lab hosts: namespaces, their link(s), addresses, cgroups, spread steering.

    One host: a veth whose other end stays outside; two: one veth pair between them;
    three to :data:`MAX_HOSTS`: a veth from each to a bridge in :func:`bridge_namespace`.
    ``cores`` defaults to ``0, 1, ...`` modulo the number of CPUs. Existing leftovers of an
    earlier crashed run with the same names are removed first. Each host's network
    processing is steered to its own core when the kernel allows it (RPS/XPS; else logged).
    """
    require_root()
    if not 1 <= len(names) <= MAX_HOSTS or len(set(names)) != len(names):
        raise LabError(f"the lab harness takes 1 to {MAX_HOSTS} distinct host names, got {list(names)}")
    ncpu = os.cpu_count() or 1
    cores = list(cores) if cores is not None else [i % ncpu for i in range(len(names))]
    bridge = bridge_namespace(names) if len(names) >= 3 else None
    teardown_hosts([LabHost(n, "", 0, f"v{n}"[:15], bridge_ns=bridge) for n in names], quiet=True)
    hosts = [
        LabHost(
            n,
            f"{subnet}.{i + 1}",
            cores[i],
            f"v{n}"[:15],
            bridge_ns=bridge,
            peer_veth=f"b{n}"[:15] if bridge else None,
        )
        for i, n in enumerate(names)
    ]
    try:
        for h in hosts:
            _run(["ip", "netns", "add", h.name])
            _run(["ip", "-n", h.name, "link", "set", "lo", "up"])
        if bridge:
            _run(["ip", "netns", "add", bridge])
            _run(["ip", "-n", bridge, "link", "add", "br0", "type", "bridge"])
            _run(["ip", "-n", bridge, "link", "set", "br0", "up"])
            for h in hosts:
                _run(
                    ["ip", "link", "add", h.veth, "netns", h.name, "type", "veth"]
                    + ["peer", "name", h.peer_veth, "netns", bridge]
                )
                _run(["ip", "-n", bridge, "link", "set", h.peer_veth, "master", "br0"])
                _run(["ip", "-n", bridge, "link", "set", h.peer_veth, "up"])
        elif len(hosts) == 2:
            a, b = hosts
            _run(
                ["ip", "link", "add", a.veth, "netns", a.name, "type", "veth"]
                + ["peer", "name", b.veth, "netns", b.name]
            )
        else:  # one host: a veth whose other end stays outside, so the host still has a real link
            a = hosts[0]
            _run(["ip", "link", "add", a.veth, "netns", a.name, "type", "veth", "peer", "name", a.veth + "p"])
            _run(["ip", "link", "set", a.veth + "p", "up"])
        for h in hosts:
            _run(["ip", "-n", h.name, "addr", "add", f"{h.address}/{h.prefix_len}", "dev", h.veth])
            _run(["ip", "-n", h.name, "link", "set", h.veth, "up"])
            h.cgroups = _make_cgroups(h.name, h.core)
        for h in hosts:
            try:
                h.set_steering()
            except LabError as exc:  # a kernel without RPS: the hosts still work
                log.warning("%s", exc)
    except Exception:
        teardown_hosts(hosts, quiet=True)
        raise
    return hosts


def teardown_hosts(hosts: Sequence[LabHost], *, quiet: bool = False) -> None:
    """Kill every process in the hosts' cgroups, remove cgroups, veths and namespaces."""
    for h in hosts:
        if not h.cgroups:  # find leftovers by name
            h.cgroups = _existing_cgroups(h.name)
        try:
            _kill_cgroup(h)
            _remove_cgroups(h)
        except Exception as exc:  # noqa: BLE001 - teardown goes on with the rest
            if not quiet:
                log.warning("cgroup teardown of %s: %s", h.name, exc)
        # processes still inside the namespace but outside the cgroup (should not happen)
        r = _run(["ip", "netns", "pids", h.name], check=False)
        for pid in r.stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _run(["ip", "netns", "del", h.name], check=False)
        _run(["ip", "link", "del", h.veth + "p"], check=False)
    for bridge in sorted({h.bridge_ns for h in hosts if h.bridge_ns}):
        _run(["ip", "netns", "del", bridge], check=False)


def _existing_cgroups(name: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    if (CGROUP_ROOT / CGROUP_PARENT / name / name).is_dir():
        out[""] = CGROUP_ROOT / CGROUP_PARENT / name / name
    for ctl in V1_CONTROLLERS:
        d = CGROUP_ROOT / ctl / CGROUP_PARENT / name
        if d.is_dir():
            out[ctl] = d
    d = CGROUP_ROOT / "unified" / CGROUP_PARENT / name / name
    if d.is_dir():
        out["unified"] = d
    return out


@contextlib.contextmanager
def lab_hosts(names: Sequence[str] = ("labA", "labB"), **kw) -> Iterator[list[LabHost]]:
    """Set up lab hosts for the ``with`` body and always tear them down afterwards."""
    hosts = setup_hosts(names, **kw)
    try:
        yield hosts
    finally:
        teardown_hosts(hosts)
