"""``robust-controller`` (CNCF ``robust_controller``): one complex AI operator
with CRDs is installed and working -- its controller is available with every replica ready, holds
and renews its leader-election Lease, its validating webhook has live endpoints, its CRD is
registered, and the webhook actively rejects an invalid custom resource.

Dynamo (``dynamo-platform`` enabled in the recipe) takes precedence over Kubeflow Trainer
(``kubeflow-trainer``); a recipe with neither skips. So does an operator that is healthy but has
nothing to reconcile (no custom resources of its kinds: the guide's "installed but no workload"),
after the controller, Lease, webhook and CRD checks and before the rejection test
(:mod:`.operator_posture` holds the decisions).

The rejection must be the operator's webhook's: HTTP 403 or 422 whose message says ``admission
webhook "<name>" denied the request`` for a webhook of the configuration the check found. An RBAC
denial (``cannot create resource``) is ``other`` (the validator lacks a permission; nothing about the
operator was learnt); a rejection without ``admission webhook`` in it (a CRD schema check, a
ValidatingAdmissionPolicy) or by some other webhook fails -- for Dynamo too, where AICR accepts any
403/422. An accepted invalid object is deleted and fails the check.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from aicr_pytest.conformance import operator_posture as posture
from aicr_pytest.conformance.common import (
    ConformanceFailure,
    aicr_error,
    as_int,
    deployment_available,
    describe_cause,
    failure,
    first_image,
    inconclusive,
    list_objects,
    meta,
    read_error,
    spec,
    status,
    status_of,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import CheckSkip, Inconclusive
from aicr_pytest.kube.errors import ApiError, ApiUnreachable, NotFound

JSON = dict[str, Any]
MSG_SKIP: Final = "no supported AI operator found in recipe (requires dynamo-platform or kubeflow-trainer)"
MSG_ACCEPTED: Final = "validating webhook did not reject invalid {kind}"
MSG_RBAC: Final = "RBAC denied the request, not an admission webhook rejection"
MSG_NOT_WEBHOOK: Final = (
    "rejection does not appear to be from admission webhook (missing 'admission webhook' in message)"
)
MSG_OTHER_WEBHOOK: Final = "rejection came from an admission webhook other than the operator's ({names})"
MSG_UNEXPECTED: Final = "unexpected error testing webhook rejection"
VWC_API: Final = "admissionregistration.k8s.io/v1"


@dataclass(frozen=True)
class Operator:
    """What the check knows about one supported operator."""

    component: str
    title: str
    namespace: str
    deployment: str
    controller_missing: str
    deployment_label: str
    pods_label: str
    crd: str
    crd_missing: str
    crd_label: str
    webhook_missing: str
    api_version: str
    kind: str
    test_namespace: str
    #: the custom resources it reconciles: (apiVersion, kind, cluster-scoped)
    reconciles: tuple[tuple[str, str, bool], ...] = ()

    def invalid_object(self, name: str) -> JSON:
        if self.kind == "TrainJob":
            body: JSON = {
                "runtimeRef": {
                    "name": "robust-test-nonexistent-runtime",
                    "apiGroup": "trainer.kubeflow.org",
                    "kind": "ClusterTrainingRuntime",
                }
            }
        else:
            body = {"components": []}
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": {"name": name, "namespace": self.test_namespace},
            "spec": body,
        }


KUBEFLOW: Final = Operator(
    component="kubeflow-trainer",
    title="Kubeflow Trainer",
    namespace="kubeflow",
    deployment="kubeflow-trainer-controller-manager",
    controller_missing="Kubeflow Trainer controller not found",
    deployment_label="Kubeflow Trainer Deployment",
    pods_label="Kubeflow Trainer pods",
    crd="trainjobs.trainer.kubeflow.org",
    crd_missing="TrainJob CRD not found",
    crd_label="Kubeflow Trainer CRDs",
    webhook_missing="Kubeflow Trainer validating webhook not found",
    api_version="trainer.kubeflow.org/v1alpha1",
    kind="TrainJob",
    test_namespace="default",
    reconciles=(
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", False),
        ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", False),
        ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", True),
    ),
)
DYNAMO: Final = Operator(
    component="dynamo-platform",
    title="Dynamo",
    namespace="dynamo-system",
    deployment="dynamo-platform-dynamo-operator-controller-manager",
    controller_missing="Dynamo operator controller not found",
    deployment_label="Dynamo Operator Deployment",
    pods_label="Dynamo operator pods",
    crd="dynamographdeployments.nvidia.com",
    crd_missing="DynamoGraphDeployment CRD not found",
    crd_label="Dynamo CRDs",
    webhook_missing="Dynamo validating webhook configuration not found",
    api_version="nvidia.com/v1beta1",
    kind="DynamoGraphDeployment",
    test_namespace="dynamo-system",
    reconciles=(("nvidia.com/v1beta1", "DynamoGraphDeployment", False),),
)
KUBEFLOW_WEBHOOK: Final = "validator.trainer.kubeflow.org"
DYNAMO_WORKLOAD_NAMESPACE: Final = "dynamo-workload"


# --- pure decisions ----------------------------------------------------------------------------------


def choose_webhook(configs: Sequence[Mapping[str, Any]], operator: Operator) -> Mapping[str, Any] | None:
    """Kubeflow: the configuration named exactly ``validator.trainer.kubeflow.org``; Dynamo: the first
    (by name) whose name contains ``dynamo``."""
    ordered = sorted(configs, key=lambda c: str(meta(c).get("name") or ""))
    if operator.kind == "TrainJob":
        return next((c for c in ordered if meta(c).get("name") == KUBEFLOW_WEBHOOK), None)
    return next((c for c in ordered if "dynamo" in str(meta(c).get("name") or "")), None)


def webhook_names(config: Mapping[str, Any]) -> list[str]:
    return [
        str(w.get("name")) for w in config.get("webhooks") or [] if isinstance(w, Mapping) and w.get("name")
    ]


def webhook_services(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(namespace, name) of every webhook entry that points at a Service (URL entries are skipped)."""
    out: list[tuple[str, str]] = []
    for hook in config.get("webhooks") or []:
        svc = ((hook or {}).get("clientConfig") or {}).get("service") or {}
        if svc.get("name"):
            key = (str(svc.get("namespace") or ""), str(svc.get("name")))
            if key not in out:
                out.append(key)
    return out


