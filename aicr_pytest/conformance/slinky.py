"""``slinky-slurm-health`` and ``slinky-slurm-imex-channel``: the
Slurm cluster that Slinky runs answers from its login pod, has idle/mixed nodes, runs a job, and
gives two concurrent GPU jobs one distinct IMEX channel each. Not CNCF requirements.

Both share the guards, in order: ``slinky-slurm`` enabled in the recipe (else skip); the
``slinky.slurm.net/v1beta1`` API with ``loginsets`` and ``nodesets`` served (else skip); the
NodeSet/LoginSet objects owned by ``controllerRef.name=slinky-slurm`` and their pods (through each
set's ``status.selector``); NodeSet pods must exist, and when every one of them sits on a KWOK node
there is no Slurm to talk to (skip). The login pod is the newest Running+Ready LoginSet pod; the
commands run in it through ``pods/exec`` (:mod:`aicr_pytest.kube.podexec`): a non-zero exit is
data, not an error.

Deliberate difference from AICR: a failed API read (RBAC, transport) is ``other``, not a failure;
AICR's texts are kept.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_pytest.conformance.common import (
    failure,
    inconclusive,
    meta,
    spec,
    status,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.core.errors import CheckSkip
from aicr_pytest.kube.errors import ApiError, NotFound
from aicr_pytest.kube.podexec import ExecResult, exec_in_pod
from aicr_pytest.kube.transport import Target

__all__ = [
    "COMPONENT",
    "DEFAULT_NAMESPACE",
    "HEALTH_COMMANDS",
    "IMEX_CHANNEL_DIR",
    "IMEX_SCRIPT",
    "KWOK_ANNOTATION",
    "SKIP_API",
    "SKIP_KWOK",
    "SKIP_NOT_IN_RECIPE",
    "SKIP_SETS_API",
    "SlurmCommand",
    "command_failure",
    "exec_container",
    "imex_channels",
    "pick_login_pod",
    "run_slinky_slurm_health",
    "run_slinky_slurm_imex_channel",
]

COMPONENT = "slinky-slurm"
DEFAULT_NAMESPACE = "slurm"
GROUP_VERSION = "slinky.slurm.net/v1beta1"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SKIP_NOT_IN_RECIPE = "slinky-slurm component not present in recipe"
SKIP_API = "Slinky Slurm API not available"
SKIP_SETS_API = "Slinky Slurm LoginSet/NodeSet API not available"
SKIP_KWOK = "Slinky NodeSet pods are on KWOK nodes; skipping Slurm health validation"
COMPUTE_DOMAIN = "slinky-slurm-imex"
CLAIM_TEMPLATE = "slinky-slurm-imex-channels"
IMEX_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
#: seconds one command may take (the check's deadline cuts it shorter)
EXEC_TIMEOUT_S = 120.0

JSON = dict[str, Any]


@dataclass(frozen=True)
class SlurmCommand:
    label: str
    argv: tuple[str, ...]
    needs_stdout: bool


HEALTH_COMMANDS: tuple[SlurmCommand, ...] = (
    SlurmCommand("scontrol ping", ("scontrol", "ping"), True),
    SlurmCommand("sinfo idle/mix", ("/bin/sh", "-c", "sinfo -h -Ne -t idle,mix | grep -q ."), False),
    SlurmCommand("srun hostname", ("srun", "--immediate=5", "--time=0:03", "hostname"), True),
)

# Each job: exactly one IMEX channel device visible, printed on stdout; it then holds the allocation
# longer than the other job's --immediate window, so the two must run at the same time.
_INNER = (
    f'found=$(find {IMEX_CHANNEL_DIR} -maxdepth 1 -type c -name "channel*" 2>/dev/null | sort); '
    'count=$(printf "%s\\n" "$found" | grep -c .); '
    'echo "IMEX_CHANNEL_COUNT=$count" >&2; echo "IMEX_CHANNEL_CANDIDATES=$found" >&2; '
    '[ "$count" -eq 1 ] || exit 3; echo "IMEX_CHANNEL=$found"; sleep 40'
)
_SRUN = (
    "srun --immediate=30 --time=1:00 --nodes=1 --ntasks=1 --cpus-per-task=1 --mem=128M --gres=gpu:1 "
    f"/bin/sh -c {shlex.quote(_INNER)}"
)
IMEX_SCRIPT = (
    f"{_SRUN} & a=$!; {_SRUN} & b=$!; wait $a; ra=$?; wait $b; rb=$?; [ $ra -eq 0 ] && [ $rb -eq 0 ]"
)


# -- pure decisions ----------------------------------------------------------------------------------


def _ready(pod: Mapping[str, Any]) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in status(pod).get("conditions") or []
    )


def _pod_summary(pod: Mapping[str, Any]) -> str:
    deleting = " deleting" if meta(pod).get("deletionTimestamp") else ""
    return (
        f"  {meta(pod).get('name')}: phase={status(pod).get('phase') or 'Pending'} "
        f"ready={str(_ready(pod)).lower()}{deleting}"
    )


def pick_login_pod(pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The newest Running+Ready pod that is not being deleted (``None`` when there is none)."""
    usable = [
        p
        for p in pods
        if not meta(p).get("deletionTimestamp") and status(p).get("phase") == "Running" and _ready(p)
    ]
    usable.sort(key=lambda p: str(meta(p).get("creationTimestamp") or ""))
    return usable[-1] if usable else None


