"""What earlier aicr-pytest runs left in the cluster: found, named, and (asked) deleted.

A run that ends normally deletes what it created (:class:`~aicr_pytest.kube.run.RunScope`); one that
was killed (SIGKILL, a node reboot, an OOM kill) cannot.  Everything a run creates carries
``app.kubernetes.io/managed-by: aicr-pytest`` and ``aicr.run/run-id: <id>``, so :func:`find_leftovers`
lists those labels, cluster-wide, over the kinds runs create (:data:`KINDS`) and groups them by run.

**Liveness.**  A run keeps no heartbeat; what it leaves says whether it may still be running.  Every
object a run holds belongs to a check that is running (a check deletes its objects when it ends),
and no check runs longer than its time budget.  So a run whose *newest* object is older than both
the ``--stale-after`` bound (1 h by default) and the longest check budget of this run's catalog is
not running any more: it is *stale*.  Anything else may be live and is never deleted.  The shared
namespace (``aicr-validation``) carries one lease annotation per run using it
(``aicr.run/lease-<run id>``): it is deleted only when every run holding a lease is stale (and the
current run holds none).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from aicr_pytest.core.goduration import format_go_duration
from aicr_pytest.kube.client import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RUN_ID_LABEL, Cluster
from aicr_pytest.kube.errors import ApiError, NotFound
from aicr_pytest.kube.run import LEASE_PREFIX

#: the kinds a run creates that a leftover scan lists (cluster-wide, by label): the run's namespace
#: takes whatever else was in it (the inference Secret, for one) with it
KINDS: tuple[tuple[str, str], ...] = (
    ("batch/v1", "Job"),
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("v1", "ConfigMap"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Namespace"),
)
#: the default ``--stale-after`` (seconds)
DEFAULT_STALE_AFTER_S = 3600.0

MSG_FOUND = (
    "aicr-pytest: {count} object(s) left in the cluster by {runs} earlier aicr-pytest run(s): {detail}; "
    "{advice}"
)
MSG_ADVICE = "delete those idle over {bound} with --clean-stale"
MSG_ADVICE_NONE = "none idle over {bound} yet (they may belong to a run still going)"
MSG_CLEANED = "aicr-pytest: --clean-stale deleted {count} object(s) of {runs} run(s) idle over {bound}"
MSG_NOT_DELETED = "aicr-pytest: --clean-stale could not delete {what}: {error}"


@dataclass(frozen=True)
class Leftover:
    api_version: str
    kind: str
    name: str
    namespace: str | None
    uid: str
    created: float  # epoch seconds
    leases: tuple[str, ...] = ()  # a namespace's lease holders (run ids)

    def describe(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.kind} {self.name}{where}"


@dataclass
class RunLeftovers:
    run_id: str
    objects: list[Leftover] = field(default_factory=list)

    def newest(self) -> float:
        return max(o.created for o in self.objects)


def _epoch(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()  # unreadable: as new as can be (never judged stale on it)


def find_leftovers(
    cluster: Cluster, current_run: str, kinds: Iterable[tuple[str, str]] = KINDS
) -> list[RunLeftovers]:
    """Objects labelled as aicr-pytest's, of runs other than ``current_run``, grouped by run id."""
    runs: dict[str, RunLeftovers] = {}
    selector = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
    for api_version, kind in kinds:
        try:
            items = list(cluster.list(api_version, kind, None, label_selector=selector))
        except (NotFound, ApiError):
            continue  # not served, or not ours to list: the scan is advice, never a verdict
        for obj in items:
            meta = obj.get("metadata") or {}
            run_id = str((meta.get("labels") or {}).get(RUN_ID_LABEL) or "")
            if not run_id or run_id == current_run:
                continue
            leases = tuple(
                sorted(
                    {
                        key[len(LEASE_PREFIX) :].split("-")[0]
                        for key in (meta.get("annotations") or {})
                        if key.startswith(LEASE_PREFIX)
                    }
                )
            )
            runs.setdefault(run_id, RunLeftovers(run_id)).objects.append(
                Leftover(
                    api_version,
                    kind,
                    str(meta.get("name") or ""),
                    meta.get("namespace"),
                    str(meta.get("uid") or ""),
                    _epoch(str(meta.get("creationTimestamp") or "")),
                    leases,
                )
            )
    return sorted(runs.values(), key=lambda r: r.newest())


