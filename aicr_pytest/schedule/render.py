"""``aicr-pytest schedule``: the objects that run aicr-pytest in the cluster on a schedule (pure).

:func:`render` turns a :class:`ScheduleSpec` into plain dicts, in apply order:

1. the Namespace (default ``aicr-validation``) and the runner's ServiceAccount ``aicr-pytest``;
2. a ClusterRole + ClusterRoleBinding ``aicr-pytest-<namespace>``: the rules of ``deploy/rbac.yaml``
   (the source: a test holds it equal to what the code uses), less the rules only phases the
   schedule does not run need (:data:`PHASE_ONLY`);
3. with ``--label-bad-nodes``/``--taint-bad-nodes`` only: ClusterRole + ClusterRoleBinding
   ``aicr-pytest-node-marks-<namespace>`` from ``deploy/rbac-node-marks.yaml`` (node patch);
4. the recipe and the snapshot as ConfigMaps (``aicr-pytest-recipe``, ``aicr-pytest-snapshot``),
   when they were given as files (a URL or ``cm://`` is passed on as it is);
5. the CronJob ``aicr-pytest``: ``concurrencyPolicy: Forbid`` (a run still going when the next is
   due: the next is skipped), ``startingDeadlineSeconds``, history limits, ``backoffLimit: 0`` (a
   failed validation is a result, not a crash to retry), resources, a locked-down pod whose
   container runs ``aicr-pytest validate`` with the selection, ``--history cm://…`` and
   ``-o cm://…``.

Every object carries ``app.kubernetes.io/managed-by: aicr-pytest-schedule`` and
``aicr.run/schedule: <namespace>``; ``schedule --delete`` removes only objects that carry them.  The
runs use the same namespace for their run-scoped objects and leave it in place (it is not theirs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core import catalog
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.resources import bundled_dir
from aicr_pytest.schedule.defaults import DEFAULT_CRON, DEFAULT_IMAGE, DEFAULT_NAMESPACE
from aicr_pytest.schedule.imageref import Image

JSON = dict[str, Any]

NAME: Final = "aicr-pytest"
RECIPE_CM: Final = "aicr-pytest-recipe"
SNAPSHOT_CM: Final = "aicr-pytest-snapshot"
HISTORY_CM: Final = "aicr-pytest-history"
CTRF_CM: Final = "aicr-pytest-ctrf"
MOUNT: Final = "/etc/aicr-pytest"
SCHEDULE_LABEL: Final = "aicr.run/schedule"
#: ``managed-by`` is ``aicr-pytest-schedule``, not a run's ``aicr-pytest``: a run that finds its shared
#: namespace labelled ``aicr-pytest`` deletes it when it is the last one out (kube.run), and the
#: schedule's namespace must outlive every run
LABELS: Final = {
    "app.kubernetes.io/name": "aicr-pytest",
    "app.kubernetes.io/managed-by": "aicr-pytest-schedule",
    "app.kubernetes.io/component": "schedule",
}
STARTING_DEADLINE_S: Final = 600
HISTORY_LIMIT: Final = 3
#: the runner's resources: its peak for a deployment-phase run on 5,000 nodes stays below the limit
#: (benchmarks/bench_schedule.py)
RESOURCES: Final = {"requests": {"cpu": "250m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}

#: (API group, resource) → the phases whose checks need it; a rule not listed is needed by every run.
#: Audited against the families' code (deployment + health: deployment; conformance; nccl, cre and
#: inference: performance); ``tests/unit/test_schedule_render.py`` scans the families' sources so a
#: resource a family starts to use cannot stay trimmed from its phase.
_PERF = frozenset({"performance"})
_CONF = frozenset({"conformance"})
_CONF_PERF = frozenset({"conformance", "performance"})
PHASE_ONLY: Final[Mapping[tuple[str, str], frozenset[str]]] = {
    # CRE and inference-perf only
    ("nvcre.nvidia.com", "certifications"): _PERF,
    ("nvcre.nvidia.com", "bandwidthmeasurements"): _PERF,
    ("nvcre.nvidia.com", "goodputmeasurements"): _PERF,
    ("", "persistentvolumeclaims"): _PERF,
    ("", "secrets"): _PERF,
    # NCCL / inference-perf, and the conformance probes of the same operators (robust-controller,
    # gang-scheduling, inference-gateway, the Slinky IMEX channel)
    ("trainer.kubeflow.org", "trainjobs"): _CONF_PERF,
    ("trainer.kubeflow.org", "trainingruntimes"): _CONF_PERF,
    ("resource.nvidia.com", "computedomains"): _CONF_PERF,
    ("nvidia.com", "dynamographdeployments"): _CONF_PERF,
    ("scheduling.run.ai", "queues"): _CONF_PERF,
    ("gateway.networking.k8s.io", "httproutes"): _CONF_PERF,
    # conformance only
    **{
        k: _CONF
        for k in (
            ("scheduling.run.ai", "podgroups"),
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
            ("discovery.k8s.io", "endpointslices"),
            ("nvidia.com", "dynamocomponentdeployments"),
            ("authorization.k8s.io", "subjectaccessreviews"),
            ("monitoring.coreos.com", "servicemonitors"),
            ("monitoring.coreos.com", "podmonitors"),
            ("coordination.k8s.io", "leases"),
            ("trainer.kubeflow.org", "clustertrainingruntimes"),
            ("custom.metrics.k8s.io", "pods/gpu_utilization"),
            ("custom.metrics.k8s.io", "pods/gpu_memory_used"),
            ("custom.metrics.k8s.io", "pods/gpu_power_usage"),
            ("external.metrics.k8s.io", "dcgm_gpu_power_usage"),
            ("autoscaling", "horizontalpodautoscalers"),
            ("karpenter.sh", "nodepools"),
            ("gateway.networking.k8s.io", "gatewayclasses"),
            ("gateway.networking.k8s.io", "gateways"),
            ("slinky.slurm.net", "loginsets"),
            ("slinky.slurm.net", "nodesets"),
            ("", "pods/exec"),
        )
    },
}
#: rules where only some verbs are phase-bound: (group, resource, verb) → phases
PHASE_ONLY_VERBS: Final[Mapping[tuple[str, str, str], frozenset[str]]] = {
    ("", "services/proxy", "create"): _PERF,  # inference-perf's endpoint probe
    ("apps", "deployments", "create"): _CONF,  # pod-/cluster-autoscaling's scale target
}

_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
MSG_NAMESPACE: Final = (
    "--namespace {ns!r} is not a namespace name (lowercase letters, digits and -, at most 63)"
)
MSG_UNKNOWN_CHECK: Final = "--check {name!r} is not a check; valid checks: {valid}"
MSG_MARK_NO_HEALTH: Final = (
    "{flag}: the scheduled run selects no node-health check ({checks}); add --node-health or drop the flag"
)


@dataclass(frozen=True)
class ScheduleSpec:
    """What to schedule (the command line, validated by :func:`spec`)."""

    image: Image
    recipe: str
    namespace: str = DEFAULT_NAMESPACE
    cron: str = DEFAULT_CRON
    snapshot: str | None = None
    #: the file contents when the recipe / snapshot was given as a file (they become ConfigMaps)
    recipe_text: str | None = None
    snapshot_text: str | None = None
    phases: tuple[str, ...] = ()
    node_health: bool = False
    checks: tuple[str, ...] = ()
    label_bad_nodes: bool = False
    taint_bad_nodes: bool = False
    history: str | None = None
    output: str | None = None
    pushgateway: str | None = None
    extra_args: tuple[str, ...] = field(default=())

    @property
    def marks_nodes(self) -> bool:
        return self.label_bad_nodes or self.taint_bad_nodes

    @property
    def run_phases(self) -> tuple[str, ...]:
        return self.phases or catalog.PHASES

    @property
    def history_target(self) -> str:
        return self.history or f"cm://{self.namespace}/{HISTORY_CM}"

    @property
    def output_target(self) -> str:
        return self.output or f"cm://{self.namespace}/{CTRF_CM}"


def _local_text(location: str | None) -> str | None:
    """The contents of ``location`` when it is a local file (``None`` for a URL or ``cm://``)."""
    if location is None or "://" in location:
        return None
    path = Path(location).expanduser()
    try:
        return path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {location}: {exc.strerror or exc}") from None


def check_namespace(namespace: str) -> str:
    """``namespace`` when it is a namespace name; :class:`UsageError` otherwise."""
    if not _DNS_LABEL.match(namespace):
        raise UsageError(MSG_NAMESPACE.format(ns=namespace))
    return namespace


def spec(
    *,
    image: Image,
    recipe: str,
    namespace: str = DEFAULT_NAMESPACE,
    cron: str = DEFAULT_CRON,
    snapshot: str | None = None,
    phases: Sequence[str] = (),
    node_health: bool = False,
    checks: Sequence[str] = (),
    label_bad_nodes: bool = False,
    taint_bad_nodes: bool = False,
    history: str | None = None,
    output: str | None = None,
    pushgateway: str | None = None,
) -> ScheduleSpec:
    """Validate the command line into a :class:`ScheduleSpec`; :class:`UsageError` (one line) otherwise.

    ``cron`` and ``image`` are already checked (:mod:`.cron`, :mod:`.imageref`)."""
    check_namespace(namespace)
    run_phases = tuple(catalog.parse_phases(list(phases))) if phases else ()
    for name in checks:
        if name not in catalog.BY_NAME:
            raise UsageError(
                MSG_UNKNOWN_CHECK.format(name=name, valid=", ".join(c.name for c in catalog.CATALOG))
            )
    health = catalog.names_in_group(catalog.HEALTH)
    if (label_bad_nodes or taint_bad_nodes) and not (node_health or any(c in health for c in checks)):
        flag = "--taint-bad-nodes" if taint_bad_nodes else "--label-bad-nodes"
        raise UsageError(MSG_MARK_NO_HEALTH.format(flag=flag, checks=", ".join(health)))
    return ScheduleSpec(
        image=image,
        recipe=recipe,
        namespace=namespace,
        cron=cron,
        snapshot=snapshot,
        recipe_text=_local_text(recipe),
        snapshot_text=_local_text(snapshot),
        phases=run_phases,
        node_health=node_health,
        checks=tuple(dict.fromkeys(checks)),
        label_bad_nodes=label_bad_nodes,
        taint_bad_nodes=taint_bad_nodes,
        history=history,
        output=output,
        pushgateway=pushgateway,
    )


def _meta(s: ScheduleSpec, name: str, *, namespaced: bool = True) -> JSON:
    meta: JSON = {"name": name, "labels": {**LABELS, SCHEDULE_LABEL: s.namespace}}
    if namespaced:
        meta["namespace"] = s.namespace
    return meta


def _bundled_rules(file: str, role: str) -> list[JSON]:
    import yaml

    docs = yaml.safe_load_all((bundled_dir("deploy") / file).read_text())
    for doc in docs:
        if doc and doc.get("kind") == "ClusterRole" and doc["metadata"]["name"] == role:
            return list(doc.get("rules") or [])
    raise FileNotFoundError(f"aicr-pytest installation is incomplete: no ClusterRole {role} in deploy/{file}")


def runner_rules(phases: Sequence[str]) -> list[JSON]:
    """``deploy/rbac.yaml``'s rules, less what only phases outside ``phases`` need."""
    wanted = set(phases)
    out: list[JSON] = []
    for rule in _bundled_rules("rbac.yaml", "aicr-pytest"):
        if "nonResourceURLs" in rule:
            out.append(rule)
            continue
        groups = rule.get("apiGroups") or []
        verbs = [
            v
            for v in rule.get("verbs") or []
            if all(
                PHASE_ONLY_VERBS.get((g, r, v), wanted) & wanted
                for g in groups
                for r in rule.get("resources") or []
            )
        ]
        resources = [
            r
            for r in rule.get("resources") or []
            if all(PHASE_ONLY.get((g, r), wanted) & wanted for g in groups)
        ]
        if resources and verbs:
            out.append({**rule, "resources": resources, "verbs": verbs})
    return out


def _role_and_binding(s: ScheduleSpec, name: str, rules: list[JSON]) -> list[JSON]:
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(s, name, namespaced=False),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(s, name, namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": s.namespace}],
        },
    ]