def rejection_verdict(code: int, message: str, webhooks: Sequence[str]) -> tuple[str, str] | None:
    """Whether a refused create was the operator's webhook rejecting it.

    Returns ``None`` for a pass, else ``(kind, text)`` with ``kind`` ``"other"`` (RBAC: the validator's
    own permissions) or ``"fail"``.
    """
    if code not in (403, 422):
        return "fail", aicr_error("INTERNAL", MSG_UNEXPECTED, message)
    if "cannot create resource" in message:
        return "other", aicr_error("INTERNAL", MSG_RBAC, message)
    if "admission webhook" not in message:
        return "fail", aicr_error("INTERNAL", MSG_NOT_WEBHOOK, message)
    if not any(f'admission webhook "{name}" denied the request' in message for name in webhooks):
        names = ", ".join(webhooks) or "none"
        return "fail", aicr_error("INTERNAL", MSG_OTHER_WEBHOOK.format(names=names), message)
    return None


# --- the check ---------------------------------------------------------------------------------------


def run_robust_controller(ctx: ConformanceContext) -> None:
    """Run the check (see the module docstring); raises to report anything but a pass."""
    if ctx.has_component(DYNAMO.component):
        operator = DYNAMO
    elif ctx.has_component(KUBEFLOW.component):
        operator = KUBEFLOW
    else:
        raise CheckSkip(MSG_SKIP)
    namespace = ctx.component_namespace(operator.component, operator.namespace)
    test_ns = namespace if operator is DYNAMO else operator.test_namespace
    pods = _controller(ctx, operator, namespace)
    _leader_election(ctx, operator, namespace, pods)
    config = _webhook(ctx, operator)
    _crd(ctx, operator)
    if operator is DYNAMO:
        _dynamo_inventory(ctx)
    _something_to_reconcile(ctx, operator)
    _rejection(ctx, operator, test_ns, webhook_names(config))


def _wrap(err: BaseException, prefix: str) -> BaseException:
    """AICR's ``[NOT_FOUND] <prefix>: <inner>``; ``other`` when the inner error was ``other``."""
    text = aicr_error("NOT_FOUND", prefix, err)
    if isinstance(err, ConformanceFailure):
        return ConformanceFailure(text)
    return Inconclusive(text)


