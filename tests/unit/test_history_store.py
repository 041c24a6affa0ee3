"""The SQLite run history (aicr_pytest.report.history): schema, migration, concurrency, bad files."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import history as hs
from tests.unit._history_docs import nccl_test, report

IDENT = hs.RunIdentity("h100-eks-training", "sha256:r1", "sha256:s1", "https://10.0.0.1:6443", "prod")


def ctrf(run_id: str, bw: float, status: str = "passed") -> dict[str, Any]:
    return report([nccl_test(bw, status)], timestamp="2026-12-05T08:00:00Z", extra={"aicr.runId": run_id})


def test_records_and_reads_back_runs_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with hs.SqliteHistory.open(path, create=True) as store:
        store.add(hs.record_of(ctrf("run-1", 400.0), IDENT))
        store.add(hs.record_of(ctrf("run-2", 280.0, "failed"), IDENT))
        runs = store.runs()
        assert [r.run_id for r in runs] == ["run-1", "run-2"]
        assert [r.passed for r in runs] == [True, False]
        assert runs[1].verdicts == {"performance": "failed"}
        assert [m.value for m in runs[0].measurements] == [400.0, 1.5]
        assert runs[0].identity == IDENT
        assert [r.run_id for r in store.runs(last=1)] == ["run-2"]
        assert store.runs(check="other-check") == []
        best = store.last_passing("sha256:r1", IDENT.cluster_fp)
        assert best is not None and best.run_id == "run-1" and best.ctrf == ctrf("run-1", 400.0)
        assert store.last_passing("sha256:r2", IDENT.cluster_fp) is None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == hs.SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_version_1_database_is_migrated_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    conn = sqlite3.connect(path)
    for statement in hs.MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO runs VALUES (1, 'old', 't', 'r', 'fp', '', '', '', '', 1, ?, '{}')",
        (json.dumps({"deployment": "passed"}),),
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with hs.SqliteHistory.open(path, create=False) as store:
        assert [r.run_id for r in store.runs()] == ["old"]
    indexes = {
        r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='index'")
    }
    assert "measurements_by_check" in indexes


def _writer(path: str, prefix: str, n: int) -> None:
    with hs.SqliteHistory.open(path, create=True) as store:
        for i in range(n):
            store.add(hs.record_of(ctrf(f"{prefix}-{i}", 300.0 + i), IDENT))


def test_two_processes_record_into_one_new_database(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, p, 20)) for p in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with hs.SqliteHistory.open(path, create=False) as store:
        assert store.count() == 40
        assert sum(len(r.measurements) for r in store.runs()) == 80


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (
            lambda p: p.write_bytes(b"this is not sqlite at all" * 100),
            "not an aicr-pytest history database (file is not a database)",
        ),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.commit(),
            "not an aicr-pytest history database (it holds other tables: t)",
        ),
    ],
)
def test_a_file_that_is_not_our_database_is_refused_and_left_alone(
    tmp_path: Path, setup: Any, message: str
) -> None:
    path = tmp_path / "h.db"
    setup(path)
    before = path.read_bytes()
    with pytest.raises(UsageError) as err:
        hs.SqliteHistory.open(path, create=True)
    assert str(err.value) == f"--history {path}: {message}"
    assert path.read_bytes() == before


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    sqlite3.connect(path).execute(f"PRAGMA user_version = {hs.SCHEMA_VERSION + 1}")
    with pytest.raises(UsageError) as err:
        hs.SqliteHistory.open(path, create=False, option="history")
    assert str(err.value) == (
        f"history {path}: history schema version {hs.SCHEMA_VERSION + 1} is newer than this aicr-pytest "
        f"knows ({hs.SCHEMA_VERSION}); upgrade aicr-pytest"
    )


def test_a_missing_database_is_not_created_when_reading(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^history .*nope.db: no such history database$"):
        hs.SqliteHistory.open(tmp_path / "nope.db", create=False, option="history")
    assert not (tmp_path / "nope.db").exists()


def test_identity_carries_a_cluster_fingerprint_never_the_server() -> None:
    extra = IDENT.to_extra()
    assert extra["cluster"].startswith("sha256:") and "10.0.0.1" not in json.dumps(extra)
    assert hs.RunIdentity().cluster_fp == ""