def exec_container(pod: Mapping[str, Any]) -> str:
    """The kubectl default-container annotation when it names a container, else ``login``, else the first."""
    names = [str(c.get("name")) for c in spec(pod).get("containers") or [] if isinstance(c, Mapping)]
    wanted = str((meta(pod).get("annotations") or {}).get("kubectl.kubernetes.io/default-container") or "")
    if wanted and wanted in names:
        return wanted
    if "login" in names:
        return "login"
    return names[0] if names else "login"


def command_failure(cmd: SlurmCommand, result: ExecResult) -> str | None:
    """Why one health command failed (``exec failed: …``, ``exit code N``, ``empty stdout``), or ``None``."""
    if result.exit_code is None:
        return f"exec failed: {result.error or 'no exit status'}"
    if result.exit_code != 0:
        return f"exit code {result.exit_code}"
    if cmd.needs_stdout and not result.stdout.strip():
        return "empty stdout"
    return None


def imex_channels(stdout: str) -> list[str]:
    """The two distinct channel paths the IMEX jobs printed; anything else is a failure."""
    prefix = f"{IMEX_CHANNEL_DIR}/channel"
    paths: list[str] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("IMEX_CHANNEL="):
            continue
        path = line.removeprefix("IMEX_CHANNEL=").strip()
        suffix = path.removeprefix(prefix)
        if not path.startswith(prefix) or not suffix or "/" in suffix:
            raise failure("INTERNAL", f'invalid IMEX channel path "{path}"')
        paths.append(path)
    if len(paths) != 2:
        raise failure("INTERNAL", f"expected two IMEX channels, got {len(paths)}")
    if paths[0] == paths[1]:
        raise failure("INTERNAL", f'concurrent Slurm jobs received the same IMEX channel "{paths[0]}"')
    return paths


# -- cluster reads ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlurmPods:
    namespace: str
    nodeset_pods: list[JSON]
    login_pods: list[JSON]


def _slurm_namespace(ctx: ConformanceContext) -> str:
    if not ctx.has_component(COMPONENT):
        raise CheckSkip(SKIP_NOT_IN_RECIPE)
    return ctx.component_namespace(COMPONENT, DEFAULT_NAMESPACE)


