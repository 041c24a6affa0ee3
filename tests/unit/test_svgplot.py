"""The dependency-free busbw SVG plot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from aicr_pytest.nccl.plot import busbw_svg, format_size

NS = "{http://www.w3.org/2000/svg}"


def test_format_size() -> None:
    assert [format_size(s) for s in (0, 1, 1024, 1536, 1 << 30, 17179869184)] == [
        "0B",
        "1B",
        "1KiB",
        "1.5KiB",
        "1GiB",
        "16GiB",
    ]


def test_plot_is_valid_svg_with_points_and_threshold() -> None:
    rows = [(0, 0.0), *((1 << i, float(i * 10)) for i in range(10, 35))]
    svg = busbw_svg(
        rows,
        title="nccl-all-reduce-bw <h100/eks>",
        threshold=300.0,
        threshold_label=">= 300",
        pass_bound=270.0,
    )
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    circles = root.findall(f".//{NS}circle")
    assert len(circles) == 25  # the 0-byte row has no place on a log axis
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "nccl-all-reduce-bw <h100/eks>" in texts  # escaped in the source, intact once parsed
    assert ">= 300" in texts
    assert "16GiB" in texts
    dashed = [ln for ln in root.iter(f"{NS}line") if ln.get("stroke-dasharray")]
    assert len(dashed) == 2
    assert root.find(f".//{NS}polyline") is not None


def test_plot_without_rows() -> None:
    root = ET.fromstring(busbw_svg([], title="t"))
    assert "no data rows" in [t.text for t in root.iter(f"{NS}text")]


def test_single_point_plot() -> None:
    root = ET.fromstring(busbw_svg([(1024, 5.0)], title="t", threshold=10.0))
    assert len(root.findall(f".//{NS}circle")) == 1


def test_nccl_sweep_plot() -> None:
    from aicr_pytest import nccl

    rows = [nccl.SweepRow(1 << i, float(i), float(i)) for i in range(10, 20)]
    root = ET.fromstring(nccl.sweep_plot("nccl-all-reduce-bw", rows, nccl.parse_threshold("x", ">= 300")))
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "constraint >= 300 GB/s" in texts
    assert "pass bound 270 GB/s" in texts
    assert ET.fromstring(nccl.sweep_plot("c", rows, None)).find(f".//{NS}polyline") is not None
