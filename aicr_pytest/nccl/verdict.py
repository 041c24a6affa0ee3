"""NCCL verdict (section 5 of a run): the transport rule, the threshold, the reported lines.

:func:`verify_transport` applies the variant's transport rule to what the parser saw;
:func:`evaluate` compares the bandwidth with the threshold and its tolerance and yields the two
stdout lines the guide documents; :func:`sweep_plot` draws the sweep as SVG evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aicr_pytest.core import records
from aicr_pytest.nccl.parse import SweepRow, TransportInfo
from aicr_pytest.nccl.variant import NcclCheckFailure, Threshold, Variant

MSG_NET_NO_BANNER = (
    "NET variant selected but no 'NCCL INFO Using network <plugin>' banner found — the network transport "
    "plugin did not initialize (check NCCL_NET_PLUGIN and that the provider plugin .so is on LD_LIBRARY_PATH)"
)
MSG_NET_SOCKET = (
    "NET variant selected but NCCL fell back to 'Using network Socket' — provider plugin "
    "(e.g. AWS Libfabric) did not load"
)
MSG_NVLS_NOT_AVAILABLE = (
    "NVLS variant selected but 'NVLS multicast support is available' banner not found in NCCL logs — "
    "MNNVL did not initialize (check DRA IMEX channel claim and NCCL_NVLS_ENABLE=1)"
)
MSG_NVLS_NO_COMM = (
    "NVLS variant selected but no 'NVLS comm 0x<addr>' init line found in NCCL logs — NVLS was available "
    "but NCCL did not build an NVLS communicator (check for 'NVLS_NCHANNELS' > 0 and no NVLS-disabling env "
    "overrides)"
)

# --- verdict ---------------------------------------------------------------
MSG_BANDWIDTH_LINE = "NCCL All Reduce bandwidth ({check}): {bandwidth:.2f} GB/s"
MSG_CONSTRAINT_LINE = "Constraint: {constraint} → {verdict}"
MSG_NOT_SATISFIED = 'NCCL bandwidth {bandwidth:.2f} GB/s does not satisfy constraint "{constraint}"'


class TransportError(NcclCheckFailure):
    """The variant's transport did not carry the traffic."""


def verify_transport(variant: Variant, transport: TransportInfo) -> None:
    """The variant's transport rule; raises :class:`TransportError`."""
    if variant == "net":
        plugin = transport.network_plugin
        if plugin is None:
            raise TransportError(MSG_NET_NO_BANNER)
        if plugin == "Socket":
            raise TransportError(MSG_NET_SOCKET)
    elif variant == "nvls":
        if not transport.nvls_available:
            raise TransportError(MSG_NVLS_NOT_AVAILABLE)
        if not transport.nvls_comm:
            raise TransportError(MSG_NVLS_NO_COMM)


def bandwidth_line(check: str, bandwidth_gbps: float) -> str:
    return MSG_BANDWIDTH_LINE.format(check=check, bandwidth=bandwidth_gbps)


def constraint_line(threshold: Threshold, passed: bool) -> str:
    return MSG_CONSTRAINT_LINE.format(constraint=threshold.raw, verdict="true" if passed else "false")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    lines: tuple[str, str]  #: the two stdout lines of the guide
    failure: str | None  #: the failure message when not passed
    measurement: records.Measurement | None = None  #: the value against its constraint (reports)


def evaluate(check: str, threshold: Threshold, bandwidth_gbps: float) -> Verdict:
    """Compare a measured (and transport-verified) bandwidth with the threshold."""
    passed = threshold.passes(bandwidth_gbps)
    lines = (bandwidth_line(check, bandwidth_gbps), constraint_line(threshold, passed))
    failure = None if passed else MSG_NOT_SATISFIED.format(bandwidth=bandwidth_gbps, constraint=threshold.raw)
    measurement = records.Measurement(
        name="bus bandwidth",
        value=bandwidth_gbps,
        unit="GB/s",
        constraint=threshold.raw,
        tolerance=round(abs(threshold.effective / threshold.value - 1), 6) if threshold.value else None,
        effective_threshold=threshold.effective,
        passed=passed,
    )
    return Verdict(passed=passed, lines=lines, failure=failure, measurement=measurement)


def sweep_plot(check: str, rows: Sequence[SweepRow], threshold: Threshold | None) -> str:
    """SVG evidence: busbw vs message size with the constraint and its tolerance bound."""
    from aicr_pytest.nccl.plot import busbw_svg

    return busbw_svg(
        [(r.size_bytes, r.busbw_gbps) for r in rows],
        title=f"{check}: all_reduce_perf out-of-place busbw",
        threshold=threshold.value if threshold is not None else None,
        threshold_label=f"constraint {threshold.raw} GB/s" if threshold is not None else None,
        pass_bound=threshold.effective if threshold is not None else None,
    )