def _controller(ctx: ConformanceContext, operator: Operator, namespace: str) -> list[str]:
    try:
        dep = deployment_available(ctx.cluster, namespace, operator.deployment)
    except (ConformanceFailure, Inconclusive) as err:
        raise _wrap(err, operator.controller_missing) from err
    ctx.record(
        operator.deployment_label,
        f"Name: {namespace}/{operator.deployment}\n"
        f"Replicas: {as_int(status(dep).get('availableReplicas'))}/{spec(dep).get('replicas', 1)} available\n"
        f"Image: {first_image(dep)}",
        f"kubectl get deployment {operator.deployment} -n {namespace}",
    )
    pods = list_objects(ctx.cluster, "v1", "Pod", namespace, f"failed to list pods in namespace {namespace}")
    ctx.record(
        operator.pods_label,
        [f"{meta(p).get('name')}: {status(p).get('phase') or 'Pending'}" for p in pods] or ["(none)"],
        f"kubectl get pods -n {namespace}",
    )
    problem = posture.readiness_problem(dep, operator.title)
    ready = as_int(status(dep).get("readyReplicas"))
    ctx.record("Controller readiness", f"Ready: {ready}/{spec(dep).get('replicas', 1)} replicas")
    if problem is not None:
        raise failure("INTERNAL", problem)
    return posture.controller_pods(pods, operator.deployment)


def _leader_election(ctx: ConformanceContext, operator: Operator, namespace: str, pods: list[str]) -> None:
    leases = list_objects(
        ctx.cluster,
        "coordination.k8s.io/v1",
        "Lease",
        namespace,
        f"failed to list leases in namespace {namespace}",
    )
    lease = posture.pick_lease(leases, pods)
    if lease is None:
        holders = [f"{meta(x).get('name')}: {spec(x).get('holderIdentity') or '(none)'}" for x in leases]
        ctx.record("Leader election", holders or ["(no Lease)"], f"kubectl get leases -n {namespace}")
        raise failure("NOT_FOUND", posture.MSG_NO_LEASE.format(ns=namespace, title=operator.title))
    verdict = posture.lease_verdict(lease, ctx.clock.time(), operator.title)
    ctx.record(
        "Leader election", verdict.report, f"kubectl get lease {meta(lease).get('name')} -n {namespace}"
    )
    if verdict.problem is not None:
        raise failure("INTERNAL", verdict.problem)


def _something_to_reconcile(ctx: ConformanceContext, operator: Operator) -> None:
    """Skip when the operator has no custom resource of any kind it reconciles (objects being deleted
    do not count)."""
    counts: list[tuple[str, int]] = []
    for api_version, kind, _cluster_scoped in operator.reconciles:
        items = list_objects(ctx.cluster, api_version, kind, None, f"failed to list {kind} objects")
        counts.append((kind, sum(1 for i in items if not meta(i).get("deletionTimestamp"))))
    ctx.record("Custom resources to reconcile", [f"{kind}: {n}" for kind, n in counts])
    if counts and not any(n for _, n in counts):
        kinds = ", ".join(kind for kind, _ in counts)
        raise CheckSkip(posture.MSG_NOTHING_TO_RECONCILE.format(title=operator.title, kinds=kinds))


def _webhook(ctx: ConformanceContext, operator: Operator) -> Mapping[str, Any]:
    configs = list_objects(
        ctx.cluster,
        VWC_API,
        "ValidatingWebhookConfiguration",
        None,
        "failed to list validating webhook configurations",
    )
    ctx.record(
        "Validating webhooks",
        sorted(str(meta(c).get("name")) for c in configs) or ["(none)"],
        "kubectl get validatingwebhookconfigurations",
    )
    config = choose_webhook(configs, operator)
    if config is None:
        raise failure("NOT_FOUND", operator.webhook_missing)
    lines = [f"Configuration: {meta(config).get('name')}"]
    for hook in config.get("webhooks") or []:
        svc = ((hook or {}).get("clientConfig") or {}).get("service") or {}
        target = f"service {svc.get('namespace')}/{svc.get('name')}:{svc.get('port', 443)}" if svc else "url"
        lines.append(
            f"Webhook {hook.get('name')}: {target} failurePolicy={hook.get('failurePolicy', 'Fail')}"
        )
    for svc_ns, svc_name in webhook_services(config):
        where = f"{svc_ns}/{svc_name}"
        try:
            slices = list(
                ctx.cluster.list(
                    "discovery.k8s.io/v1",
                    "EndpointSlice",
                    svc_ns,
                    label_selector=f"kubernetes.io/service-name={svc_name}",
                )
            )
        except NotFound as err:
            raise failure("NOT_FOUND", f"webhook endpoint {where} not found", err) from err
        except ApiError as err:
            raise inconclusive("NOT_FOUND", f"webhook endpoint {where} not found", err) from err
        if not slices:
            raise failure("NOT_FOUND", f"no EndpointSlice for webhook service {where}")
        endpoints = sum(len(s.get("endpoints") or []) for s in slices)
        lines.append(f"Service {where}: {len(slices)} EndpointSlice(s), {endpoints} endpoint(s)")
    ctx.record(
        "Validating Webhook",
        lines,
        f"kubectl get validatingwebhookconfiguration {meta(config).get('name')} -o yaml",
    )
    return config


