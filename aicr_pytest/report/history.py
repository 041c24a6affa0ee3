"""A run history in an embedded SQLite database (stdlib :mod:`sqlite3`; no pytest, no cluster).

``--history PATH`` records every run here: its CTRF document, the recipe and snapshot
fingerprints, the cluster's identity (API server and context) and every measured value
(:func:`aicr_pytest.report.measures.measurements`).  ``aicr-pytest history PATH`` reads it back.

The database is versioned with SQLite's ``user_version`` and migrated step by step
(:data:`MIGRATIONS`), inside one ``BEGIN IMMEDIATE`` transaction, so two runs that open the same
new file at once migrate it once.  It runs in WAL mode with a busy timeout, and each run is
written in one transaction: two concurrent runs both land, and a reader never sees half a run.
A file that is not an SQLite database, or a database that is not ours or is newer than this
version knows, is a one-line :class:`~aicr_pytest.core.errors.UsageError`; nothing in it is changed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.report import outcome
from aicr_pytest.report.measures import Measurement, measurements

#: the CTRF report ``extra`` key that says which recipe and cluster a run validated
IDENTITY_KEY: Final = "aicr.identity"
RUN_ID_KEY: Final = "aicr.runId"
#: the table names that make a database ours
_TABLES: Final = frozenset({"runs", "measurements"})

MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    # 1: runs and their measured values
    (
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL UNIQUE,
            started TEXT NOT NULL,
            recipe TEXT NOT NULL,
            recipe_fp TEXT NOT NULL,
            snapshot_fp TEXT NOT NULL,
            server TEXT NOT NULL,
            context TEXT NOT NULL,
            cluster_fp TEXT NOT NULL,
            passed INTEGER NOT NULL,
            verdicts TEXT NOT NULL,
            ctrf TEXT NOT NULL
        )""",
        """CREATE TABLE measurements (
            run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            check_name TEXT NOT NULL,
            phase TEXT NOT NULL,
            name TEXT NOT NULL,
            node TEXT NOT NULL,
            value REAL NOT NULL,
            unit TEXT NOT NULL,
            floor REAL,
            better TEXT NOT NULL
        )""",
    ),
    # 2: what `history --check`, baselines (`auto`) and trends look up
    (
        "CREATE INDEX measurements_by_run ON measurements(run)",
        "CREATE INDEX measurements_by_check ON measurements(check_name, name, node)",
        "CREATE INDEX runs_by_target ON runs(recipe_fp, cluster_fp, passed, id)",
    ),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)

MSG_NOT_DB: Final = "{option} {path}: not an aicr-pytest history database ({why})"
MSG_NEWER: Final = (
    "{option} {path}: history schema version {found} is newer than this aicr-pytest knows ({known}); "
    "upgrade aicr-pytest"
)
MSG_MISSING: Final = "{option} {path}: no such history database"
MSG_UNWRITABLE: Final = "{option} {path}: cannot write the history ({why})"


