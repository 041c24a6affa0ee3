"""NVCRE (NVIDIA Cluster Readiness Engine) on the simulator: the ``nvcre`` component and a player that
answers ``Certification`` objects.

:func:`install_nvcre` (component ``nvcre``, profile ``h100-eks-training-cre``: upstream AICR keeps
NVCRE opt-in and has qualified its CRE checks on eks × h100 only) creates namespace ``nvcre``, the
``nvcre-manager`` Deployment and NVCRE's seven ``nvcre.nvidia.com/v1alpha1`` CRDs
(``certifications``, ``workflows``, ``jobs``, ``workloadruns``, ``bandwidthmeasurements``,
``goodputmeasurements``, ``logprofiles``).

The player plays NVCRE's controller (the public schema in NVIDIA/cluster-readiness-engine
``api/v1alpha1``): a new Certification gets ``InProgress``; :data:`RUN_S` virtual seconds later, per
category, a Workflow ``<certification>-<variant>`` (label ``nvcre.nvidia.com/certification``), a Job
``<workflow>-0`` (label ``nvcre.nvidia.com/workflow``) and the measurement the category produces,
owned by the Workflow — a ``BandwidthMeasurement`` (``status.results[]`` with ``sizeBytes``/``busBW``
strings, peak :data:`HEALTHY_BUSBW` GB/s) for ``communication/*``, a ``GoodputMeasurement``
(``status.result`` :data:`HEALTHY_GOODPUT`, ``trainingTimeSec``, ``lostWorkTimeSec``,
``avgStepTimeSec``, ``avgTFLOPSPerGPU``, ``interruptionCount``) for ``training/*`` — then
``Succeeded`` and ``status.categoryStatuses`` with each ``workflowRef``.  Deleting a Certification
deletes what it made (as NVCRE's finalizer does).

Faults: ``cre-bandwidth-low`` (peak busBW :data:`LOW_BUSBW`), ``cre-goodput-low`` (ratio
:data:`LOW_GOODPUT`), ``cre-certification-failed`` (``Failed`` with reason ``ThresholdsNotMet``, no
measurement read), ``cre-certification-stuck`` (never leaves ``InProgress``),
``cre-measurement-unparsable`` (``busBW`` and ``result`` are ``"n/a"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aicr_pytest.testing.builders import add_namespace, crd, crd_established, deployment, system_node
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import ClusterProfile, Component, SimulatedCluster
    from aicr_pytest.testing.simulator import Simulator

__all__ = [
    "FAULT_BANDWIDTH_LOW",
    "FAULT_FAILED",
    "FAULT_GOODPUT_LOW",
    "FAULT_STUCK",
    "FAULT_UNPARSABLE",
    "install",
    "install_nvcre",
]

GROUP: Final = "nvcre.nvidia.com"
API_VERSION: Final = f"{GROUP}/v1alpha1"
NAMESPACE: Final = "nvcre"
KINDS: Final = (
    ("certifications", "Certification"),
    ("workflows", "Workflow"),
    ("jobs", "Job"),
    ("workloadruns", "WorkloadRun"),
    ("bandwidthmeasurements", "BandwidthMeasurement"),
    ("goodputmeasurements", "GoodputMeasurement"),
    ("logprofiles", "LogProfile"),
)
FAULT_BANDWIDTH_LOW: Final = "cre-bandwidth-low"
FAULT_GOODPUT_LOW: Final = "cre-goodput-low"
FAULT_FAILED: Final = "cre-certification-failed"
FAULT_STUCK: Final = "cre-certification-stuck"
FAULT_UNPARSABLE: Final = "cre-measurement-unparsable"
#: virtual seconds from a Certification's creation to its verdict
RUN_S: Final = 600.0
HEALTHY_BUSBW: Final = 489.8
LOW_BUSBW: Final = 120.5
HEALTHY_GOODPUT: Final = "0.7671"
LOW_GOODPUT: Final = "0.4120"
_SIZES: Final = (1 << 20, 1 << 26, 1 << 30, 1 << 33)


def install_nvcre(fc: SimulatedCluster, profile: ClusterProfile, comp: Component) -> None:
    """The ``nvcre`` component (module docstring)."""
    add_namespace(fc, NAMESPACE)
    for plural, kind in KINDS:
        crd_established(fc, crd(GROUP, plural, kind, ["v1alpha1"]))
    deployment(
        fc,
        NAMESPACE,
        "nvcre-manager",
        "nvcr.io/nvidia/cluster-readiness-engine/manager:v0.4.0",
        system_node(profile),
        labels={"app.kubernetes.io/name": "nvcre"},
        container="manager",
    )


class _Controller:
    def __init__(self, fc: SimulatedCluster, faults: list[str]) -> None:
        self.fc, self.faults = fc, set(faults)

    def _condition(self, cond_type: str, reason: str, message: str) -> Obj:
        return {
            "type": cond_type,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": self.fc.clock.timestamp(),
        }

    def on_certification(self, sim: Simulator, obj: Obj) -> None:
        meta = obj["metadata"]
        ns, name, uid = meta.get("namespace", ""), meta["name"], meta.get("uid", "")
        status = {"conditions": [self._condition("InProgress", "Running", "certification workflows running")]}
        sim.set_status(API_VERSION, "Certification", name, status, ns)
        if FAULT_STUCK in self.faults:
            return
        self.fc.clock.call_later(RUN_S, lambda: self._finish(ns, name, uid))

    def _finish(self, ns: str, name: str, uid: str) -> None:
        cert = self.fc.find(API_VERSION, "Certification", name, ns)
        if cert is None or cert["metadata"].get("uid") != uid:
            return
        if FAULT_FAILED in self.faults:
            failed = self._condition(
                "Failed", "ThresholdsNotMet", "1 of 1 categories failed: threshold not met on 2 nodes"
            )
            self.fc.sim.set_status(API_VERSION, "Certification", name, {"conditions": [failed]}, ns)
            return
        statuses: list[Obj] = []
        for category in (cert.get("spec") or {}).get("categories") or []:
            domain, variant = str(category.get("domain")), str(category.get("variant"))
            workflow = self._workflow(cert, domain, variant)
            statuses.append(
                {
                    "domain": domain,
                    "variant": variant,
                    "status": "Succeeded",
                    "workflowRef": {"name": workflow["metadata"]["name"]},
                }
            )
        done = self._condition("Succeeded", "AllCategoriesPassed", "all categories met their thresholds")
        self.fc.sim.set_status(
            API_VERSION, "Certification", name, {"conditions": [done], "categoryStatuses": statuses}, ns
        )

    def _owned(self, kind: str, name: str, ns: str, owner: Obj, labels: dict[str, str]) -> Obj:
        ometa = owner["metadata"]
        ref = {
            "apiVersion": API_VERSION,
            "kind": owner["kind"],
            "name": ometa["name"],
            "uid": ometa.get("uid", ""),
        }
        return {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [ref]},
        }

    def _workflow(self, cert: Obj, domain: str, variant: str) -> Obj:
        ns, cname = cert["metadata"].get("namespace", ""), cert["metadata"]["name"]
        wf_name = f"{cname}-{variant}"[:63].rstrip("-")
        wf = self.fc.add(self._owned("Workflow", wf_name, ns, cert, {f"{GROUP}/certification": cname}))
        self.fc.add(self._owned("Job", f"{wf_name[:60]}-0", ns, wf, {f"{GROUP}/workflow": wf_name}))
        unparsable = FAULT_UNPARSABLE in self.faults
        if domain == "communication":
            peak = LOW_BUSBW if FAULT_BANDWIDTH_LOW in self.faults else HEALTHY_BUSBW
            results = [
                {"sizeBytes": size, "busBW": "n/a" if unparsable else f"{peak * (i + 1) / len(_SIZES):.2f}"}
                for i, size in enumerate(_SIZES)
            ]
            m = self._owned(
                "BandwidthMeasurement", f"{wf_name[:56]}-bw", ns, wf, {f"{GROUP}/workflow": wf_name}
            )
            m["status"] = {"results": results}
        else:
            ratio = LOW_GOODPUT if FAULT_GOODPUT_LOW in self.faults else HEALTHY_GOODPUT
            m = self._owned(
                "GoodputMeasurement", f"{wf_name[:52]}-goodput", ns, wf, {f"{GROUP}/workflow": wf_name}
            )
            m["status"] = {
                "result": "n/a" if unparsable else ratio,
                "trainingTimeSec": 540.0,
                "lostWorkTimeSec": 125.8,
                "avgStepTimeSec": 1.42,
                "avgTFLOPSPerGPU": 412.5,
                "interruptionCount": 0,
                "conditions": [self._condition("Complete", "MeasurementComplete", "goodput measured")],
            }
        self.fc.add(m)
        return wf

    def on_certification_deleted(self, sim: Simulator, obj: Obj) -> None:
        ns, cname = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        for wf in self.fc.list(API_VERSION, "Workflow", ns):
            if (wf["metadata"].get("labels") or {}).get(f"{GROUP}/certification") != cname:
                continue
            wf_name = wf["metadata"]["name"]
            for plural_kind in ("Job", "BandwidthMeasurement", "GoodputMeasurement"):
                for child in self.fc.list(API_VERSION, plural_kind, ns):
                    if (child["metadata"].get("labels") or {}).get(f"{GROUP}/workflow") == wf_name:
                        self.fc.delete(API_VERSION, plural_kind, child["metadata"]["name"], ns)
            self.fc.delete(API_VERSION, "Workflow", wf_name, ns)


def install(fc: SimulatedCluster, profile: ClusterProfile) -> None:
    """Answer Certifications when the profile runs NVCRE."""
    if profile.component("nvcre") is None:
        return
    controller = _Controller(fc, list(profile.faults))
    fc.sim.on_create(GROUP, "v1alpha1", "certifications", controller.on_certification)
    fc.sim.on_delete(GROUP, "v1alpha1", "certifications", controller.on_certification_deleted)
