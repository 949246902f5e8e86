"""GPUs through NVML (``nvidia-ml-py``: handles opened once) or, as a fall-back, one
long-lived ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms <ms>`` child.

Both back-ends produce the same channels, named like the public dataset's
nvidia-smi columns: ``GPU: utilization.gpu.<index>.<host>[%]``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import numpy as np

from reveal_lab.collect._probe import Channel, Probe, ProbeContext, ProbeUnavailable
from reveal_lab.collect.probes._child import ChildLines

#: (nvidia-smi query field, unit, counter?) -- the channel field is the query field
GPU_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("utilization.gpu", "%", False),
    ("utilization.memory", "%", False),
    ("memory.used", "MiB", False),
    ("memory.total", "MiB", False),
    ("power.draw", "W", False),
    ("temperature.gpu", "C", False),
    ("clocks.sm", "MHz", False),
    ("clocks.mem", "MHz", False),
    ("pcie.link.gen.current", "-", False),
    ("pcie.link.width.current", "-", False),
    ("ecc.errors.corrected.volatile.total", "count", False),
    ("ecc.errors.uncorrected.volatile.total", "count", False),
    ("retired_pages.single_bit_ecc.count", "count", False),
    ("retired_pages.double_bit.count", "count", False),
    ("clocks_throttle_reasons.active", "-", False),
)
#: NVML-only fields (nvidia-smi has no query field for PCIe throughput)
NVML_EXTRA: tuple[tuple[str, str, bool], ...] = (
    ("pcie.tx_throughput", "KB/s", False),
    ("pcie.rx_throughput", "KB/s", False),
)
NA = {"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", "[Insufficient Permissions]", ""}


def parse_smi_value(text: str) -> float:
    """One nvidia-smi CSV value (``nounits``) as a float; N/A → nan; hex bitmasks → int.

    >>> parse_smi_value(" 71.32"), parse_smi_value("[N/A]"), parse_smi_value("0x0000000000000004")
    (71.32, nan, 4.0)
    """
    t = text.strip()
    if t in NA:
        return float("nan")
    if t.startswith("0x"):
        return float(int(t, 16))
    try:
        return float(t)
    except ValueError:
        return float("nan")


def parse_smi_line(line: str, n_fields: int) -> tuple[int, list[float]] | None:
    """``(gpu index, values)`` from one ``--query-gpu=index,<fields>`` CSV line; ``None`` if malformed.

    >>> parse_smi_line("0, 45, 12, 1024, 81559, 71.32, 40, 1755, 2619, 4, 16, 0, 0, [N/A], [N/A], "
    ...                "0x0000000000000000", 15)[1][:3]
    [45.0, 12.0, 1024.0]
    """
    parts = line.split(",")
    if len(parts) != n_fields + 1:
        return None
    try:
        idx = int(parts[0])
    except ValueError:
        return None
    return idx, [parse_smi_value(p) for p in parts[1:]]


def smi_command(interval_s: float, fields: list[str] | None = None, exe: str = "nvidia-smi") -> list[str]:
    """The long-lived child's command line (``--loop-ms``: one line per GPU per interval)."""
    names = [f for f, _, _ in GPU_FIELDS] if fields is None else fields
    return [
        exe,
        "--query-gpu=" + ",".join(["index", *names]),
        "--format=csv,noheader,nounits",
        f"--loop-ms={max(10, round(interval_s * 1000))}",
    ]


_INVALID_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')


