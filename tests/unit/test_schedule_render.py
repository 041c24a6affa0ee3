"""``aicr-pytest schedule``: cron and image checks, and the rendered objects (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.kube.rbac import NODE_MARK_PERMISSIONS, REQUIRED_PERMISSIONS, Permission, granted_permissions
from aicr_pytest.schedule import render
from aicr_pytest.schedule.command import ScheduleArgs, build, dump
from aicr_pytest.schedule.cron import validate_cron
from aicr_pytest.schedule.imageref import parse_image

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "examples" / "h100-eks-training.yaml"
SNAPSHOT = REPO / "recipes" / "examples" / "h100-eks-training-snapshot.yaml"
DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "expr", ["0 */6 * * *", "*/15 0-23/2 1,15 jan-jun mon-fri", "@hourly", " 5  4 * * 7 ", "0 0 ? * SUN"]
)
def test_good_cron_expressions(expr: str) -> None:
    assert validate_cron(expr) == " ".join(expr.split())


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (
            "0 */6 * *",
            "--cron '0 */6 * *': a cron expression has 5 fields (minute hour day-of-month month "
            "day-of-week), not 4",
        ),
        ("", "--cron '': a cron expression has 5 fields (minute hour day-of-month month day-of-week), not 0"),
        ("60 * * * *", "--cron '60 * * * *': minute '60' is not valid (0-59)"),
        ("0 24 * * *", "--cron '0 24 * * *': hour '24' is not valid (0-23)"),
        ("0 0 0 * *", "--cron '0 0 0 * *': day of month '0' is not valid (1-31)"),
        ("0 0 * 13 *", "--cron '0 0 * 13 *': month '13' is not valid (1-12)"),
        ("0 0 * * 8", "--cron '0 0 * * 8': day of week '8' is not valid (0-7)"),
        (
            "*/0 * * * *",
            "--cron '*/0 * * * *': minute '*/0' is not valid (the step must be a whole number above 0)",
        ),
        ("5-1 * * * *", "--cron '5-1 * * * *': minute '5-1' is not valid (a range must not run backwards)"),
        ("x * * * *", "--cron 'x * * * *': minute 'x' is not valid (not a number)"),
        ("0 0 * foo *", "--cron '0 0 * foo *': month 'foo' is not valid (not a number or a name)"),
        ("1,,2 * * * *", "--cron '1,,2 * * * *': minute '' is not valid (empty list item)"),
    ],
)
def test_bad_cron_expressions_are_one_line(expr: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        validate_cron(expr)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("ref", "pinned", "policy"),
    [
        ("ghcr.io/nvidia/aicr-pytest:0.1.0", False, "Always"),
        (f"registry.local:5000/team/aicr-pytest@{DIGEST}", True, "IfNotPresent"),
        (f"aicr-pytest:0.1.0@{DIGEST}", True, "IfNotPresent"),
    ],
)
def test_good_images(ref: str, pinned: bool, policy: str) -> None:
    image = parse_image(ref)
    assert (image.reference, image.pinned, image.pull_policy) == (ref, pinned, policy)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "Not An Image",
            "--image 'Not An Image' is not an image reference ([registry/]repository[:tag][@sha256:digest])",
        ),
        (
            "ghcr.io/UPPER/x:1",
            "--image 'ghcr.io/UPPER/x:1' is not an image reference "
            "([registry/]repository[:tag][@sha256:digest])",
        ),
        (
            "ghcr.io/x/y",
            "--image 'ghcr.io/x/y': give a tag or a digest (an image without one means :latest, which moves)",
        ),
        (
            "x:1@md5:" + "a" * 32,
            "--image 'x:1@md5:" + "a" * 32 + "': the digest must be sha256: and 64 lowercase hex digits",
        ),
    ],
)
def test_bad_images_are_one_line(ref: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_image(ref)
    assert str(err.value) == message


def objects(**kw: Any) -> dict[tuple[str, str], dict[str, Any]]:
    args = ScheduleArgs(**{"recipe": str(RECIPE), **kw})
    return {(o["kind"], o["metadata"]["name"]): o for o in render.render(build(args))}


def test_the_default_schedule() -> None:
    objs = objects(snapshot=str(SNAPSHOT))
    assert list(objs) == [
        ("Namespace", "aicr-validation"),
        ("ServiceAccount", "aicr-pytest"),
        ("ClusterRole", "aicr-pytest-aicr-validation"),
        ("ClusterRoleBinding", "aicr-pytest-aicr-validation"),
        ("ConfigMap", "aicr-pytest-recipe"),
        ("ConfigMap", "aicr-pytest-snapshot"),
        ("CronJob", "aicr-pytest"),
    ]
    for obj in objs.values():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "aicr-pytest-schedule"  # runs never delete it
        assert labels["aicr.run/schedule"] == "aicr-validation"
    assert objs[("ConfigMap", "aicr-pytest-recipe")]["data"] == {"recipe.yaml": RECIPE.read_text()}
    cj = objs[("CronJob", "aicr-pytest")]["spec"]
    assert (cj["schedule"], cj["concurrencyPolicy"], cj["startingDeadlineSeconds"]) == (
        "0 */6 * * *",
        "Forbid",
        600,
    )
    assert (cj["successfulJobsHistoryLimit"], cj["failedJobsHistoryLimit"]) == (3, 3)
    assert cj["jobTemplate"]["spec"]["backoffLimit"] == 0
    pod = cj["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "aicr-pytest" and pod["restartPolicy"] == "Never"
    (c,) = pod["containers"]
    assert c["image"] == render.DEFAULT_IMAGE and c["imagePullPolicy"] == "Always"
    assert c["resources"]["limits"] == {"memory": "256Mi"}
    assert c["command"] == ["aicr-pytest"]
    assert c["args"] == [
        "validate",
        "--recipe", "/etc/aicr-pytest/recipe/recipe.yaml",
        "--snapshot", "/etc/aicr-pytest/snapshot/snapshot.yaml",
        "--namespace", "aicr-validation",
        "--history", "cm://aicr-validation/aicr-pytest-history",
        "-o", "cm://aicr-validation/aicr-pytest-ctrf",
    ]  # fmt: skip
    binding = objs[("ClusterRoleBinding", "aicr-pytest-aicr-validation")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "aicr-pytest", "namespace": "aicr-validation"}
    ]
    # every phase: exactly what deploy/rbac.yaml grants
    assert granted_permissions([objs[("ClusterRole", "aicr-pytest-aicr-validation")]]) == set(
        REQUIRED_PERMISSIONS
    )


def test_a_selection_narrows_the_args_and_the_role() -> None:
    objs = objects(
        recipe="cm://team/recipe",
        namespace="gpu-watch",
        cron="*/30 * * * *",
        image=f"registry.local/aicr-pytest@{DIGEST}",
        phases=["deployment"],
        checks=["gpu-health"],
        label_bad_nodes=True,
        taint_bad_nodes=True,
        pushgateway="http://pushgateway.monitoring:9091",
    )
    assert ("ConfigMap", "aicr-pytest-recipe") not in objs  # a cm:// recipe is passed on
    cj = objs[("CronJob", "aicr-pytest")]
    (c,) = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert c["image"] == f"registry.local/aicr-pytest@{DIGEST}" and c["imagePullPolicy"] == "IfNotPresent"
    skipped = [c["args"][i + 1] for i, a in enumerate(c["args"]) if a == "--skip-check"]
    assert "gpu-health" not in skipped and "gpu-inventory" in skipped and "expected-resources" in skipped
    assert c["args"][:6] == [
        "validate",
        "--recipe",
        "cm://team/recipe",
        "--phase",
        "deployment",
        "--node-health",
    ]
    assert c["args"][-10:] == [
        "--label-bad-nodes", "--taint-bad-nodes", "--namespace", "gpu-watch",
        "--history", "cm://gpu-watch/aicr-pytest-history", "-o", "cm://gpu-watch/aicr-pytest-ctrf",
        "--pushgateway", "http://pushgateway.monitoring:9091",
    ]  # fmt: skip
    role = granted_permissions([objs[("ClusterRole", "aicr-pytest-gpu-watch")]])
    assert role < set(REQUIRED_PERMISSIONS)
    assert Permission("get", "", "pods/proxy") in role  # gpu-health scrapes the exporters
    for absent in (
        Permission("create", "trainer.kubeflow.org", "trainjobs"),
        Permission("create", "", "pods/exec"),
        Permission("create", "", "secrets"),
        Permission("create", "", "services/proxy"),
        Permission("create", "apps", "deployments"),
    ):
        assert absent not in role
    assert Permission("get", "", "services/proxy") in role
    marks = objs[("ClusterRole", "aicr-pytest-node-marks-gpu-watch")]
    assert granted_permissions([marks]) == set(NODE_MARK_PERMISSIONS)


def test_node_patch_only_with_the_flags() -> None:
    objs = objects(node_health=True)
    assert not [k for k in objs if "node-marks" in k[1]]
    assert all(Permission("patch", "", "nodes") not in granted_permissions([o]) for o in objs.values())


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"namespace": "Bad_NS"},
            "--namespace 'Bad_NS' is not a namespace name (lowercase letters, digits and -, at most 63)",
        ),
        (
            {"taint_bad_nodes": True},
            "--taint-bad-nodes: the scheduled run selects no node-health check (gpu-inventory, "
            "gpu-diagnostics, gpu-health, gpu-cuda-smoke); add --node-health or drop the flag",
        ),
        ({"recipe": None}, "schedule: --recipe is required (a file, an https:// URL or cm://namespace/name)"),
        (
            {"recipe": "/nonexistent/recipe.yaml"},
            "cannot read /nonexistent/recipe.yaml: No such file or directory",
        ),
    ],
)
def test_bad_input_is_one_line(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as err:
        build(ScheduleArgs(**{"recipe": str(RECIPE), **kw}))
    assert str(err.value) == message


def test_an_unknown_check_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=r"^--check 'gpu-healt' is not a check; valid checks: .*gpu-health"):
        build(ScheduleArgs(recipe=str(RECIPE), checks=["gpu-healt"]))


def test_dry_run_yaml_round_trips() -> None:
    import yaml

    objs = render.render(build(ScheduleArgs(recipe=str(RECIPE))))
    assert list(yaml.safe_load_all(dump(objs))) == objs


def test_the_containerfile_fits_the_pod() -> None:
    """The image runs as a numeric non-root user (runAsNonRoot), HOME on /tmp (the pod's emptyDir;
    the root filesystem is read-only), with aicr-pytest installed from the wheel."""
    lines = (REPO / "deploy" / "Containerfile").read_text().splitlines()
    user = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert user == ["65532:65532"]
    assert any(line.startswith("ENV HOME=/tmp") for line in lines)
    assert any("pip install" in line and "/wheels/*.whl" in line for line in lines)
    assert 'ENTRYPOINT ["aicr-pytest"]' in lines
    cj = objects()[("CronJob", "aicr-pytest")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (c,) = cj["containers"]
    assert {"name": "HOME", "value": "/tmp"} in c["env"]
    assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True and cj["securityContext"]["runAsNonRoot"]


#: the packages whose checks run in each phase
PHASE_PACKAGES = {
    "deployment": ("deployment", "health"),
    "conformance": ("conformance",),
    "performance": ("nccl", "cre", "inference"),
}
#: words that name a resource in code or templates besides its plural (a kind, a module)
ALSO = {"pods/exec": ("podexec",)}
#: (phase, resource) mentions that are not API use, each checked by hand
NOT_API_USE = {
    ("deployment", "secrets"): "expected-resources reads Secrets; the trimmed rule only grants create",
    ("conformance", "secrets"): "platform-health reads Secrets, the others use Python's secrets module",
    ("deployment", "trainingruntimes"): "gke-gpu-nic-networks' docstring names ClusterTrainingRuntime",
    ("deployment", "clustertrainingruntimes"): "the same docstring",
    ("performance", "clustertrainingruntimes"): "nccl/variant.py's docstring names it",
    ("performance", "leases"): "nccl/rerun.py's release_trainjob",
    ("performance", "gateways"): "the HTTPRoute template's parentRef names a Gateway; nothing reads one",
}


def _sources(phase: str) -> str:
    texts = []
    for package in PHASE_PACKAGES[phase]:
        texts += [p.read_text() for p in (REPO / "aicr_pytest" / package).rglob("*.py")]
    if phase == "performance":
        texts += [p.read_text() for p in (REPO / "runtimes").rglob("*.yaml")]
    return "\n".join(texts).lower()


@pytest.mark.parametrize("phase", sorted(PHASE_PACKAGES))
def test_a_trimmed_rule_is_named_by_no_family_of_a_phase_that_loses_it(phase: str) -> None:
    """A resource the schedule drops for ``phase`` is not mentioned in that phase's families (their
    code and templates), by plural or singular, so a check that starts to use it cannot be refused."""
    text = _sources(phase)
    named = []
    for (group, resource), phases in render.PHASE_ONLY.items():
        if phase in phases:
            continue
        plural = resource.split("/")[-1]
        words = (resource, *ALSO.get(resource, ())) if "/" in resource else (plural, plural.rstrip("s"))
        if any(w.lower() in text for w in words) and (phase, resource) not in NOT_API_USE:
            named.append(f"{group}/{resource}")
    assert named == []