def _discover(ctx: ConformanceContext) -> None:
    path = f"/apis/{GROUP_VERSION}"
    try:
        body = ctx.cluster.request("GET", path, Target("get", "", path)).json() or {}
    except NotFound as exc:
        raise CheckSkip(SKIP_API) from exc
    except ApiError as exc:
        raise inconclusive("INTERNAL", "failed to discover Slinky Slurm API", exc) from exc
    served = {
        (str(r.get("name")), str(r.get("kind"))) for r in body.get("resources") or [] if isinstance(r, dict)
    }
    if ("loginsets", "LoginSet") not in served or ("nodesets", "NodeSet") not in served:
        raise CheckSkip(SKIP_SETS_API)


def _set_pods(ctx: ConformanceContext, namespace: str, plural: str, kind: str) -> list[JSON]:
    try:
        sets = list(ctx.cluster.list(GROUP_VERSION, plural, namespace))
    except NotFound as exc:
        raise failure(
            "NOT_FOUND", f"failed to list Slinky Slurm {kind}s in namespace {namespace}", exc
        ) from exc
    except ApiError as exc:
        raise inconclusive(
            "INTERNAL", f"failed to list Slinky Slurm {kind}s in namespace {namespace}", exc
        ) from exc
    owned = []
    for obj in sets:
        ref = spec(obj).get("controllerRef") or {}
        if ref.get("name") == COMPONENT and (ref.get("namespace") or namespace) == namespace:
            owned.append(obj)
    if not owned:
        raise failure("NOT_FOUND", f"no Slinky Slurm {kind} found for controllerRef.name={COMPONENT}")
    pods: dict[str, JSON] = {}
    for obj in owned:
        selector = str(status(obj).get("selector") or "").strip()
        if not selector:
            raise failure(
                "NOT_FOUND", f"Slinky Slurm {kind} {namespace}/{meta(obj).get('name')} has no status.selector"
            )
        try:
            for pod in ctx.cluster.list("v1", "pods", namespace, label_selector=selector):
                pods[str(meta(pod).get("name"))] = pod
        except ApiError as exc:
            raise inconclusive(
                "INTERNAL", f"failed to list pods of Slinky Slurm {kind} {meta(obj).get('name')}", exc
            ) from exc
    return [pods[k] for k in sorted(pods)]


def _all_on_kwok(ctx: ConformanceContext, pods: Sequence[Mapping[str, Any]]) -> bool:
    cache: dict[str, bool] = {}
    for pod in pods:
        node = str(spec(pod).get("nodeName") or "")
        if not node:
            return False
        if node not in cache:
            try:
                obj = ctx.cluster.get("v1", "Node", node)
            except ApiError as exc:
                raise inconclusive("INTERNAL", f"failed to get node {node}", exc) from exc
            cache[node] = KWOK_ANNOTATION in (meta(obj).get("annotations") or {})
        if not cache[node]:
            return False
    return True


def _guards(ctx: ConformanceContext) -> SlurmPods:
    namespace = _slurm_namespace(ctx)
    _discover(ctx)
    nodeset_pods = _set_pods(ctx, namespace, "nodesets", "NodeSet")
    if not nodeset_pods:
        raise failure("NOT_FOUND", f"{COMPONENT} selected but no NodeSet pods were found")
    if _all_on_kwok(ctx, nodeset_pods):
        raise CheckSkip(SKIP_KWOK)
    login_pods = _set_pods(ctx, namespace, "loginsets", "LoginSet")
    ctx.record(
        "Slinky Slurm pods",
        "\n".join(_pod_summary(p) for p in login_pods) or "(none)",
    )
    ctx.record(
        "Slinky Slurm NodeSet pods",
        "\n".join(_pod_summary(p) + f" node={spec(p).get('nodeName') or ''}" for p in nodeset_pods),
    )
    return SlurmPods(namespace, nodeset_pods, login_pods)