def fingerprint(*parts: str) -> str:
    """``sha256:`` and 16 hex digits of ``parts`` (joined by NUL): stable, short, not reversible."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
    return f"sha256:{digest[:16]}"


@dataclass(frozen=True)
class RunIdentity:
    """Which recipe (and snapshot) a run validated, on which cluster."""

    recipe: str = ""
    recipe_fp: str = ""
    snapshot_fp: str = ""
    server: str = ""
    context: str = ""

    @property
    def cluster_fp(self) -> str:
        """The cluster as a fingerprint (what CTRF carries: the API server's address stays local)."""
        return fingerprint(self.server, self.context) if self.server or self.context else ""

    def to_extra(self) -> dict[str, str]:
        """CTRF ``extra["aicr.identity"]``: recipe name and fingerprints, never the server address."""
        return {
            "recipe": self.recipe,
            "recipeFingerprint": self.recipe_fp,
            "snapshotFingerprint": self.snapshot_fp,
            "cluster": self.cluster_fp,
        }


def report_identity(ctrf: Mapping[str, Any]) -> dict[str, str]:
    """The ``aicr.identity`` a CTRF document carries (empty when it carries none)."""
    extra = ctrf.get("extra")
    raw = extra.get(IDENTITY_KEY) if isinstance(extra, Mapping) else None
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def report_run_id(ctrf: Mapping[str, Any]) -> str:
    extra = ctrf.get("extra")
    run_id = extra.get(RUN_ID_KEY) if isinstance(extra, Mapping) else None
    return str(run_id) if run_id else ""


def verdicts(ctrf: Mapping[str, Any]) -> dict[str, str]:
    """Each phase's aggregated status (readiness included when the report has it), in report order."""
    by_phase: dict[str, list[str]] = {}
    results = ctrf.get("results")
    tests = results.get("tests") if isinstance(results, Mapping) else None
    for test in tests if isinstance(tests, list) else ():
        suite = test.get("suite") if isinstance(test, Mapping) else None
        if isinstance(suite, list) and suite:
            by_phase.setdefault(str(suite[0]), []).append(str(test.get("status")))
    return {phase: outcome.phase_status(statuses) for phase, statuses in by_phase.items()}


@dataclass(frozen=True)
class RunRecord:
    """One recorded run (``ctrf`` is loaded only when asked for)."""

    run_id: str
    started: str
    identity: RunIdentity
    passed: bool
    verdicts: dict[str, str]
    measurements: tuple[Measurement, ...] = ()
    ctrf: dict[str, Any] | None = field(default=None, compare=False)


def record_of(ctrf: dict[str, Any], identity: RunIdentity) -> RunRecord:
    """The history record of a finished run's CTRF document."""
    summary = ctrf.get("results", {}).get("summary", {})
    phases = verdicts(ctrf)
    passed = "passed" in phases.values() and all(v in ("passed", "skipped") for v in phases.values())
    passed = passed and not summary.get("failed") and not summary.get("other")
    return RunRecord(
        run_id=report_run_id(ctrf) or fingerprint(json.dumps(ctrf, sort_keys=True)),
        started=str(ctrf.get("timestamp") or ""),
        identity=identity,
        passed=passed,
        verdicts=phases,
        measurements=tuple(measurements(ctrf)),
        ctrf=ctrf,
    )


class SqliteHistory:
    """The history database at ``path`` (opened, checked and migrated by :meth:`open`)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, option: str) -> None:
        self.path = path
        self._conn = conn
        self._option = option

    @classmethod
    def open(cls, path: str | Path, *, create: bool, option: str = "--history") -> SqliteHistory:
        """Open (``create``: create when missing) and migrate; :class:`UsageError` in one line."""
        target = Path(path).expanduser()
        fmt = {"option": option, "path": str(path)}
        if not create and not target.is_file():
            raise UsageError(MSG_MISSING.format(**fmt))
        blocked = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
        if blocked is not None:
            raise UsageError(MSG_UNWRITABLE.format(**fmt, why=f"{blocked} is not a directory"))
        if target.is_dir():
            raise UsageError(MSG_UNWRITABLE.format(**fmt, why="it is a directory"))
        try:
            if create:
                target.parent.mkdir(parents=True, exist_ok=True)
            uri = target.resolve().as_uri() + ("" if create else "?mode=rw")
            conn = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
        except (OSError, sqlite3.Error) as err:
            raise UsageError(MSG_UNWRITABLE.format(**fmt, why=_why(err))) from None
        store = cls(target, conn, option)
        try:
            store._prepare()
        except sqlite3.DatabaseError as err:
            conn.close()
            text = str(err)
            if "readonly" in text or "unable to open" in text or "disk I/O" in text:
                raise UsageError(MSG_UNWRITABLE.format(**fmt, why=text)) from None
            raise UsageError(MSG_NOT_DB.format(**fmt, why=text)) from None
        except UsageError:
            conn.close()
            raise
        return store

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqliteHistory:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _prepare(self) -> None:
        conn = self._conn
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA foreign_keys = ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UsageError(
                MSG_NEWER.format(option=self._option, path=self.path, found=version, known=SCHEMA_VERSION)
            )
        if version == SCHEMA_VERSION:
            return
        self._ours(version)  # before anything is written to the file
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        with self._transaction():
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another run may have migrated
            self._ours(version)
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step]:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {step + 1}")

    def _ours(self, version: int) -> None:
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == 0 and tables:
            raise sqlite3.DatabaseError(f"it holds other tables: {', '.join(sorted(tables))}")
        if version and not tables >= _TABLES:
            raise sqlite3.DatabaseError("its tables are missing")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # --- writing ----------------------------------------------------------------------------------

    def add(self, record: RunRecord) -> None:
        """Record one run (all or nothing); a run id already recorded is replaced."""
        ident = record.identity
        try:
            with self._transaction():
                self._conn.execute("DELETE FROM runs WHERE run_id = ?", (record.run_id,))
                cur = self._conn.execute(
                    "INSERT INTO runs (run_id, started, recipe, recipe_fp, snapshot_fp, server, context,"
                    " cluster_fp, passed, verdicts, ctrf) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.run_id,
                        record.started,
                        ident.recipe,
                        ident.recipe_fp,
                        ident.snapshot_fp,
                        ident.server,
                        ident.context,
                        ident.cluster_fp,
                        int(record.passed),
                        json.dumps(record.verdicts),
                        json.dumps(record.ctrf or {}, separators=(",", ":")),
                    ),
                )
                self._conn.executemany(
                    "INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            cur.lastrowid,
                            m.check,
                            m.phase,
                            m.name,
                            m.node or "",
                            m.value,
                            m.unit,
                            m.floor,
                            m.better,
                        )
                        for m in record.measurements
                    ],
                )
        except sqlite3.Error as err:
            raise UsageError(MSG_UNWRITABLE.format(option=self._option, path=self.path, why=err)) from None

    # --- reading ----------------------------------------------------------------------------------

    def runs(self, *, last: int | None = None, check: str | None = None) -> list[RunRecord]:
        """Recorded runs, oldest first (the ``last`` newest; only runs that measured ``check``)."""
        where, args = "", list[str | int]()
        if check:
            where = "WHERE id IN (SELECT run FROM measurements WHERE check_name = ?)"
            args.append(check)
        limit = " LIMIT ?" if last is not None else ""
        if last is not None:
            args.append(last)
        rows = self._conn.execute(
            "SELECT id, run_id, started, recipe, recipe_fp, snapshot_fp, server, context, passed, verdicts"
            f" FROM runs {where} ORDER BY id DESC{limit}",
            args,
        ).fetchall()
        rows.reverse()
        return self._records(rows)

    def _records(self, rows: Sequence[Sequence[Any]]) -> list[RunRecord]:
        ids = [r[0] for r in rows]
        found: dict[int, list[Measurement]] = {i: [] for i in ids}
        for chunk in (ids[i : i + 500] for i in range(0, len(ids), 500)):
            marks = ",".join("?" * len(chunk))
            for m in self._conn.execute(
                "SELECT run, check_name, phase, name, value, unit, node, floor, better FROM measurements"
                f" WHERE run IN ({marks}) ORDER BY rowid",
                chunk,
            ):
                found[m[0]].append(Measurement(m[1], m[2], m[3], m[4], m[5], m[6] or None, m[7], m[8]))
        return [
            RunRecord(
                run_id=r[1],
                started=r[2],
                identity=RunIdentity(r[3], r[4], r[5], r[6], r[7]),
                passed=bool(r[8]),
                verdicts=json.loads(r[9]),
                measurements=tuple(found[r[0]]),
            )
            for r in rows
        ]

    def last_passing(self, recipe_fp: str, cluster_fp: str) -> RunRecord | None:
        """The newest run that passed on this recipe and cluster, with its CTRF document."""
        row = self._conn.execute(
            "SELECT id, run_id, started, recipe, recipe_fp, snapshot_fp, server, context, passed, verdicts"
            " FROM runs WHERE recipe_fp = ? AND cluster_fp = ? AND passed = 1 ORDER BY id DESC LIMIT 1",
            (recipe_fp, cluster_fp),
        ).fetchone()
        if row is None:
            return None
        record = self._records([row])[0]
        text = self._conn.execute("SELECT ctrf FROM runs WHERE id = ?", (row[0],)).fetchone()[0]
        return RunRecord(**{**record.__dict__, "ctrf": json.loads(text)})

    def count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _why(err: BaseException) -> str:
    return (getattr(err, "strerror", None) or str(err)) or type(err).__name__


__all__ = [
    "IDENTITY_KEY",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "RunIdentity",
    "RunRecord",
    "SqliteHistory",
    "fingerprint",
    "record_of",
    "report_identity",
    "report_run_id",
    "verdicts",
]
