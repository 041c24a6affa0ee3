"""``aicr-pytest history`` and ``aicr-pytest compare``; the baseline comparison (report.baseline)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest import cli
from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import baseline as bl
from aicr_pytest.report import history as hs
from aicr_pytest.report.measures import Measurement
from tests.unit._history_docs import inference_test, nccl_test, report

IDENT = hs.RunIdentity("h100-eks-training", "sha256:r1", "", "https://10.0.0.1:6443", "prod")


def ctrf(run_id: str, bw: float, status: str = "passed", ttft: float = 100.0) -> dict[str, Any]:
    return report(
        [nccl_test(bw, status), inference_test(ttft)],
        timestamp=f"2026-12-05T08:00:0{run_id[-1]}Z",
        extra={"aicr.runId": run_id, "aicr.identity": IDENT.to_extra()},
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    with hs.SqliteHistory.open(path, create=True) as store:
        for run_id, bw, status in (
            ("run-1", 450.0, "passed"),
            ("run-2", 440.0, "passed"),
            ("run-3", 310.0, "failed"),
        ):
            store.add(hs.record_of(ctrf(run_id, bw, status), IDENT))
    return path


def test_history_lists_runs_and_trends(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["history", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "2026-12-05T08:00:01Z  run-1  h100-eks-training  performance=passed  "
        "nccl-all-reduce-bw: bus bandwidth 450 GB/s; inference-perf: inference TTFT p99 100 ms",
        "2026-12-05T08:00:02Z  run-2  h100-eks-training  performance=passed  "
        "nccl-all-reduce-bw: bus bandwidth 440 GB/s; inference-perf: inference TTFT p99 100 ms",
        "2026-12-05T08:00:03Z  run-3  h100-eks-training  performance=failed  "
        "nccl-all-reduce-bw: bus bandwidth 310 GB/s; inference-perf: inference TTFT p99 100 ms",
    ]
    bw = "nccl-all-reduce-bw: bus bandwidth (GB/s): min 310, median 440, last 310 over 3 run(s)"
    assert f"{bw} (higher is better)" in lines
    assert (
        "nccl-all-reduce-bw: duration (s): min 1.5, median 1.5, last 1.5 over 3 run(s) (lower is better)"
        in lines
    )


def test_history_json_check_last_and_plot(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    svg = tmp_path / "trend.svg"
    args = ["history", str(db), "--json", "--check", "nccl-all-reduce-bw", "--last", "2", "--plot", str(svg)]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    first, rest = out.split("\n", 1)
    assert first == f"trend of nccl-all-reduce-bw: bus bandwidth written to {svg}"
    doc = json.loads(rest)
    assert [r["runId"] for r in doc["runs"]] == ["run-2", "run-3"]
    assert {m["check"] for r in doc["runs"] for m in r["measurements"]} == {"nccl-all-reduce-bw"}
    assert doc["trends"][0] | {"values": None} == {
        "label": "nccl-all-reduce-bw: bus bandwidth",
        "unit": "GB/s",
        "better": "higher",
        "values": None,
        "runIds": ["run-2", "run-3"],
        "min": 310.0,
        "median": 375.0,
        "last": 310.0,
    }
    root = ET.fromstring(svg.read_text())
    assert root.tag.endswith("svg") and len(root.findall(".//{http://www.w3.org/2000/svg}circle")) == 2


def test_history_of_an_empty_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hs.SqliteHistory.open(tmp_path / "e.db", create=True).close()
    assert cli.main(["history", str(tmp_path / "e.db")]) == 0
    assert capsys.readouterr().out == f"no runs recorded in {tmp_path / 'e.db'}\n"


def test_compare_shows_status_changes_and_moved_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(ctrf("run-1", 450.0)))
    b.write_text(json.dumps(ctrf("run-2", 315.0, ttft=90.0)))
    assert cli.main(["compare", str(a), str(b)]) == 0  # no status got worse, no gate
    assert capsys.readouterr().out.splitlines() == [
        "VALUE                                     BEFORE         AFTER  CHANGE",
        "nccl-all-reduce-bw: bus bandwidth            450           315  -30.0% GB/s",
        "inference-perf: inference TTFT p99           100            90  -10.0% ms",
    ]
    assert cli.main(["compare", str(a), str(b), "--max-regression", "10"]) == 1
    assert "-30.0% GB/s  (regressed)" in capsys.readouterr().out
    b.write_text(json.dumps(ctrf("run-2", 450.0, "failed")))
    assert cli.main(["compare", str(a), str(b)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "CHECK                           BEFORE   AFTER",
        "performance/nccl-all-reduce-bw  passed   failed  (worse)",
    ]
    assert cli.main(["compare", str(a), str(a)]) == 0
    assert capsys.readouterr().out == "no check changed status and no measured value moved\n"


def m(
    name: str, value: float, better: str = "higher", check: str = "c", node: str | None = None
) -> Measurement:
    return Measurement(check, "performance", name, value, "GB/s", node, None, better)  # type: ignore[arg-type]


def test_compare_pairs_by_check_name_and_node_and_gates_beyond_the_limit() -> None:
    current = [
        m("bw", 70.0),
        m("ttft", 130.0, "lower"),
        m("bw", 100.0, node="n1"),
        m("new", 1.0),
        m("zero", 5.0),
    ]
    base = [m("bw", 100.0), m("ttft", 100.0, "lower"), m("bw", 50.0, node="n1"), m("zero", 0.0)]
    changes = bl.compare(current, base, 25.0)
    assert [(c.current.key, c.worse_pct, c.regressed) for c in changes] == [
        (("c", "bw", ""), 30.0, True),
        (("c", "ttft", ""), 30.0, True),
        (("c", "bw", "n1"), -100.0, False),
        (("c", "zero", ""), None, False),
    ]
    assert [c.regressed for c in bl.compare(current, base, None)] == [False] * 4
    health = [m("unhealthy GPUs", 2.0, "lower"), m("DCGM_FI_DEV_XID_ERRORS", 3.0, "lower")]
    old = [m("unhealthy GPUs", 1.0, "lower"), m("DCGM_FI_DEV_XID_ERRORS", 1.0, "lower")]
    assert [(c.worse_pct, c.regressed) for c in bl.compare(health, old, 10.0)] == [
        (100.0, False),
        (200.0, False),
    ]
    assert bl.regression_line(changes[0], "run-1", 25.0) == (
        "c: bw 70.00 GB/s is 30.0% worse than the baseline 100.00 GB/s (run run-1; --max-regression 25%)"
    )
    assert (
        bl.insight_line(changes[1], "run-1")
        == "c: ttft 130.00 GB/s: +30.0% vs the baseline 100.00 GB/s (run run-1)"
    )


def test_foreign_baselines_say_why() -> None:
    ours = IDENT.to_extra()
    assert bl.foreign(ctrf("run-1", 1.0), ours) is None
    other = ctrf("run-1", 1.0)
    other["extra"]["aicr.identity"] = hs.RunIdentity("gb200", "sha256:r2", "", "s", "c").to_extra()
    assert bl.foreign(other, ours) == "it validated another recipe (gb200, this run: h100-eks-training)"
    other["extra"]["aicr.identity"] = hs.RunIdentity(
        "h100-eks-training", "sha256:r1", "", "s", "c"
    ).to_extra()
    assert bl.foreign(other, ours) == (
        f"it ran on another cluster ({hs.fingerprint('s', 'c')}, this run: {IDENT.cluster_fp})"
    )
    del other["extra"]["aicr.identity"]
    assert bl.foreign(other, ours) == bl.MSG_NO_IDENTITY


@pytest.mark.parametrize("value", [-1.0, 100.5, float("nan")])
def test_max_regression_is_a_percentage(value: float) -> None:
    with pytest.raises(UsageError, match=r"^--max-regression .*: must be a percentage between 0 and 100$"):
        bl.check_pct(value)


def test_annotate_writes_ctrf_baseline_and_insights() -> None:
    report, base = ctrf("run-2", 315.0), ctrf("run-1", 450.0)
    bl.annotate(report, base, "base.json", 10.0)
    ref = report["baseline"]
    assert ref["source"] == "base.json" and ref["extra"] == {"aicr.runId": "run-1"}
    assert ref["timestamp"] == "2026-12-05T08:00:01Z" and len(ref["reportId"]) == 36
    nccl = report["results"]["tests"][0]["insights"]
    assert nccl["averageTestDuration"] == {"current": 1500.0, "baseline": 1500.0, "change": 0.0}
    assert nccl["extra"]["aicr.baseline"] == [
        {
            "name": "bus bandwidth",
            "node": None,
            "unit": "GB/s",
            "current": 315.0,
            "baseline": 450.0,
            "changePct": -30.0,
            "worsePct": 30.0,
            "regressed": True,
        }
    ]


def test_catalog_limits_per_check() -> None:
    doc = {
        "validators": [
            {"name": "a", "maxRegression": 5},
            {"name": "b"},
            {"name": "unknown", "maxRegression": 1},
        ]
    }
    assert bl.catalog_limits(doc, ["a", "b"]) == {"a": 5.0}
    assert bl.catalog_limits(None, ["a"]) == {}
    with pytest.raises(UsageError) as err:
        bl.catalog_limits({"validators": [{"name": "a", "maxRegression": "10%"}]}, ["a"])
    assert str(err.value) == (
        'validators/catalog.yaml: validator "a": maxRegression "10%" must be a percentage between 0 and 100'
    )
    change = bl.compare([m("bw", 70.0)], [m("bw", 100.0)], 5.0)[0]
    assert bl.regression_line(change, "r1", 5.0, bl.CATALOG_LIMIT) == (
        "c: bw 70.00 GB/s is 30.0% worse than the baseline 100.00 GB/s "
        "(run r1; the catalog's maxRegression 5%)"
    )


def test_a_compared_report_is_valid_against_the_official_ctrf_schema(reference_dir: Path) -> None:
    import jsonschema

    schema = json.loads((reference_dir / "ctrf" / "ctrf.schema.json").read_text())
    report = ctrf("run-2", 315.0) | {"specVersion": "0.0.1", "results": ctrf("run-2", 315.0)["results"]}
    report["results"]["tool"] = {"name": "aicr-pytest"}
    report["results"]["summary"] |= {
        "tests": 2,
        "passed": 2,
        "skipped": 0,
        "pending": 0,
        "start": 0,
        "stop": 1,
    }
    bl.annotate(report, ctrf("run-1", 450.0), "base.json", 10.0)
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(report)