def skipped_checks(s: ScheduleSpec) -> list[str]:
    """With ``--check``: every other check of the run's phases (``validate --skip-check``)."""
    if not s.checks:
        return []
    return [c.name for c in catalog.CATALOG if c.phase in s.run_phases and c.name not in s.checks]


def validate_args(s: ScheduleSpec) -> list[str]:
    """The arguments of ``aicr-pytest`` in the runner's container."""
    recipe = f"{MOUNT}/recipe/recipe.yaml" if s.recipe_text is not None else s.recipe
    args = ["validate", "--recipe", recipe]
    if s.snapshot is not None:
        args += [
            "--snapshot",
            f"{MOUNT}/snapshot/snapshot.yaml" if s.snapshot_text is not None else s.snapshot,
        ]
    for phase in s.phases:
        args += ["--phase", phase]
    if s.node_health or any(c in catalog.names_in_group(catalog.HEALTH) for c in s.checks):
        args.append("--node-health")
    for name in skipped_checks(s):
        args += ["--skip-check", name]
    if s.label_bad_nodes:
        args.append("--label-bad-nodes")
    if s.taint_bad_nodes:
        args.append("--taint-bad-nodes")
    args += ["--namespace", s.namespace]  # the run's objects go here; the namespace outlives the runs
    args += ["--history", s.history_target, "-o", s.output_target]
    if s.pushgateway:
        args += ["--pushgateway", s.pushgateway]
    return [*args, *s.extra_args]