def supported_smi_fields(exe: str, timeout: float = 20.0) -> tuple[list[str], dict[str, str]]:
    """Ask nvidia-smi once for every field; drop the ones this driver rejects."""
    fields = [f for f, _, _ in GPU_FIELDS]
    dropped: dict[str, str] = {}
    for _ in range(len(fields)):
        res = subprocess.run(
            [exe, "--query-gpu=" + ",".join(["index", *fields]), "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if res.returncode == 0:
            return fields, dropped
        m = _INVALID_FIELD.search(res.stdout + res.stderr)
        if m is None or m.group(1) not in fields:
            raise ProbeUnavailable(
                f"nvidia-smi --query-gpu failed: {(res.stderr or res.stdout).strip()[:200]}"
            )
        fields.remove(m.group(1))
        dropped[m.group(1)] = "not a valid field for this driver"
    raise ProbeUnavailable("nvidia-smi accepts none of the GPU fields")


def nvml_values(raw: dict[str, float | None]) -> list[float]:
    """NVML readings (native units) → channel values in :data:`GPU_FIELDS` + :data:`NVML_EXTRA` order.

    ``raw`` keys: ``util_gpu, util_mem`` (%), ``mem_used, mem_total`` (bytes), ``power_mw``,
    ``temp_c``, ``clock_sm, clock_mem`` (MHz), ``pcie_gen, pcie_width``, ``ecc_corr, ecc_uncorr``,
    ``retired_sbe, retired_dbe``, ``throttle`` (bitmask), ``pcie_tx_kbs, pcie_rx_kbs``;
    ``None`` where NVML did not answer.
    """
    nan = float("nan")

    def g(k: str, scale: float = 1.0) -> float:
        v = raw.get(k)
        return nan if v is None else float(v) * scale

    mib = 1.0 / (1024 * 1024)
    return [
        g("util_gpu"),
        g("util_mem"),
        g("mem_used", mib),
        g("mem_total", mib),
        g("power_mw", 1e-3),
        g("temp_c"),
        g("clock_sm"),
        g("clock_mem"),
        g("pcie_gen"),
        g("pcie_width"),
        g("ecc_corr"),
        g("ecc_uncorr"),
        g("retired_sbe"),
        g("retired_dbe"),
        g("throttle"),
        g("pcie_tx_kbs"),
        g("pcie_rx_kbs"),
    ]


class _Nvml:
    """NVML back-end: init once, one handle per GPU, calls that raise NotSupported are dropped."""

    def __init__(self) -> None:
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            raise ProbeUnavailable("nvidia-ml-py (pynvml) is not installed") from None
        self.nv = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise ProbeUnavailable(f"NVML init failed: {exc}") from None
        n = pynvml.nvmlDeviceGetCount()
        if n == 0:
            pynvml.nvmlShutdown()
            raise ProbeUnavailable("NVML sees no GPU")
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        self.models = [_s(pynvml.nvmlDeviceGetName(h)) for h in self.handles]
        nv = pynvml
        self.readers = {
            "util": lambda h: nv.nvmlDeviceGetUtilizationRates(h),
            "mem": lambda h: nv.nvmlDeviceGetMemoryInfo(h),
            "power_mw": lambda h: nv.nvmlDeviceGetPowerUsage(h),
            "temp_c": lambda h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
            "clock_sm": lambda h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            "clock_mem": lambda h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
            "pcie_gen": lambda h: nv.nvmlDeviceGetCurrPcieLinkGeneration(h),
            "pcie_width": lambda h: nv.nvmlDeviceGetCurrPcieLinkWidth(h),
            "ecc_corr": lambda h: nv.nvmlDeviceGetTotalEccErrors(
                h, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_VOLATILE_ECC
            ),
            "ecc_uncorr": lambda h: nv.nvmlDeviceGetTotalEccErrors(
                h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC
            ),
            "retired_sbe": lambda h: len(
                nv.nvmlDeviceGetRetiredPages(h, nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
            ),
            "retired_dbe": lambda h: len(
                nv.nvmlDeviceGetRetiredPages(h, nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
            ),
            "throttle": lambda h: nv.nvmlDeviceGetCurrentClocksThrottleReasons(h),
            "pcie_tx_kbs": lambda h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES),
            "pcie_rx_kbs": lambda h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES),
        }
        self.unsupported: set[str] = set()
        self.read(0)  # find unsupported calls once
        self.slow = {"pcie_tx_kbs", "pcie_rx_kbs", "retired_sbe", "retired_dbe", "ecc_corr", "ecc_uncorr"}
        self.cache: dict[tuple[int, str], object] = {}

    def read(self, i: int, tick: int = 0) -> dict[str, float | None]:
        h = self.handles[i]
        raw: dict[str, float | None] = {}
        for key, fn in self.readers.items():
            if key in self.unsupported:
                continue
            # PCIe throughput blocks ~20 ms per call; ECC/retired pages change rarely: every 10th tick
            if tick and key in getattr(self, "slow", ()) and tick % 10:
                v = self.cache.get((i, key))
            else:
                try:
                    v = fn(h)
                except self.nv.NVMLError_NotSupported:  # type: ignore[attr-defined]
                    self.unsupported.add(key)
                    continue
                except self.nv.NVMLError:
                    v = None
                if hasattr(self, "cache"):
                    self.cache[(i, key)] = v
            if key == "util":
                raw["util_gpu"], raw["util_mem"] = (v.gpu, v.memory) if v is not None else (None, None)
            elif key == "mem":
                raw["mem_used"], raw["mem_total"] = (v.used, v.total) if v is not None else (None, None)
            else:
                raw[key] = v  # type: ignore[assignment]
        return raw

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _s(x: object) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


class Gpu(Probe):
    """NVIDIA GPUs: utilization, memory, power, temperature, clocks, PCIe, ECC, throttling."""

    name, group = "gpu", "gpu"
    description = "NVML (nvidia-ml-py) or a long-lived nvidia-smi -lms child"

    def open(self, ctx: ProbeContext) -> None:
        self.nvml: _Nvml | None = None
        self.child = None
        reasons = []
        if ctx.gpu_backend in ("auto", "nvml"):
            try:
                self.nvml = _Nvml()
            except ProbeUnavailable as exc:
                reasons.append(str(exc))
        if self.nvml is not None:
            self.n_gpu = len(self.nvml.handles)
            fields = GPU_FIELDS + NVML_EXTRA
            self.info.update(
                backend="nvml", models=self.nvml.models, unsupported=sorted(self.nvml.unsupported)
            )
        elif ctx.gpu_backend in ("auto", "nvidia-smi"):
            self._open_smi(ctx, reasons)
            fields = tuple(f for f in GPU_FIELDS if f[0] in self.smi_fields)
        else:
            raise ProbeUnavailable("; ".join(reasons))
        self.channels = [
            Channel("GPU", f, str(i), u, counter=c, dtype="f")
            for i in range(self.n_gpu)
            for f, u, c in fields
        ]
        self.tick = 0

    def _open_smi(self, ctx: ProbeContext, reasons: list[str]) -> None:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            reasons.append("`nvidia-smi` is not installed")
            raise ProbeUnavailable("no GPU back-end: " + "; ".join(reasons))
        try:
            res = subprocess.run(
                [exe, "--query-gpu=index,name", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ProbeUnavailable(f"nvidia-smi failed: {exc}") from None
        rows = [r.split(",", 1) for r in res.stdout.strip().splitlines() if "," in r]
        if res.returncode != 0 or not rows:
            raise ProbeUnavailable(f"nvidia-smi sees no GPU: {(res.stderr or res.stdout).strip()[:200]}")
        self.n_gpu = len(rows)
        self.smi_fields, dropped = supported_smi_fields(exe)
        self.info.update(backend="nvidia-smi", models=[r[1].strip() for r in rows], dropped_fields=dropped)
        self.cmd = smi_command(ctx.interval_s, self.smi_fields, exe)
        self.info["command"] = " ".join(self.cmd)
        self.child = ChildLines(self.cmd)
        nan = float("nan")
        self.latest = {i: [nan] * len(self.smi_fields) for i in range(self.n_gpu)}
        t_end = time.monotonic() + 5
        while time.monotonic() < t_end and all(v[0] != v[0] for v in self.latest.values()):
            time.sleep(0.05)
            self._drain()

    def _drain(self) -> None:
        for raw in self.child.lines():
            p = parse_smi_line(raw.decode(errors="replace"), len(self.smi_fields))
            if p is not None and p[0] in self.latest:
                self.latest[p[0]] = p[1]
        if self.child.eof and not getattr(self, "_eof", False):
            # the child exited: its values are missing from now on; said once
            self._eof = True
            from reveal_lab.collect._probe import log

            log.warning(
                "probe gpu: nvidia-smi exited (status %s); GPU values are missing from now on",
                self.child.proc.poll(),
            )
            nan = float("nan")
            self.latest = {i: [nan] * len(self.smi_fields) for i in range(self.n_gpu)}

    def sample(self, ints: np.ndarray, floats: np.ndarray) -> None:
        vals: list[float] = []
        if self.nvml is not None:
            for i in range(self.n_gpu):
                vals += nvml_values(self.nvml.read(i, self.tick))
        else:
            self._drain()
            for i in range(self.n_gpu):
                vals += self.latest[i]
        floats[:] = vals
        self.tick += 1

    def close(self) -> None:
        if getattr(self, "nvml", None) is not None:
            self.nvml.close()  # type: ignore[union-attr]
        if getattr(self, "child", None) is not None:
            self.child.stop()
