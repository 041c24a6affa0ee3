"""health.exporter: the strict Prometheus parser, the thresholds and the per-GPU health verdict."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.core.errors import Inconclusive, UsageError
from aicr_pytest.health import exporter as ex
from aicr_pytest.health.common import HealthCheckFailed, HealthInconclusive

DEFAULT = ex.health_thresholds()


def scrape_text(gpus: int = 2, overrides: dict[tuple[int, str], float] | None = None, **extra: float) -> str:
    """An exporter scrape with the default-list health series (plus ``extra`` metrics per GPU)."""
    values: dict[str, float] = {ex.XID: 0, ex.ROW_REMAP_FAILURE: 0, ex.REMAPPED_ROWS: 0, **extra}
    lines = [f"# HELP {ex.XID} Value of the last XID error encountered.", f"# TYPE {ex.XID} gauge"]
    for i in range(gpus):
        for metric, value in values.items():
            v = (overrides or {}).get((i, metric), value)
            labels = f'gpu="{i}", UUID="GPU-{i:04d}", device="nvidia{i}", Hostname="dcgm-exporter-x"'
            lines.append(f"{metric}{{{labels}}} {'NaN' if v != v else f'{v:g}'}")
    lines.append('DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0000"} 41')
    return "\n".join(lines) + "\n"


def pair(node: str, before: str, after: str) -> tuple[ex.ExporterScrape, ex.ExporterScrape]:
    return ex.parse_scrape(before, node), ex.parse_scrape(after, node)


def judge(
    *pairs: tuple[ex.ExporterScrape, ex.ExporterScrape], t: ex.HealthThresholds = DEFAULT, **kw: Any
) -> str:
    return ex.check_exporter_health(list(pairs), t, **kw)


# --- parser -------------------------------------------------------------------------------------


def test_parser_reads_labels_escapes_values_and_timestamps() -> None:
    text = (
        "# some comment\n"
        "# TYPE m counter\n"
        'm{a="x\\"y",b="1\\\\2",c="line\\nbreak",} 3.5e2 1700000000000\n'
        "plain 7\n"
        'inf_metric{gpu="0"} +Inf\n'
        'nan_metric{gpu="0"} NaN\n'
    )
    s = ex.parse_scrape(text, "n")
    assert s.types == {"m": "counter"}
    first = s.samples[0]
    assert (first.name, first.labels, first.value) == (
        "m",
        (("a", 'x"y'), ("b", "1\\2"), ("c", "line\nbreak")),
        350.0,
    )
    assert s.samples[1].value == 7 and s.samples[2].value == float("inf")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("m{gpu=0} 1", 'label gpu: expected ="'),
        ('m{gpu="0', "label gpu: unterminated value"),
        ('m{gpu="0" x="1"} 1', "expected , or } after a label"),
        ('m{gpu="0",gpu="1"} 1', "label gpu repeated"),
        ('m{gpu="\\t"} 1', "label gpu: bad escape"),
        ("m 1_000", "bad value '1_000'"),
        ("m", "expected a value (and an optional timestamp) after the series"),
        ("m 1 2 3", "expected a value (and an optional timestamp) after the series"),
        ("m 1 soon", "bad timestamp 'soon'"),
        ("9m 1", "bad metric name"),
        ("# TYPE m sometimes", "malformed # TYPE line"),
        ('m{gpu="0"} 1\nm{gpu="0"} 2', "series m repeated"),
    ],
)
def test_parser_is_strict(text: str, why: str) -> None:
    with pytest.raises(ex.ExporterParseError) as err:
        ex.parse_scrape("ok 1\n" + text, "gpu-a")
    line = 2 if "series m repeated" not in why else 3
    assert str(err.value) == f"node gpu-a: DCGM exporter metrics line {line}: {why}"
    assert isinstance(err.value, Inconclusive)


def test_series_group_per_gpu_with_uuid() -> None:
    gpus = ex.parse_scrape(scrape_text(gpus=2), "n").gpus()
    assert list(gpus) == ["0", "1"]
    assert gpus["1"].uuid == "GPU-0001" and gpus["1"].values[ex.XID] == 0
    assert ex.gpu_label(gpus["1"]) == "GPU 1 (GPU-0001)"


# --- thresholds ---------------------------------------------------------------------------------


def test_threshold_defaults_and_conversions() -> None:
    assert (DEFAULT.window, DEFAULT.ecc_dbe_max, DEFAULT.required) == (
        60.0,
        0,
        (ex.XID, ex.ROW_REMAP_FAILURE),
    )
    t = ex.health_thresholds({"window": "2m", "nvlink_errors_max": "3", "xid_ignore": "13, 31"})
    assert (t.window, t.nvlink_errors_max, t.xid_ignore) == (120.0, 3, frozenset({13, 31}))
    assert ex.health_thresholds({"window": 30}).window == 30.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"window": "-5s"}, "gpu-health: invalid window='-5s': input should be greater than 0"),
        (
            {"window": "soon"},
            "gpu-health: invalid window='soon': not a duration (seconds, or Go syntax such as 30s or 2m)",
        ),
        ({"window": "2h"}, "gpu-health: invalid window='2h': input should be less than or equal to 3600"),
        ({"window": True}, "gpu-health: invalid window=True: must be a number, not a boolean"),
        (
            {"ecc_dbe_max": -1},
            "gpu-health: invalid ecc_dbe_max=-1: input should be greater than or equal to 0",
        ),
        (
            {"nvlink_errors_max": "many"},
            "gpu-health: invalid nvlink_errors_max='many': input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (
            {"required": ["XID"]},
            "gpu-health: invalid required=['XID']: 'XID' is not a DCGM field name (DCGM_FI_...)",
        ),
    ],
)
def test_malformed_knobs_are_one_usage_line(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as err:
        ex.health_thresholds(raw)
    assert str(err.value) == message
    assert "\n" not in str(err.value)


def test_unknown_knob_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as err:
        ex.health_thresholds({"windw": "1m"})
    assert str(err.value).startswith("gpu-health: unknown threshold 'windw' (known: window, ecc_dbe_max, ")


# --- verdict ------------------------------------------------------------------------------------


def test_clean_gpus_pass() -> None:
    msg = judge(
        pair("a", scrape_text(), scrape_text()),
        pair("b", scrape_text(), scrape_text()),
        expected_gpus={"a": 2, "b": 2},
    )
    assert msg == "GPU health clean on 2 nodes: 4 GPUs, no XID, ECC, row-remap or NVLink errors over 1m0s"


def test_an_xid_burst_names_node_and_gpu() -> None:
    after = scrape_text(overrides={(1, ex.XID): 79})
    with pytest.raises(HealthCheckFailed) as err:
        judge(pair("gpu-b", scrape_text(), after))
    assert (
        str(err.value)
        == "node gpu-b GPU 1 (GPU-0001): XID 79 during the 1m0s window (DCGM_FI_DEV_XID_ERRORS)"
    )


def test_an_old_xid_fails_unless_window_only_or_ignored() -> None:
    old = scrape_text(overrides={(0, ex.XID): 48})
    with pytest.raises(HealthCheckFailed) as err:
        judge(pair("n", old, old))
    assert str(err.value) == (
        "node n GPU 0 (GPU-0000): XID 48 reported (last XID before the window) (DCGM_FI_DEV_XID_ERRORS)"
    )
    assert judge(pair("n", old, old), t=ex.health_thresholds({"xid_window_only": True})).startswith(
        "GPU health clean"
    )
    assert judge(pair("n", old, old), t=ex.health_thresholds({"xid_ignore": [48]})).startswith(
        "GPU health clean"
    )


def test_row_remap_failure_and_counter_deltas_over_thresholds() -> None:
    before = scrape_text(**{ex.ECC_DBE_VOLATILE: 2, ex.NVLINK_CRC_FLIT: 10})
    after = scrape_text(
        overrides={(0, ex.ROW_REMAP_FAILURE): 1, (1, ex.ECC_DBE_VOLATILE): 5, (1, ex.NVLINK_CRC_FLIT): 12},
        **{ex.ECC_DBE_VOLATILE: 2, ex.NVLINK_CRC_FLIT: 10},
    )
    with pytest.raises(HealthCheckFailed) as err:
        judge(pair("n", before, after))
    assert err.value.lines == (
        "node n GPU 0 (GPU-0000): row remapping failed (DCGM_FI_DEV_ROW_REMAP_FAILURE=1)",
        "node n GPU 1 (GPU-0001): 3 new uncorrectable (double-bit) ECC errors in 1m0s "
        "(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL; at most 0 allowed)",
        "node n GPU 1 (GPU-0001): 2 new NVLink CRC flit errors in 1m0s "
        "(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL; at most 0 allowed)",
    )
    lenient = ex.health_thresholds({"ecc_dbe_max": 3, "nvlink_errors_max": 2})
    with pytest.raises(HealthCheckFailed) as err:
        judge(pair("n", before, after), t=lenient)
    assert len(err.value.lines) == 1 and "row remapping failed" in str(err.value)


@pytest.mark.parametrize(
    ("before", "after", "line"),
    [
        (scrape_text(gpus=1), scrape_text(gpus=1), "node n GPU 1: no DCGM exporter series"),
        (scrape_text(gpus=1), scrape_text(gpus=2), "node n GPU 1 (GPU-0001): no series in the first scrape"),
        (
            scrape_text(**{ex.REMAPPED_ROWS: 4}),
            scrape_text(overrides={(0, ex.REMAPPED_ROWS): 1}, **{ex.REMAPPED_ROWS: 4}),
            "node n GPU 0 (GPU-0000): DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS went from 4 to 1 "
            "(did the exporter restart?)",
        ),
    ],
)
def test_missing_series_and_resets_are_inconclusive(before: str, after: str, line: str) -> None:
    with pytest.raises(HealthInconclusive) as err:
        judge(pair("n", before, after), expected_gpus={"n": 2})
    assert str(err.value) == line


def test_a_required_metric_missing_is_inconclusive() -> None:
    text = "\n".join(
        line for line in scrape_text(gpus=1).splitlines() if not line.startswith(ex.ROW_REMAP_FAILURE)
    )
    with pytest.raises(HealthInconclusive) as err:
        judge(pair("n", text, text))
    assert str(err.value) == (
        "node n GPU 0 (GPU-0000): no DCGM_FI_DEV_ROW_REMAP_FAILURE series "
        "(not in the exporter's counter list?)"
    )


def test_nan_and_unscraped_nodes_are_inconclusive() -> None:
    nan = scrape_text(gpus=1, overrides={(0, ex.XID): float("nan")})
    with pytest.raises(HealthInconclusive) as err:
        judge(pair("n", scrape_text(gpus=1), nan), expected_gpus={"n": 1, "m": 8})
    assert err.value.lines == (
        "node m: no DCGM exporter scrape",
        "node n GPU 0 (GPU-0000): DCGM_FI_DEV_XID_ERRORS is NaN",
    )
    with pytest.raises(HealthInconclusive) as err:
        judge(pair("n", "", ""))
    assert str(err.value) == "node n GPU (any): no DCGM exporter series"
    with pytest.raises(HealthInconclusive) as err:
        judge()
    assert str(err.value) == "no DCGM exporter scrape to judge"


def test_failure_carries_inconclusive_lines_from_other_nodes() -> None:
    bad = scrape_text(gpus=1, overrides={(0, ex.XID): 79})
    with pytest.raises(HealthCheckFailed) as err:
        judge(pair("a", scrape_text(gpus=1), bad), expected_gpus={"a": 1, "b": 1})
    assert err.value.lines == (
        "node a GPU 0 (GPU-0000): XID 79 during the 1m0s window (DCGM_FI_DEV_XID_ERRORS)",
        "inconclusive: node b: no DCGM exporter scrape",
    )
