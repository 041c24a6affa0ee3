"""The simulator's NCCL launcher log: what the player writes must read like all_reduce_perf output."""

from __future__ import annotations

import pytest

from aicr_pytest import nccl
from aicr_pytest.testing.players.nccl import LauncherSpec, parse_size, peak_busbw, render_launcher_log

WORKERS = [f"nccl-x-node-0-{i}" for i in range(4)]


def render(spec: LauncherSpec, *, product: str, peak: float, network: str, procs: int = 8) -> str:
    head, rows, trailer = render_launcher_log(
        jobset="nccl-x",
        spec=spec,
        workers=WORKERS,
        procs_per_node=procs,
        product=product,
        peak_gbps=peak,
        network=network,
        seed="s",
    )
    return head + "".join(r + "\n" for r in rows) + trailer


@pytest.mark.parametrize(("text", "size"), [("1K", 1024), ("16G", 16 << 30), ("4G", 4 << 30), ("512", 512)])
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_launcher_spec_reads_mpirun_args_and_env() -> None:
    container = {
        "command": ["mpirun"],
        "args": ["-x", "NCCL_DEBUG=INFO", "-x", "FI_PROVIDER=efa", "all_reduce_perf", "-b", "1K", "-e", "4G"],
    }
    spec = LauncherSpec.from_container(container)
    assert (spec.min_bytes, spec.max_bytes, spec.factor) == (1024, 4 << 30, 2)
    assert spec.debug_info and not spec.nvls and spec.network == "AWS Libfabric"
    nvls = LauncherSpec.from_container({"args": ["-x", "NCCL_NVLS_ENABLE=1", "-x", "NCCL_NET_PLUGIN=none"]})
    assert nvls.nvls and nvls.network == "Socket" and not nvls.debug_info


def test_h100_log_parses_to_the_modelled_peak_without_info_lines() -> None:
    spec = LauncherSpec()
    text = render(
        spec, product="NVIDIA-H100-80GB-HBM3", peak=peak_busbw("NVIDIA-H100-80GB-HBM3", spec), network=""
    )
    result = nccl.parse_all_reduce(text)
    assert 440 <= result.busbw_gbps <= 465 and result.size_bytes == 16 << 30 and result.complete
    assert len(result.rows) == 25 and result.avg_busbw_gbps is not None
    assert "NCCL INFO" not in text and "NVIDIA H100 80GB HBM3" in text
    assert result.transport.network is None


def test_net_and_nvls_logs_carry_the_transport_markers() -> None:
    net = LauncherSpec(debug_info=True, network="AWS Libfabric")
    result = nccl.parse_all_reduce(
        render(net, product="NVIDIA-GB200", peak=96.0, network="AWS Libfabric", procs=4)
    )
    nccl.verify_transport("net", result.transport)
    assert result.transport.network == "AWS Libfabric"
    fallback = nccl.parse_all_reduce(
        render(net, product="NVIDIA-GB200", peak=96.0, network="Socket", procs=4)
    )
    with pytest.raises(nccl.TransportError, match="fell back to 'Using network Socket'"):
        nccl.verify_transport("net", fallback.transport)
    nvls = LauncherSpec(debug_info=True, nvls=True)
    result = nccl.parse_all_reduce(
        render(nvls, product="NVIDIA-GB200", peak=742.0, network="Socket", procs=4)
    )
    nccl.verify_transport("nvls", result.transport)
    assert result.transport.nvls


def test_max_message_size_bounds_the_sweep() -> None:
    spec = LauncherSpec(max_bytes=4 << 30)
    result = nccl.parse_all_reduce(render(spec, product="NVIDIA-H100-80GB-HBM3", peak=450.0, network=""))
    assert result.size_bytes == 4 << 30 and len(result.rows) == 23
