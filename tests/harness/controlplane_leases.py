"""A test controller for the control plane: the AI operators' leader election.

Controllers own Leases, so the seeder leaves the profile's out (:func:`tests.harness.backends._adapt`);
this one plays what a controller-runtime leader does for each operator of
:data:`~aicr_pytest.testing.profiles.leases.OPERATOR_LEASES`: once the controller Deployment has a
Running pod, that pod holds the Lease (``<pod>_<uuid>``) and renews it every
:data:`~aicr_pytest.testing.profiles.leases.LEASE_RENEW_S` seconds. Under the seeded fault
``operator-lease-stale`` it writes the Lease as last renewed ten minutes ago and stops renewing.
"""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aicr_pytest.testing.profiles.leases import (
    LEASE_RENEW_S,
    LEASE_STALE_AGE_S,
    OPERATOR_LEASES,
    leader_lease,
)
from tests.harness.controlplane_players import Poller

if TYPE_CHECKING:
    from tests.harness.controlplane import ControlPlane

__all__ = ["FAULT_LEASE_STALE", "OperatorLeases"]

FAULT_LEASE_STALE = "operator-lease-stale"
HOLDER_SUFFIX = "_0b7e4d2a-93c1-4e6f-8a5d-1c2b3a4f5e6d"


def _renewed(lease: dict[str, Any]) -> float:
    value = str((lease.get("spec") or {}).get("renewTime") or "")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class OperatorLeases(Poller):
    """The operators' leader election (module docstring)."""

    name = "operator-leases"

    def __init__(
        self, cp: ControlPlane, faults: Callable[[], Sequence[str]], *, interval: float = 1.0
    ) -> None:
        super().__init__(cp, interval=interval)
        self.faults = faults

    def tick(self) -> None:
        stale = FAULT_LEASE_STALE in self.faults()
        for namespace, name, deployment in OPERATOR_LEASES:
            selector = quote(f"app={deployment}")
            try:
                pods = self.cp.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector={selector}")["items"]
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    continue
                raise
            live = sorted(
                str(p["metadata"]["name"])
                for p in pods
                if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")
            )
            if live:
                self._hold(namespace, name, live[0] + HOLDER_SUFFIX, stale)

    def _hold(self, namespace: str, name: str, holder: str, stale: bool) -> None:
        collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        now = time.time()
        try:
            existing: dict[str, Any] | None = self.cp.get(f"{collection}/{name}")
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
            existing = None
        renewed = now - LEASE_STALE_AGE_S if stale else now
        body = leader_lease(namespace, name, holder, renewed, acquired=renewed - 60)
        try:
            if existing is None:
                self.cp.request("POST", collection, body)
                return
            same_holder = (existing.get("spec") or {}).get("holderIdentity") == holder
            age = now - _renewed(existing)
            if same_holder and (age >= LEASE_STALE_AGE_S / 2 if stale else age < LEASE_RENEW_S):
                return  # already as it should be
            body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            self.cp.request("PUT", f"{collection}/{name}", body)
        except urllib.error.HTTPError as e:
            if e.code in (403, 404, 409):  # the namespace is going away, or a concurrent write: next tick
                return
            raise
