"""``workload-sandboxing`` (CNCF SHOULD ``workload_sandboxing``, v1.37): a sandboxed runtime runs a
workload on a kernel of its own.

The requirement (cncf/k8s-ai-conformance ``docs/AIConformance-1.37.yaml``, security) asks for a
way to run untrusted workloads isolated from the node's kernel; the program's automated suite
verifies it as ``TestWorkloadSandboxing`` (kubernetes-sigs/ai-conformance ``test/``). Here:

1. the RuntimeClasses (``node.k8s.io/v1``) whose handler is a sandbox (:func:`sandbox_classes`:
   gVisor ``runsc``/``gvisor``, Kata ``kata*``); none: skipped, naming the handlers looked for;
2. a probe pod in a run-scoped test namespace (:class:`~aicr_pytest.conformance.testns.GpuTestNamespace`,
   deleted afterwards) runs the isolation probe (:data:`~aicr_pytest.conformance.sandbox_probe.PROBE_SCRIPT`)
   under the first such class (by name);
3. the suite's five subtests (:mod:`aicr_pytest.conformance.sandbox_probe`: ``SchedulingAndExecution``,
   ``ProcessIsolation``, ``KernelAndMemoryIsolation``, ``FilesystemIsolation``, ``NetworkIsolation``)
   are each reported as a ``RESULT: TestWorkloadSandboxing/<Subtest>: PASS|FAIL|OTHER - ...`` stdout
   line and in the ``Sandbox subtests`` record, all of them even when one fails. The kernel subtest
   (:func:`kernel_verdict`, pure) wants the pod's kernel to differ from its node's
   ``status.nodeInfo.kernelVersion`` -- the same kernel means the "sandbox" shares the node's
   (failed); no readable kernel on either side is ``other``. The check fails with the first failed
   subtest's line (the suite's order), else is ``other`` with the first undetermined one; a probe
   that did not succeed fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from aicr_pytest.conformance import sandbox_probe
from aicr_pytest.conformance.common import (
    JSON,
    CheckSkip,
    create_pod_when_sa_ready,
    failure,
    inconclusive,
    list_objects,
    meta,
    pod_log,
    prove_ran,
    read_object,
    spec,
    status,
    wait_pod_terminal,
)
from aicr_pytest.conformance.context import ConformanceContext
from aicr_pytest.conformance.failures import ConformanceFailure
from aicr_pytest.conformance.gpu_workload import BUSYBOX_IMAGE, container_exit_code, run_once_pod
from aicr_pytest.conformance.inventory import node_info
from aicr_pytest.conformance.testns import GpuTestNamespace, cleaned_up
from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.errors import ApiError

GVISOR_HANDLERS: Final = ("runsc", "gvisor")
KATA_PREFIX: Final = "kata"
HANDLERS_TEXT: Final = "runsc, gvisor (gVisor), kata* (Kata Containers)"
PROBE_PREFIX: Final = "sandbox-probe-"
PROBE_CONTAINER: Final = "probe"
PROBE_SCRIPT: Final = sandbox_probe.PROBE_SCRIPT
#: the label the simulator's and the harness's players know the probe by
COMPONENT_LABEL: Final = ("app.kubernetes.io/component", "sandbox-probe")
PROBE_TIMEOUT: Final = 180.0

SKIP_NO_SANDBOX: Final = "no sandboxed RuntimeClass (looked for handlers {handlers}; found: {found})"
MSG_LIST: Final = "failed to list RuntimeClasses"
MSG_SAME_KERNEL: Final = (
    "RuntimeClass {rc} (handler {handler}) ran the probe pod on its node's kernel {kernel} (node {node}): "
    "not sandboxed"
)
MSG_NO_POD_KERNEL: Final = "the probe pod under RuntimeClass {rc} printed no kernel release: {log}"
MSG_NO_NODE_KERNEL: Final = "node {node} reports no status.nodeInfo.kernelVersion"
MSG_PROBE_FAILED: Final = "the probe pod under RuntimeClass {rc} ended {phase} (exit code {code}): {log}"
MSG_UNBOUND: Final = "the probe pod under RuntimeClass {rc} ended without spec.nodeName"
MSG_CREATE: Final = "failed to create the sandbox probe pod"


def is_sandbox_handler(handler: str) -> bool:
    return handler in GVISOR_HANDLERS or handler.startswith(KATA_PREFIX)


def sandbox_classes(classes: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(name, handler)`` of the sandboxed RuntimeClasses, by name."""
    found = [(str(meta(c).get("name") or ""), str(c.get("handler") or "")) for c in classes]
    return sorted((n, h) for n, h in found if is_sandbox_handler(h))


def kernel_of(log: str) -> str:
    """The kernel release the probe printed (its ``kernel-release=`` line; ``""`` if none)."""
    return sandbox_probe.parse_probe(log).kernel


def kernel_subtest(
    rc: str, handler: str, node: str, pod_kernel: str, node_kernel: str
) -> sandbox_probe.Subtest:
    """:func:`kernel_verdict` as the ``KernelAndMemoryIsolation`` subtest."""
    try:
        line = kernel_verdict(rc, handler, node, pod_kernel, node_kernel)
    except ConformanceFailure as err:
        return sandbox_probe.Subtest(sandbox_probe.KERNEL, "failed", str(err))
    except Inconclusive as err:
        return sandbox_probe.Subtest(sandbox_probe.KERNEL, "other", str(err))
    return sandbox_probe.Subtest(sandbox_probe.KERNEL, "passed", line)