def _login_pod(ctx: ConformanceContext, pods: SlurmPods) -> tuple[str, str]:
    pod = pick_login_pod(pods.login_pods)
    if pod is None:
        summary = "\n".join(_pod_summary(p) for p in pods.login_pods) or "  (no pods)"
        raise failure(
            "NOT_FOUND",
            f"no ready login pod found for Slinky LoginSet selectors in {pods.namespace}:\n{summary}",
        )
    name, container = str(meta(pod).get("name")), exec_container(pod)
    ctx.record(
        "Selected Slinky Slurm login pod",
        f"{pods.namespace}/{name} (container {container}, "
        f"created {meta(pod).get('creationTimestamp') or ''})",
    )
    return name, container


def _exec(
    ctx: ConformanceContext, namespace: str, pod: str, container: str, argv: Sequence[str]
) -> ExecResult:
    timeout = max(1.0, ctx.bounded(EXEC_TIMEOUT_S))
    try:
        return exec_in_pod(ctx.cluster, namespace, pod, container, argv, timeout=timeout)
    except NotFound as exc:  # the pod went away: the command could not run (RBAC, transport: other)
        return ExecResult("", "", None, str(exc))


def _result_text(result: ExecResult) -> str:
    code = "none" if result.exit_code is None else str(result.exit_code)
    lines = [f"exit code: {code}"]
    if result.error:
        lines.append(f"error: {result.error}")
    lines.append("stdout:")
    lines.extend(result.stdout.rstrip().splitlines() or ["(empty)"])
    lines.append("stderr:")
    lines.extend(result.stderr.rstrip().splitlines() or ["(empty)"])
    return "\n".join(lines)


# -- the checks -------------------------------------------------------------------------------------


def run_slinky_slurm_health(ctx: ConformanceContext) -> None:
    """``slinky-slurm-health``: all three commands run; their failures are reported together."""
    pods = _guards(ctx)
    name, container = _login_pod(ctx, pods)
    problems: list[str] = []
    for cmd in HEALTH_COMMANDS:
        if ctx.remaining() <= 0:
            problems.append(f"{cmd.label}: exec failed: context deadline exceeded")
            continue
        result = _exec(ctx, pods.namespace, name, container, cmd.argv)
        ctx.record(f"Slinky Slurm {cmd.label} result", _result_text(result))
        why = command_failure(cmd, result)
        if why is not None:
            problems.append(f"{cmd.label}: {why}")
    if problems:
        raise failure("INTERNAL", "Slinky Slurm health commands failed:\n" + "\n".join(problems))


def _read_imex_object(
    ctx: ConformanceContext, api_version: str, plural: str, kind: str, namespace: str, name: str
) -> None:
    try:
        ctx.cluster.get(api_version, plural, name, namespace)
    except NotFound as exc:
        raise failure("NOT_FOUND", f"failed to get {kind} {namespace}/{name}", exc) from exc
    except ApiError as exc:
        raise inconclusive("INTERNAL", f"failed to get {kind} {namespace}/{name}", exc) from exc


def run_slinky_slurm_imex_channel(ctx: ConformanceContext) -> None:
    """``slinky-slurm-imex-channel``: two concurrent one-GPU jobs each see exactly one IMEX channel,
    and not the same one."""
    pods = _guards(ctx)
    _read_imex_object(
        ctx, "resource.nvidia.com/v1beta1", "computedomains", "ComputeDomain", pods.namespace, COMPUTE_DOMAIN
    )
    _read_imex_object(
        ctx,
        "resource.k8s.io/v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        pods.namespace,
        CLAIM_TEMPLATE,
    )
    name, container = _login_pod(ctx, pods)
    result = _exec(ctx, pods.namespace, name, container, ("/bin/sh", "-c", IMEX_SCRIPT))
    ctx.record("Slinky Slurm IMEX channel result", _result_text(result))
    if result.exit_code is None:
        raise failure(
            "INTERNAL", "failed to run concurrent Slinky Slurm IMEX jobs", result.error or "no exit status"
        )
    if result.exit_code != 0:
        raise failure("INTERNAL", f"concurrent Slinky Slurm IMEX jobs: exit code {result.exit_code}")
    first, second = imex_channels(result.stdout)
    ctx.record("Slinky Slurm IMEX channels", f"first={first}\nsecond={second}")
