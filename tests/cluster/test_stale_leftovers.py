"""What earlier runs left is found by its labels, named in one line, and (``--clean-stale``)
deleted, never a namespace another run may still hold; on both backends, as the least-privilege
user (so ``deploy/rbac.yaml`` grants the scan).  Ages come from the backend's own clock: the scan is
told it is two hours after the newest object was created."""

from __future__ import annotations

import secrets

import pytest
from _facade_helpers import backend_facade

from aicr_pytest.kube.client import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RUN_ID_LABEL
from aicr_pytest.kube.run import LEASE_PREFIX
from aicr_pytest.kube.stale import Leftover, RunLeftovers, clean, describe, find_leftovers, stale_runs
from tests.harness.backends import K8sBackend

HOUR = 3600.0


def _labels(run_id: str) -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY_VALUE, RUN_ID_LABEL: run_id}


def test_leftovers_are_named_and_only_stale_ones_deleted(k8s_backend: K8sBackend) -> None:
    dead, other, me = (secrets.token_hex(4) for _ in range(3))
    shared = k8s_backend.namespace("aicr-shared-" + dead)
    alone = k8s_backend.namespace("aicr-alone-" + dead)
    k8s_backend.seed(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": shared,
                    "labels": _labels(dead),
                    "annotations": {f"{LEASE_PREFIX}{dead}": "held", f"{LEASE_PREFIX}{other}-gw1": "held"},
                },
            },
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": alone, "labels": _labels(dead)}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"held-{dead}", "namespace": shared, "labels": _labels(dead)},
                "data": {"k": "v"},
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"mine-{me}", "namespace": shared, "labels": _labels(me)},
                "data": {"k": "v"},
            },
        ]
    )
    cluster, _ = backend_facade(k8s_backend)
    runs = [r for r in find_leftovers(cluster, me) if r.run_id in (dead, other, me)]
    assert [r.run_id for r in runs] == [dead]  # the current run's own objects are not leftovers
    assert sorted(o.describe() for o in runs[0].objects) == sorted(
        [f"Namespace {shared}", f"Namespace {alone}", f"ConfigMap held-{dead} in {shared}"]
    )
    later = runs[0].newest() + 2 * HOUR  # the backend's own time, two hours on
    line = describe(runs, later, HOUR)
    assert line.startswith(
        "aicr-pytest: 3 object(s) left in the cluster by 1 earlier aicr-pytest run(s): "
        f"run {dead} (3 object(s), newest 2h0m0s old)"
    )
    assert line.endswith("; delete those idle over 1h0m0s with --clean-stale")
    said: list[str] = []
    assert clean(cluster, runs, later, HOUR, me, said.append) == 2
    assert said == ["aicr-pytest: --clean-stale deleted 2 object(s) of 1 run(s) idle over 1h0m0s"]
    assert cluster.get_or_none("v1", "ConfigMap", f"held-{dead}", shared) is None
    # the shared namespace stays: run `other` holds a lease on it and may still be going
    assert cluster.get_or_none("v1", "Namespace", shared) is not None
    assert cluster.get_or_none("v1", "ConfigMap", f"mine-{me}", shared) is not None
    gone = cluster.get_or_none("v1", "Namespace", alone)
    assert gone is None or gone.get("status", {}).get("phase") == "Terminating"


def _run(run_id: str, *ages: float, now: float = 10 * HOUR) -> RunLeftovers:
    return RunLeftovers(
        run_id, [Leftover("v1", "ConfigMap", f"c{i}", "ns", f"u{i}", now - age) for i, age in enumerate(ages)]
    )


@pytest.mark.parametrize(
    ("ages", "stale"),
    [((2 * HOUR, 3 * HOUR), True), ((2 * HOUR, 10.0), False), ((HOUR - 1,), False)],
    ids=["all-old", "one-new-object-keeps-it-live", "younger-than-the-bound"],
)
def test_a_run_is_stale_only_when_its_newest_object_is_older_than_the_bound(
    ages: tuple[float, ...], stale: bool
) -> None:
    assert (stale_runs([_run("r", *ages)], 10 * HOUR, HOUR) == {"r"}) is stale


def test_nothing_idle_yet_says_so() -> None:
    line = describe([_run("r", 60.0)], 10 * HOUR, HOUR)
    assert line.endswith("; none idle over 1h0m0s yet (they may belong to a run still going)")
