"""The cluster facade: everything checks do with Kubernetes goes through here.

Importing this package does not import ``kubernetes``; the client is loaded by :func:`connect`.

* :mod:`.client` — :func:`connect`, :class:`Cluster` (paginated lists, get/create/patch/delete,
  discovery, watch) with bounded retries and error mapping; around it :mod:`.transport` (request
  targets, retry bounds, status → exception mapping), :mod:`.streams` (streaming responses, watch
  events), :mod:`.paging` (list-page prefetch) and :mod:`.kubeconfig` (kubeconfig / in-cluster).
* :mod:`.errors` — the facade's exception types; :mod:`.resources` — REST resource types.
* :mod:`.run` — :class:`RunScope`: run-scoped names/labels, creation registry, cleanup, signals.
* :mod:`.wait` — watch-based waits with deadlines.
* :mod:`.logs` — pod logs by container name; newest pod of a Job.
* :mod:`.occupancy` — per-node GPU occupancy.
* :mod:`.rbac` — the permission registry ``deploy/rbac.yaml`` is checked against.
* :mod:`.allocprobe` — the reads of the GPU allocation-mode probe (:mod:`aicr_pytest.core.allocmode`).
"""

from __future__ import annotations

from aicr_pytest.kube.client import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    RUN_ID_LABEL,
    Cluster,
    RetryPolicy,
    connect,
)
from aicr_pytest.kube.errors import (
    AccessDenied,
    AdmissionDenied,
    ApiError,
    ApiUnreachable,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ObjectVanished,
    WaitTimeout,
)
from aicr_pytest.kube.logs import follow_log, job_newest_pod_log, read_log
from aicr_pytest.kube.occupancy import GpuOccupancy, gpu_occupancy
from aicr_pytest.kube.run import (
    DEFAULT_NAMESPACE,
    CleanupReport,
    RunScope,
    Terminated,
    install_signal_handlers,
    new_run_id,
)
from aicr_pytest.kube.wait import (
    job_outcome,
    wait_deleted,
    wait_for,
    wait_for_job_complete,
    wait_for_pod_phase,
    wait_for_pods,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "RUN_ID_LABEL",
    "AccessDenied",
    "AdmissionDenied",
    "ApiError",
    "ApiUnreachable",
    "CleanupReport",
    "Cluster",
    "Conflict",
    "Gone",
    "GpuOccupancy",
    "Invalid",
    "NotFound",
    "ObjectVanished",
    "RetryPolicy",
    "RunScope",
    "Terminated",
    "WaitTimeout",
    "connect",
    "follow_log",
    "gpu_occupancy",
    "install_signal_handlers",
    "job_newest_pod_log",
    "job_outcome",
    "new_run_id",
    "read_log",
    "wait_deleted",
    "wait_for",
    "wait_for_job_complete",
    "wait_for_pod_phase",
    "wait_for_pods",
]