def _crd(ctx: ConformanceContext, operator: Operator) -> None:
    try:
        crd = ctx.cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", operator.crd)
    except ApiError as err:
        raise _wrap(
            read_error(err, f"CustomResourceDefinition {operator.crd}"), operator.crd_missing
        ) from err
    versions = [str(v.get("name")) for v in spec(crd).get("versions") or [] if v.get("served")]
    ctx.record(
        operator.crd_label,
        f"{operator.crd}: served versions {', '.join(versions) or 'none'}",
        f"kubectl get crd {operator.crd}",
    )


def _dynamo_inventory(ctx: ConformanceContext) -> None:
    """Best-effort: errors are recorded, never a verdict."""
    for label, api_version, kind, namespace in (
        ("DynamoGraphDeployments", "nvidia.com/v1beta1", "dynamographdeployments", None),
        ("Dynamo workload pods", "v1", "pods", DYNAMO_WORKLOAD_NAMESPACE),
        (
            "DynamoComponentDeployments",
            "nvidia.com/v1alpha1",
            "dynamocomponentdeployments",
            DYNAMO_WORKLOAD_NAMESPACE,
        ),
    ):
        try:
            items = list(ctx.cluster.list(api_version, kind, namespace))
            text = [f"{meta(i).get('namespace', '')}/{meta(i).get('name')}".lstrip("/") for i in items] or [
                "(none)"
            ]
        except (ApiError, Inconclusive) as err:
            text = [f"failed to list {kind}: {describe_cause(err)}"]
        ctx.record(label, text)


def _rejection(ctx: ConformanceContext, operator: Operator, namespace: str, webhooks: Sequence[str]) -> None:
    obj = operator.invalid_object(f"robust-test-{secrets.token_hex(4)}")
    obj["metadata"]["namespace"] = namespace
    resource = f"{operator.api_version} {operator.kind} {namespace}/{ctx.run.name(obj['metadata']['name'])}"
    try:
        created = ctx.run.create(obj)
    except ApiUnreachable as err:
        raise inconclusive("INTERNAL", MSG_UNEXPECTED, err) from err
    except ApiError as err:
        code, reason, message = status_of(err)
        ctx.record(
            "Webhook Rejection Test",
            f"Resource: {resource}\nHTTP status code: {code}\nReason: {reason}\nMessage: {message}",
        )
        verdict = rejection_verdict(code, message, webhooks)
        if verdict is None:
            return
        kind, text = verdict
        raise (Inconclusive(text) if kind == "other" else ConformanceFailure(text)) from err
    name = str(meta(created).get("name"))
    ctx.record("Webhook Rejection Test", f"Resource: {resource}\nResult: accepted (created), then deleted")
    with contextlib.suppress(ApiError):  # the run's cleanup deletes it too (created through the run scope)
        ctx.cluster.delete(operator.api_version, operator.kind, name, namespace, missing_ok=True)
    raise failure("INTERNAL", MSG_ACCEPTED.format(kind=operator.kind))


__all__ = [
    "DYNAMO",
    "KUBEFLOW",
    "KUBEFLOW_WEBHOOK",
    "MSG_SKIP",
    "Operator",
    "choose_webhook",
    "rejection_verdict",
    "run_robust_controller",
    "webhook_names",
    "webhook_services",
]
