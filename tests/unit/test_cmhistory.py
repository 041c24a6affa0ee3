"""The ConfigMap ring of ``--history cm://NAMESPACE/NAME`` (aicr_pytest.report.cmhistory, pure)."""

from __future__ import annotations

from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import cmhistory as cmh
from aicr_pytest.report import history as hs
from aicr_pytest.report.measures import Measurement

IDENT = hs.RunIdentity("recipe", "sha256:r", "sha256:s", "https://api", "ctx")
BW = Measurement("nccl-all-reduce-bw", "performance", "bus bandwidth", 450.0, "GB/s", None, 270.0, "higher")


def record(run_id: str, ctrf: dict[str, Any] | None = None) -> hs.RunRecord:
    return hs.RunRecord(
        run_id, "2026-12-05T08:00:00Z", IDENT, True, {"performance": "passed"}, (BW,), ctrf or {}
    )


def test_a_run_round_trips_through_one_configmap() -> None:
    [obj] = cmh.run_objects("ns", "hist", record("run/1 x"), 3)
    meta = obj["metadata"]
    assert meta["name"] == "hist-000003-0" and meta["namespace"] == "ns"
    assert meta["labels"][cmh.HISTORY_LABEL] == "hist"
    assert meta["labels"][cmh.RUN_LABEL] == "run-1-x"
    assert meta["annotations"] == {cmh.PART_ANNOTATION: "1/1"}
    assert cmh.records_of([obj]) == [record("run/1 x")]
    assert cmh.next_seq([obj]) == 4
    assert cmh.next_seq([]) == 0


def test_a_run_larger_than_one_object_is_split_and_read_back_whole() -> None:
    big = {"reportFormat": "CTRF", "blob": "é" * (cmh.MAX_PART_BYTES)}  # ASCII JSON: 6 bytes each
    parts = cmh.run_objects("ns", "hist", record("big", big), 0)
    assert len(parts) == 7
    assert all(len(p["data"][cmh.DATA_KEY].encode()) <= cmh.MAX_PART_BYTES for p in parts)
    [back] = cmh.records_of(list(reversed(parts)))
    assert back.ctrf == big
    assert cmh.records_of(parts[:-1]) == []  # a part missing: the run is missing, never half a run


def test_prune_keeps_the_newest_runs_whole() -> None:
    objs = [o for seq in range(4) for o in cmh.run_objects("ns", "h", record(f"r{seq}"), seq)]
    objs += cmh.run_objects("ns", "h", record("big", {"x": "y" * cmh.MAX_PART_BYTES}), 4)
    assert cmh.to_prune(objs, 2) == ["h-000000-0", "h-000001-0", "h-000002-0"]
    assert cmh.to_prune(objs, 10) == []
    assert [r.run_id for r in cmh.records_of(objs)] == ["r0", "r1", "r2", "r3", "big"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("cm://ns", 'invalid --history "cm://ns": expected cm://namespace/name'),
        ("cm://NS/x", 'invalid --history "cm://NS/x": namespace "NS" must be a DNS-1123 label'),
        (
            "cm://ns/" + "a" * 250,
            'invalid --history "cm://ns/' + "a" * 250 + '": ConfigMap name longer than 242 characters',
        ),
    ],
)
def test_bad_targets(target: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        cmh.parse_target(target)
    assert str(err.value) == message


def test_keep_must_be_positive() -> None:
    with pytest.raises(UsageError, match=r"^--history-keep 0: must be at least 1$"):
        cmh.check_keep(0)
