"""The AI operators' leader-election Leases in a simulated profile, and their renewal.

A controller-runtime leader holds a ``coordination.k8s.io`` Lease (``holderIdentity``
``<pod>_<uuid>``) and renews it every few seconds; ``robust-controller`` checks that. On the fake the
renewal is a clock listener (no timers of its own, so virtual time is not cut into renewal steps); on
the control plane, where controllers own Leases, a test controller plays it from
:data:`OPERATOR_LEASES`.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from aicr_pytest.testing.model import SimulatedCluster
from aicr_pytest.testing.store import Obj

__all__ = [
    "LEASE_DURATION_S",
    "LEASE_RENEW_S",
    "LEASE_STALE_AGE_S",
    "OPERATOR_LEASES",
    "hold_lease",
    "leader_lease",
    "micro_time",
]

#: the AI operators' leader-election Leases: (namespace, Lease, controller Deployment); a test
#: controller plays their renewal on the control plane, where controllers own Leases
OPERATOR_LEASES: tuple[tuple[str, str, str], ...] = (
    ("kubeflow", "trainer.kubeflow.org", "kubeflow-trainer-controller-manager"),
    ("dynamo-system", "dynamo.nvidia.com", "dynamo-platform-dynamo-operator-controller-manager"),
)
LEASE_DURATION_S = 15
#: how often the simulated leader renews (client-go's retry period is 2 s; 5 s keeps writes few)
LEASE_RENEW_S = 5.0
#: how long ago a stale Lease (component option ``lease_stale``) was last renewed
LEASE_STALE_AGE_S = 600.0
_lease_tokens = itertools.count()


def micro_time(seconds: float) -> str:
    """A ``metav1.MicroTime`` (``2026-01-02T03:04:05.000000Z``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def leader_lease(
    namespace: str, name: str, holder: str, renewed: float, acquired: float | None = None
) -> Obj:
    """The Lease a controller-runtime leader holds (``holderIdentity`` ``<pod>_<uuid>``)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": LEASE_DURATION_S,
            "acquireTime": micro_time(renewed if acquired is None else acquired),
            "renewTime": micro_time(renewed),
            "leaseTransitions": 0,
        },
    }


def hold_lease(fc: SimulatedCluster, namespace: str, name: str, deployment: str, *, stale: bool) -> None:
    """The controller's first pod holds Lease ``name``; unless ``stale`` it renews it every
    :data:`LEASE_RENEW_S` of clock time (a clock listener: no timers of its own). A later apply of a
    profile to the same cluster retires the renewer (``state["leases"]`` keeps the current one)."""
    pods = sorted(
        p["metadata"]["name"] for p in fc.list("v1", "Pod", namespace, label_selector=f"app={deployment}")
    )
    if not pods:
        return
    holder = f"{pods[0]}_4f1c6a2e-7d1b-4c55-9a3e-5b8f0c2d9e71"
    now = fc.clock.time()
    renewed = now - LEASE_STALE_AGE_S if stale else now
    fc.add(leader_lease(namespace, name, holder, renewed, acquired=renewed - 60))
    token = next(_lease_tokens)
    current: dict[str, int] = fc.state.setdefault("leases", {})
    current[f"{namespace}/{name}"] = token
    if stale:
        return
    last = [now]

    def renew() -> None:
        now = fc.clock.time()
        if current.get(f"{namespace}/{name}") != token or now - last[0] < LEASE_RENEW_S:
            return
        last[0] = now
        lease = fc.find("coordination.k8s.io/v1", "Lease", name, namespace)
        if lease is not None and lease["spec"].get("holderIdentity") == holder:
            lease["spec"]["renewTime"] = micro_time(now)
            fc.add(lease)

    fc.clock.add_listener(renew)