def _configmap(s: ScheduleSpec, name: str, key: str, text: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(s, name), "data": {key: text}}


def cronjob(s: ScheduleSpec) -> JSON:
    """The CronJob whose pod runs ``aicr-pytest validate``."""
    mounts: list[JSON] = [{"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[JSON] = [{"name": "tmp", "emptyDir": {}}]
    for what, cm, text in (("recipe", RECIPE_CM, s.recipe_text), ("snapshot", SNAPSHOT_CM, s.snapshot_text)):
        if text is not None:
            mounts.append({"name": what, "mountPath": f"{MOUNT}/{what}", "readOnly": True})
            volumes.append({"name": what, "configMap": {"name": cm}})
    container: JSON = {
        "name": "aicr-pytest",
        "image": s.image.reference,
        "imagePullPolicy": s.image.pull_policy,
        "command": ["aicr-pytest"],
        "args": validate_args(s),
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": RESOURCES,
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    pod: JSON = {
        "metadata": {"labels": {**LABELS, SCHEDULE_LABEL: s.namespace}},
        "spec": {
            "serviceAccountName": NAME,
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
            "volumes": volumes,
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(s, NAME),
        "spec": {
            "schedule": s.cron,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_S,
            "successfulJobsHistoryLimit": HISTORY_LIMIT,
            "failedJobsHistoryLimit": HISTORY_LIMIT,
            "jobTemplate": {
                "metadata": {"labels": {**LABELS, SCHEDULE_LABEL: s.namespace}},
                "spec": {"backoffLimit": 0, "template": pod},
            },
        },
    }


def render(s: ScheduleSpec) -> list[JSON]:
    """Every object, in apply order (see the module)."""
    objects: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(s, s.namespace, namespaced=False)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(s, NAME)},
        *_role_and_binding(s, f"aicr-pytest-{s.namespace}", runner_rules(s.run_phases)),
    ]
    if s.marks_nodes:
        rules = _bundled_rules("rbac-node-marks.yaml", "aicr-pytest-node-marks")
        objects += _role_and_binding(s, f"aicr-pytest-node-marks-{s.namespace}", rules)
    if s.recipe_text is not None:
        objects.append(_configmap(s, RECIPE_CM, "recipe.yaml", s.recipe_text))
    if s.snapshot_text is not None:
        objects.append(_configmap(s, SNAPSHOT_CM, "snapshot.yaml", s.snapshot_text))
    objects.append(cronjob(s))
    return objects


def deletable(namespace: str) -> list[tuple[str, str, str, str | None]]:
    """``(apiVersion, kind, name, namespace)`` of everything a schedule in ``namespace`` may have
    created, in delete order (the CronJob first, the Namespace last)."""
    return [
        ("batch/v1", "CronJob", NAME, namespace),
        ("v1", "ConfigMap", RECIPE_CM, namespace),
        ("v1", "ConfigMap", SNAPSHOT_CM, namespace),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", f"aicr-pytest-node-marks-{namespace}", None),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", f"aicr-pytest-node-marks-{namespace}", None),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", f"aicr-pytest-{namespace}", None),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", f"aicr-pytest-{namespace}", None),
        ("v1", "ServiceAccount", NAME, namespace),
        ("v1", "Namespace", namespace, None),
    ]


def ours(obj: Mapping[str, Any], namespace: str) -> bool:
    """Whether ``obj`` was created by the schedule in ``namespace`` (its labels say so)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return (
        labels.get("app.kubernetes.io/managed-by") == LABELS["app.kubernetes.io/managed-by"]
        and labels.get(SCHEDULE_LABEL) == namespace
    )


__all__ = [
    "DEFAULT_CRON",
    "DEFAULT_IMAGE",
    "DEFAULT_NAMESPACE",
    "PHASE_ONLY",
    "ScheduleSpec",
    "check_namespace",
    "cronjob",
    "deletable",
    "ours",
    "render",
    "runner_rules",
    "skipped_checks",
    "spec",
    "validate_args",
]
