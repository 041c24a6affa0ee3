"""secure-accelerator-access's authn/authz posture: SubjectAccessReviews as ``system:anonymous``, on
both backends (``k8s_backend``; helpers of :mod:`test_conformance_checks`). The fake answers reviews
from its stored roles and bindings (:mod:`aicr_pytest.testing.server.authz`); the control plane's
RBAC authorizer answers them for real. The check never skips (a cluster without a usable GPU
mechanism fails; only the phase-level ``--no-cluster`` skip applies, covered elsewhere)."""

from __future__ import annotations

from typing import Any

import pytest
from _facade_helpers import fake_of

from aicr_pytest.conformance import access_posture
from tests.cluster.test_conformance_checks import PROFILE, TRAINING, artifact, labels, leftovers, run
from tests.cluster.test_conformance_checks import recipe as make_recipe
from tests.harness.backends import K8sBackend

CHECK = "secure-accelerator-access"
LABEL = "Anonymous access (SubjectAccessReview as system:anonymous)"


def secure(pytester: pytest.Pytester, backend: K8sBackend, **kw: Any) -> tuple[dict[str, Any], str]:
    result = run(pytester, backend, make_recipe(TRAINING, CHECK), **kw)
    return result.tests[CHECK], result.run_id


def test_anonymous_denied_passes(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    test, run_id = secure(pytester, k8s_backend)
    assert (test["status"], test.get("message")) == ("passed", None)
    assert artifact(test, LABEL) == (
        "list secrets in all namespaces: denied\ncreate pods in namespace default: denied\n"
        "list nodes: denied\nlist ResourceClaims in all namespaces: denied"
    )
    assert labels(test)[0] == LABEL  # asked before any GPU pod
    assert leftovers(k8s_backend, run_id) == []


def test_anonymous_access_fails_before_any_gpu_pod(
    pytester: pytest.Pytester, k8s_backend: K8sBackend
) -> None:
    k8s_backend.seed_profile(PROFILE, ["anonymous-access-allowed"])
    test, _ = secure(pytester, k8s_backend)
    assert test["status"] == "failed"
    allowed = [p.what for p in access_posture.ANONYMOUS_PROBES[:3]]
    reason = 'RBAC: allowed by ClusterRoleBinding "sim-anonymous-workloads"'
    if not k8s_backend.virtual_time:  # kube-apiserver words the reason its own way
        reason = artifact(test, LABEL).splitlines()[0].split(" (", 1)[1].rstrip(")")
        assert "sim-anonymous-workloads" in reason
    assert test["message"] == "[INTERNAL] " + access_posture.MSG_ANONYMOUS_ALLOWED.format(
        user="system:anonymous", what=", ".join(f"{w} ({reason})" for w in allowed)
    )
    assert artifact(test, LABEL).endswith("list ResourceClaims in all namespaces: denied")
    assert "Secure access mode" not in labels(test)


@pytest.mark.fake_only("HTTP fault injection: the validator may not create SubjectAccessReviews")
def test_review_refused_is_other(pytester: pytest.Pytester, k8s_backend: K8sBackend) -> None:
    k8s_backend.seed_profile(PROFILE)
    faults = fake_of(k8s_backend).faults
    faults.reject(
        "POST", r"/subjectaccessreviews$", status=403, reason="Forbidden", message="forbidden", times=None
    )
    test, _ = secure(pytester, k8s_backend, denial_expected=True)
    assert (test["status"], test["message"]) == (
        "other",
        "[INTERNAL] failed to review anonymous access (SubjectAccessReview): RBAC denied: cannot create "
        "subjectaccessreviews.authorization.k8s.io (403 Forbidden)",
    )