def stale_runs(runs: list[RunLeftovers], now: float, bound: float) -> set[str]:
    """The run ids whose newest object is older than ``bound`` seconds (see the module docstring)."""
    return {r.run_id for r in runs if now - r.newest() > bound}


def _age(seconds: float) -> str:
    return format_go_duration(max(0, int(seconds)))


def describe(runs: list[RunLeftovers], now: float, bound: float) -> str:
    """The one line naming what earlier runs left (``""`` when they left nothing)."""
    if not runs:
        return ""
    stale = stale_runs(runs, now, bound)
    detail = ", ".join(
        f"run {r.run_id} ({len(r.objects)} object(s), newest {_age(now - r.newest())} old)" for r in runs
    )
    bound_text = format_go_duration(bound)
    advice = (MSG_ADVICE if stale else MSG_ADVICE_NONE).format(bound=bound_text)
    return MSG_FOUND.format(
        count=sum(len(r.objects) for r in runs), runs=len(runs), detail=detail, advice=advice
    )


def clean(
    cluster: Cluster,
    runs: list[RunLeftovers],
    now: float,
    bound: float,
    current_run: str,
    emit: Callable[[str], None],
) -> int:
    """Delete the stale runs' objects (never a live run's; see the module docstring); returns how
    many were deleted.  Each object that cannot be deleted is named in one line."""
    stale = stale_runs(runs, now, bound)
    deleted = 0
    cleaned_runs: set[str] = set()
    for run in runs:
        if run.run_id not in stale:
            continue
        # namespaces last: their contents go with them, and a shared one waits for every lease holder
        for obj in sorted(run.objects, key=lambda o: o.kind == "Namespace"):
            if obj.kind == "Namespace" and any(h == current_run or h not in stale for h in obj.leases):
                continue  # another run (maybe live) still holds a lease on it
            try:
                cluster.delete(
                    obj.api_version,
                    obj.kind,
                    obj.name,
                    obj.namespace,
                    propagation="Background",
                    missing_ok=True,
                    preconditions={"uid": obj.uid} if obj.uid else None,
                )
            except ApiError as err:
                emit(MSG_NOT_DELETED.format(what=obj.describe(), error=str(err).splitlines()[0]))
                continue
            deleted += 1
            cleaned_runs.add(run.run_id)
    if deleted:
        emit(MSG_CLEANED.format(count=deleted, runs=len(cleaned_runs), bound=format_go_duration(bound)))
    return deleted


def scan(
    cluster: Cluster,
    current_run: str,
    *,
    bound: float,
    clean_stale: bool,
    emit: Callable[[str], None],
    now: float | None = None,
) -> None:
    """Name what earlier runs left (one line) and, with ``clean_stale``, delete the stale part."""
    moment = time.time() if now is None else now
    with contextlib.suppress(ApiError):  # advice only: an unreachable cluster is reported elsewhere
        runs = find_leftovers(cluster, current_run)
        line = describe(runs, moment, bound)
        if line:
            emit(line)
        if clean_stale and runs:
            clean(cluster, runs, moment, bound, current_run, emit)


__all__ = [
    "DEFAULT_STALE_AFTER_S",
    "KINDS",
    "MSG_CLEANED",
    "MSG_FOUND",
    "MSG_NOT_DELETED",
    "Leftover",
    "RunLeftovers",
    "clean",
    "describe",
    "find_leftovers",
    "scan",
    "stale_runs",
]