def subtest_outcome(results: Sequence[sandbox_probe.Subtest]) -> None:
    """Raise for the first failed subtest (suite order), else for the first undetermined one."""
    for wanted, make in (("failed", failure), ("other", inconclusive)):
        for sub in results:
            if sub.status == wanted:
                code, _, text = sub.line.partition("] ")
                if code.startswith("[") and text:
                    raise make(code[1:], text)
                raise make("CONFLICT" if wanted == "failed" else "INTERNAL", f"{sub.name}: {sub.line}")


def kernel_verdict(rc: str, handler: str, node: str, pod_kernel: str, node_kernel: str) -> str:
    """The verdict line on a finished probe; raises ``other`` when a kernel is unknown, a failure
    when the pod ran on the node's kernel."""
    if not node_kernel:
        raise inconclusive("NOT_FOUND", MSG_NO_NODE_KERNEL.format(node=node))
    if not pod_kernel:
        raise inconclusive("INTERNAL", MSG_NO_POD_KERNEL.format(rc=rc, log="(empty)"))
    if pod_kernel == node_kernel:
        raise failure(
            "CONFLICT", MSG_SAME_KERNEL.format(rc=rc, handler=handler, kernel=node_kernel, node=node)
        )
    return f"sandboxed: pod kernel {pod_kernel} differs from node {node}'s kernel {node_kernel}"


def build_probe(
    name: str, namespace: str, rc: str, labels: Mapping[str, str], tolerations: list[dict[str, str]]
) -> JSON:
    return run_once_pod(
        name,
        namespace,
        {**labels, COMPONENT_LABEL[0]: COMPONENT_LABEL[1]},
        {
            "runtimeClassName": rc,
            "tolerations": tolerations,
            "containers": [
                {"name": PROBE_CONTAINER, "image": BUSYBOX_IMAGE, "command": ["sh", "-c", PROBE_SCRIPT]}
            ],
        },
    )


def run_workload_sandboxing(ctx: ConformanceContext) -> None:
    classes = list_objects(
        ctx.cluster, "node.k8s.io/v1", "RuntimeClass", None, MSG_LIST, not_found_empty=True
    )
    listed = [f"{meta(c).get('name')}: handler {c.get('handler')}" for c in classes]
    ctx.record("RuntimeClasses", listed or ["(none)"], "kubectl get runtimeclasses")
    sandboxes = sandbox_classes(classes)
    if not sandboxes:
        found = ", ".join(str(c.get("handler")) for c in classes) or "none"
        raise CheckSkip(SKIP_NO_SANDBOX.format(handlers=HANDLERS_TEXT, found=found))
    rc, handler = sandboxes[0]
    _probe(ctx, rc, handler)


def _probe(ctx: ConformanceContext, rc: str, handler: str) -> None:
    with cleaned_up(GpuTestNamespace(ctx.run, ctx.clock), ctx.record) as ns:
        name = ctx.run.name(PROBE_PREFIX + ns.token)
        ns.create()
        ns.track("v1", "Pod", name)
        pod = build_probe(name, ns.name, rc, ns.labels(), ctx.inner_tolerations())
        try:
            create_pod_when_sa_ready(ctx.run, pod, ctx.clock)
        except ApiError as err:
            raise inconclusive("INTERNAL", MSG_CREATE, err) from err
        what = f"sandbox probe pod (RuntimeClass {rc})"
        done = wait_pod_terminal(ctx.cluster, ns.name, name, what, ctx.bounded(PROBE_TIMEOUT), ctx.clock)
        log = pod_log(ctx.cluster, ns.name, name, PROBE_CONTAINER)
        ctx.record("Sandbox probe pod log", log, f"kubectl logs {name} -n {ns.name}")
        _verdict(ctx, rc, handler, name, done, log)


def _verdict(ctx: ConformanceContext, rc: str, handler: str, name: str, done: JSON, log: str) -> None:
    """The finished probe's five subtests (``RESULT:`` lines and the ``Sandbox subtests`` record)."""
    phase, code = str(status(done).get("phase") or ""), container_exit_code(done, PROBE_CONTAINER)
    tail = " ".join(log.split())[-200:] or "(empty)"
    if phase != "Succeeded":
        line = MSG_PROBE_FAILED.format(rc=rc, phase=phase, code=code, log=tail)
        ctx.emit(sandbox_probe.Subtest(sandbox_probe.SCHEDULING, "failed", line).result_line())
        raise failure("INTERNAL", line)
    node = str(spec(done).get("nodeName") or "")
    if not node:
        raise inconclusive("INTERNAL", MSG_UNBOUND.format(rc=rc))
    prove_ran(ctx.run, done)  # a pass rests on what the probe printed: it must really have run
    node_obj = read_object(ctx.cluster, "v1", "Node", node, None, f"node {node}")
    out = sandbox_probe.parse_probe(log)
    node_kernel = node_info(node_obj, "kernelVersion")
    kernel = kernel_subtest(rc, handler, node, out.kernel, node_kernel)
    results = sandbox_probe.subtests(rc, out, tail, kernel)
    for sub in results:
        ctx.emit(sub.result_line())
    ctx.record(
        "Sandbox subtests",
        f"RuntimeClass: {rc} (handler {handler})\nProbe pod: {name}\nNode: {node}\n"
        f"Pod kernel: {out.kernel}\nNode kernel: {node_kernel}\n"
        + "\n".join(f"{sub.full_name}: {sub.status} - {sub.line}" for sub in results),
    )
    subtest_outcome(results)


__all__ = [
    "COMPONENT_LABEL",
    "HANDLERS_TEXT",
    "MSG_NO_NODE_KERNEL",
    "MSG_NO_POD_KERNEL",
    "MSG_PROBE_FAILED",
    "MSG_SAME_KERNEL",
    "SKIP_NO_SANDBOX",
    "build_probe",
    "kernel_of",
    "kernel_subtest",
    "kernel_verdict",
    "run_workload_sandboxing",
    "sandbox_classes",
    "subtest_outcome",
]
