"""Run scope: names, labels and cleanup for every object one validation run creates.

A :class:`RunScope` belongs to one pytest process (one xdist worker). Every object created
through it gets

* the labels ``app.kubernetes.io/managed-by: aicr-pytest`` and ``aicr.run/run-id: <run id>``
  (also on pod templates, so the pods a Job or Deployment creates carry them too and
  ``kubectl logs -l aicr.run/run-id=<id>`` finds them),
* a name derived from the run id plus the xdist worker id (``nccl-a1b2c3d4-gw1``), so two
  concurrent runs, or two workers of one run, never collide,
* an entry in the cleanup registry, in creation order.

The shared namespace (``aicr-validation`` by default) outlives any one run while others use it: a
run that creates or joins it adds a lease annotation (``aicr.run/lease-<run id>[-<worker>]``) with
an optimistic-concurrency patch, and its cleanup removes the lease the same way; the run that
removes the last lease deletes the namespace, with a ``resourceVersion`` precondition so a run that
joined in the meantime keeps it.  A namespace aicr-pytest did not create is never deleted.

:meth:`RunScope.cleanup` deletes the registry in reverse order (foreground propagation), waits
until the objects are gone within a bound, and reports problems as warnings in a
:class:`CleanupReport` instead of raising: a cleanup failure never hides a check's verdict.

Wiring (the plugin's ``aicr_run`` fixture)::

    with install_signal_handlers():          # SIGTERM unwinds like Ctrl-C, so finally: runs
        scope = RunScope(lambda: cluster, run_id, worker_id=..., no_cleanup=opt.no_cleanup)
        try:
            yield scope
        finally:
            report = scope.cleanup()         # never raises; warnings + kubectl hints inside
"""

from __future__ import annotations

import copy
import hashlib
import re
import secrets
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aicr_pytest.core.clock import SYSTEM_CLOCK, Clock
from aicr_pytest.core.defaults import DEFAULT_NAMESPACE as SETTINGS_DEFAULT_NAMESPACE
from aicr_pytest.kube.client import MANAGED_BY_LABEL, MANAGED_BY_VALUE, RUN_ID_LABEL, Cluster
from aicr_pytest.kube.errors import AccessDenied, Conflict, NotFound, WaitTimeout
from aicr_pytest.kube.proof import ExecutionProof, NodeVerdicts, prove_pod
from aicr_pytest.kube.resources import ResourceType
from aicr_pytest.kube.signals import (
    CLEANUP_INSIST,
    HELD_SIGNALS,
    MSG_CLEANUP_HOLDING,
    CleanupAbandoned,
    Terminated,
    defer_signals,
    install_signal_handlers,
)
from aicr_pytest.kube.wait import wait_deleted

JSON = dict[str, Any]

#: The namespace AICR's validator uses (``--namespace`` default); shared by runs, never deleted if it
#: pre-existed.
DEFAULT_NAMESPACE = SETTINGS_DEFAULT_NAMESPACE
#: Pod-template-bearing kinds whose template also gets the run labels.
_TEMPLATE_KINDS = frozenset({"Job", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"})
_DNS_LABEL_MAX = 63
_INVALID = re.compile(r"[^a-z0-9-]+")

#: the annotation prefix of a run's lease on the shared namespace
LEASE_PREFIX = "aicr.run/lease-"
#: optimistic-concurrency rounds before a lease change gives up (each lost round means another run
#: changed the namespace in between)
_LEASE_ROUNDS = 8
MSG_SHARED_IN_USE = (
    "namespace {name} is still in use by another run or worker (objects without a lease); left in place"
)
MSG_CLEANUP_KEPT = "cleanup disabled (--no-cleanup): {count} object(s) of run {run_id} kept for debugging"
MSG_CLEANUP_FAILED = "cleanup of {what} failed; it may be orphaned: {error}"
MSG_CLEANUP_ABANDONED = "cleanup abandoned on request; {count} object(s) of run {run_id} may be left: {what}"
MSG_CLEANUP_LEFT = "to find and delete what run {run_id} left behind:"


def add_image_pull_secrets(obj: Any, secrets: Sequence[str]) -> int:
    """Add ``imagePullSecrets`` entries for ``secrets`` to every pod spec inside ``obj`` (in place).

    A pod spec is any mapping with a ``containers`` list: a Pod's ``spec``, a Job's or Deployment's
    ``spec.template.spec``, a CronJob's job template, and the pod templates nested in custom
    resources (TrainingRuntime, JobSet, ...); a Dynamo ``extraPodSpec`` (a ``mainContainer``
    mapping) counts too.  Names already listed are not repeated.  Returns the number of pod specs
    touched.
    """
    if not secrets:
        return 0
    touched = 0
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list) or isinstance(obj.get("mainContainer"), dict):
            current = [e for e in obj.get("imagePullSecrets") or [] if isinstance(e, dict)]
            names = {str(e.get("name")) for e in current}
            obj["imagePullSecrets"] = current + [{"name": n} for n in secrets if n not in names]
            touched += 1
        for value in obj.values():
            touched += add_image_pull_secrets(value, secrets)
    elif isinstance(obj, list):
        for value in obj:
            touched += add_image_pull_secrets(value, secrets)
    return touched


def new_run_id() -> str:
    """8 random hex characters: short enough for names, 2^32 values apart across runs."""
    return secrets.token_hex(4)


def dns_label(text: str) -> str:
    """Lowercase ``text`` into DNS-1123 label characters (no length limit applied)."""
    out = _INVALID.sub("-", text.lower()).strip("-")
    return re.sub(r"-{2,}", "-", out)


def scoped_name(base: str, run_id: str, worker_id: str | None = None, limit: int = _DNS_LABEL_MAX) -> str:
    """``{base}-{run_id}[-{worker}]`` as a DNS-1123 label of at most ``limit`` characters.

    The run/worker suffix is never cut; an over-long base is shortened and given a 6-hex digest of
    the full base, so two long bases that share a prefix still get different names.
    """
    suffix = "-" + dns_label(run_id)
    worker = dns_label(worker_id or "")
    if worker and worker != "master":
        suffix += "-" + worker
    stem = dns_label(base) or "obj"
    if len(stem) + len(suffix) <= limit:
        return stem + suffix
    digest = hashlib.sha1(base.encode()).hexdigest()[:6]
    keep = limit - len(suffix) - len(digest) - 1
    if keep < 1:
        raise ValueError(f"run id/worker suffix {suffix!r} leaves no room for a name within {limit}")
    return f"{stem[:keep].rstrip('-')}-{digest}{suffix}"


@dataclass(frozen=True)
class Registered:
    """One object the run created."""

    rtype: ResourceType
    name: str
    namespace: str | None

    def describe(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.rtype.kind} {self.name}{where}"

    def kubectl_resource(self) -> str:
        if not self.rtype.group:
            return self.rtype.plural
        return f"{self.rtype.plural}.{self.rtype.group}"


@dataclass
class CleanupReport:
    """What cleanup did. ``warnings`` go to the terminal and CTRF ``extra``; nothing is raised."""

    run_id: str
    deleted: list[str] = field(default_factory=list)
    already_gone: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.warnings

    def lines(self) -> list[str]:
        """Human-readable lines for the terminal summary."""
        out: list[str] = []
        if self.kept:
            out.append(MSG_CLEANUP_KEPT.format(count=len(self.kept), run_id=self.run_id))
            out.extend(f"  {cmd}" for cmd in self.commands)
        out.extend(f"WARNING: {w}" for w in self.warnings)
        if self.warnings and self.commands and not self.kept:
            out.append(MSG_CLEANUP_LEFT.format(run_id=self.run_id))
            out.extend(f"  {cmd}" for cmd in self.commands)
        return out

    def as_extra(self) -> JSON:
        """A JSON-able dict for CTRF ``extra``."""
        return {
            "runId": self.run_id,
            "deleted": len(self.deleted),
            "kept": list(self.kept),
            "warnings": list(self.warnings),
            "commands": list(self.commands),
        }


class RunScope:
    """Run-scoped object creation and cleanup (see the module docstring for the wiring)."""

    def __init__(
        self,
        cluster_factory: Callable[[], Cluster],
        run_id: str,
        worker_id: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        no_cleanup: bool = False,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        cleanup_timeout: float = 120.0,
        image_pull_secrets: Sequence[str] = (),
        allow_fake_nodes: bool = False,
    ) -> None:
        if not dns_label(run_id) or dns_label(run_id) != run_id:
            raise ValueError(f"run id must be a DNS-1123 label fragment, got {run_id!r}")
        self._cluster_factory = cluster_factory
        self._cluster: Cluster | None = None
        self.run_id = run_id
        self.worker_id = worker_id if worker_id and worker_id != "master" else None
        self.clock = clock
        self.no_cleanup = no_cleanup
        self.namespace = namespace
        self.cleanup_timeout = cleanup_timeout
        #: ``--image-pull-secret``: added to every pod spec of every object created through the scope
        self.image_pull_secrets = tuple(image_pull_secrets)
        #: ``--allow-fake-nodes``: a pod on a node KWOK fakes may still prove it ran (:meth:`prove`)
        self.allow_fake_nodes = allow_fake_nodes
        self._registry: list[Registered] = []
        self._lock = threading.Lock()
        self._kinds_used: set[ResourceType] = set()
        self._report: CleanupReport | None = None
        #: shared namespaces this scope holds a lease on (released by cleanup)
        self._leased: set[str] = set()
        #: each node's reading for proof of execution (its Node, the GPU simulator behind it)
        self._node_verdicts: NodeVerdicts = {}

    def prove(
        self,
        pod: Mapping[str, Any],
        containers: Sequence[str] | None = None,
        *,
        exit_zero: bool = True,
        node_only: bool = False,
    ) -> ExecutionProof:
        """Proof that ``pod`` (as last read) really ran, or
        :class:`~aicr_pytest.kube.proof.NoProofOfExecution` (CTRF ``other``): every check that passes
        on what a pod printed calls this first (:func:`~aicr_pytest.kube.proof.prove_pod`)."""
        return prove_pod(
            self.cluster,
            pod,
            containers=containers,
            allow_fake_nodes=self.allow_fake_nodes,
            exit_zero=exit_zero,
            cache=self._node_verdicts,
            node_only=node_only,
        )

    # -- identity --------------------------------------------------------------------------------
    @property
    def cluster(self) -> Cluster:
        """The cluster, connected on first use (a run that never touches it never connects)."""
        if self._cluster is None:
            self._cluster = self._cluster_factory()
        return self._cluster

    def name(self, base: str) -> str:
        """A run-unique DNS-1123 name: ``{base}-{run_id}[-{worker}]``, at most 63 characters."""
        return scoped_name(base, self.run_id, self.worker_id)

    @property
    def _suffix(self) -> str:
        return scoped_name("x", self.run_id, self.worker_id)[1:]

    def _is_scoped(self, name: str) -> bool:
        return name.endswith(self._suffix)

    def owns_name(self, name: str) -> bool:
        """Whether ``name`` was derived by this scope (or by a controller from such a name)."""
        return re.search(re.escape(self._suffix) + r"(-|$)", name) is not None

    def labels(self) -> dict[str, str]:
        return {MANAGED_BY_LABEL: MANAGED_BY_VALUE, RUN_ID_LABEL: self.run_id}

    @property
    def selector(self) -> str:
        """Label selector matching every object of this run."""
        return f"{RUN_ID_LABEL}={self.run_id}"

    @property
    def registered(self) -> list[Registered]:
        with self._lock:
            return list(self._registry)

    # -- creation ----------------------------------------------------------------------------------
    def stamp(self, obj: Mapping[str, Any]) -> JSON:
        """A copy of ``obj`` with run labels (also on pod templates) and a run-scoped name.

        ``metadata.name`` is scoped with :meth:`name` unless it already is; ``generateName`` is left
        to the server. Namespaced objects without a namespace go to the run's namespace.
        """
        out: JSON = copy.deepcopy(dict(obj))
        meta = out.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), **self.labels()}
        name = meta.get("name")
        if name and not self._is_scoped(str(name)):
            meta["name"] = self.name(str(name))
        elif not name and not meta.get("generateName"):
            raise ValueError(f"{out.get('kind')} needs metadata.name or metadata.generateName")
        if out.get("kind") in _TEMPLATE_KINDS:
            template = (out.get("spec") or {}).get("template")
            if isinstance(template, dict):
                tmeta = template.setdefault("metadata", {})
                tmeta["labels"] = {**(tmeta.get("labels") or {}), **self.labels()}
        if self.image_pull_secrets:
            add_image_pull_secrets(out, self.image_pull_secrets)
        return out

    def _register(self, rtype: ResourceType, name: str, namespace: str | None) -> None:
        with self._lock:
            self._registry.append(Registered(rtype, name, namespace))
            self._kinds_used.add(rtype)

    def create(self, obj: Mapping[str, Any]) -> JSON:
        """Stamp, create and register ``obj``; returns the created object."""
        stamped = self.stamp(obj)
        rt = self.cluster.resolve(str(stamped.get("apiVersion")), str(stamped.get("kind")))
        meta = stamped["metadata"]
        if rt.namespaced and not meta.get("namespace"):
            meta["namespace"] = self.namespace
        created = self.cluster.create(stamped)
        cmeta = created.get("metadata") or {}
        self._register(
            rt, str(cmeta.get("name") or meta.get("name")), cmeta.get("namespace") or meta.get("namespace")
        )
        return created

    #: Alias used by checks: ``run.apply(rendered_manifest)``.
    apply = create

    def adopt(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Register an object this run owns but did not create through :meth:`create` (a retried
        create that found its own object, a namespace whose ownership label was verified), so
        :meth:`cleanup` and :meth:`kubectl_commands` cover it."""
        rt = self.cluster.resolve(api_version, kind)
        self._register(rt, name, namespace if rt.namespaced else None)

    @property
    def lease_key(self) -> str:
        """This scope's lease annotation on a shared namespace."""
        return LEASE_PREFIX + self._suffix.lstrip("-")

    def ensure_namespace(self, name: str | None = None) -> str:
        """Make sure the shared namespace exists (default ``aicr-validation``) and hold a lease on it.

        A namespace aicr-pytest did not create (no ``managed-by`` label) is used as it is and never
        deleted.  One aicr-pytest created, this run or another, gets this scope's lease; cleanup
        removes it, and the last lease's owner deletes the namespace.  A namespace being deleted is
        waited out and created anew.  Without the right to patch namespaces (the snapshot agent's
        RBAC) the namespace is used without a lease, as a namespace of the user's.
        """
        ns = name or self.namespace
        cluster = self.cluster
        rtype = cluster.resolve("v1", "Namespace")
        for _ in range(_LEASE_ROUNDS):
            current = cluster.get_or_none("v1", "Namespace", ns)
            if current is None:
                body: JSON = {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": ns,
                        "labels": self.labels(),
                        "annotations": {self.lease_key: "held"},
                    },
                }
                try:
                    cluster.create(body)
                except Conflict:  # another worker or run created it first: join it
                    continue
                self._hold(rtype, ns)
                return ns
            meta = current.get("metadata") or {}
            if (meta.get("labels") or {}).get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
                return ns
            if meta.get("deletionTimestamp"):  # the last run out is deleting it: wait, then create
                wait_deleted(
                    cluster, "v1", "Namespace", ns, None, timeout=self.cleanup_timeout, clock=self.clock
                )
                continue
            if self.lease_key in (meta.get("annotations") or {}):
                self._hold(rtype, ns)
                return ns
            patch = {
                "metadata": {
                    "resourceVersion": meta.get("resourceVersion"),
                    "annotations": {self.lease_key: "held"},
                }
            }
            try:
                cluster.patch("v1", "Namespace", ns, patch)
            except Conflict:
                continue
            except AccessDenied:
                return ns
            self._hold(rtype, ns)
            return ns
        raise Conflict(f"namespace {ns} kept changing while this run tried to join it; try again")

    def _hold(self, rtype: ResourceType, ns: str) -> None:
        with self._lock:
            if ns in self._leased:
                return
            self._leased.add(ns)
        self._register(rtype, ns, None)

    def create_namespace_for_run(self, prefix: str) -> str:
        """Create a per-run namespace ``{prefix}-{run_id}[-{worker}]`` (deleted by cleanup)."""
        created = self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix}})
        return str(created["metadata"]["name"])

    # -- inspection ----------------------------------------------------------------------------------
    def leftovers(self) -> list[str]:
        """Every object still present that carries this run's id (kinds created + their pods)."""
        cluster = self.cluster
        with self._lock:
            kinds = {(rt.api_version, rt.plural) for rt in self._kinds_used}
        kinds.add(("v1", "pods"))
        found: list[str] = []
        for api_version, plural in sorted(kinds):
            try:
                for obj in cluster.list(api_version, plural, None, label_selector=self.selector):
                    meta = obj.get("metadata") or {}
                    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
                    found.append(f"{obj.get('kind', plural)} {where}{meta.get('name')}")
            except NotFound:
                continue
        return sorted(found)

    def kubectl_commands(self) -> list[str]:
        """``kubectl`` commands to inspect and to delete what this run created."""
        sel = shlex.quote(self.selector)
        namespaced: dict[str, list[str]] = {}
        cluster_scoped: list[str] = []
        for reg in self.registered:
            res = reg.kubectl_resource()
            if reg.namespace:
                bucket = namespaced.setdefault(reg.namespace, [])
                if res not in bucket:
                    bucket.append(res)
            elif res not in cluster_scoped:
                cluster_scoped.append(res)
        cmds: list[str] = []
        for ns, kinds in namespaced.items():
            inspect = ",".join(["pods", *[k for k in kinds if k != "pods"]])
            cmds.append(f"kubectl -n {shlex.quote(ns)} get {inspect} -l {sel}")
            cmds.append(f"kubectl -n {shlex.quote(ns)} logs -l {sel} --all-containers --prefix")
        if cluster_scoped:
            cmds.append(f"kubectl get {','.join(cluster_scoped)} -l {sel}")
        for ns, kinds in namespaced.items():
            cmds.append(
                f"kubectl -n {shlex.quote(ns)} delete {','.join(kinds)} -l {sel} --cascade=foreground"
            )
        if cluster_scoped:
            cmds.append(f"kubectl delete {','.join(cluster_scoped)} -l {sel} --cascade=foreground")
        return cmds

    # -- cleanup ---------------------------------------------------------------------------------------
    def _shared_namespace_in_use(self, reg: Registered) -> bool:
        """Whether objects from another run/worker are in a shared namespace we created.

        Looks at pods, Jobs, ConfigMaps and every namespaced kind this run created itself (another
        aicr-pytest run creates the same kinds, e.g. TrainingRuntimes before its TrainJob).
        """
        kinds = {("v1", "pods"), ("batch/v1", "jobs"), ("v1", "configmaps")}
        kinds |= {(rt.api_version, rt.plural) for rt in self._kinds_used if rt.namespaced}
        for api_version, plural in sorted(kinds):
            for obj in self.cluster.list(
                api_version, plural, reg.name, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
            ):
                meta = obj.get("metadata") or {}
                labels = meta.get("labels") or {}
                if labels.get(RUN_ID_LABEL) != self.run_id or not self.owns_name(str(meta.get("name", ""))):
                    return True
        return False

    def _release(self, reg: Registered, report: CleanupReport) -> JSON | bool | None:
        """Drop this scope's lease on a shared namespace; delete it when no other lease is left.

        Returns what ``delete`` returned (``None``: already gone), or ``False`` when the namespace
        stays because another run or worker still holds it.
        """
        cluster = self.cluster
        key = self.lease_key
        for _ in range(_LEASE_ROUNDS):
            current = cluster.get_or_none("v1", "Namespace", reg.name)
            if current is None:
                return None
            meta = current.get("metadata") or {}
            annotations = meta.get("annotations") or {}
            if key in annotations:
                patch = {
                    "metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": {key: None}}
                }
                try:
                    current = cluster.patch("v1", "Namespace", reg.name, patch)
                except Conflict:
                    continue
                meta = current.get("metadata") or {}
                annotations = meta.get("annotations") or {}
            if any(k.startswith(LEASE_PREFIX) for k in annotations):
                return False  # another run or worker holds it: the last one out deletes it
            if self._shared_namespace_in_use(reg):
                report.warnings.append(MSG_SHARED_IN_USE.format(name=reg.name))
                return False
            try:
                return cluster.delete(
                    "v1",
                    "Namespace",
                    reg.name,
                    missing_ok=True,
                    preconditions={"resourceVersion": str(meta.get("resourceVersion"))},
                )
            except Conflict:  # changed since we looked (a run joined): look again
                continue
        report.warnings.append(
            f"namespace {reg.name}: its leases kept changing during cleanup; left in place"
        )
        return False

    def cleanup(self) -> CleanupReport:
        """Delete everything registered, newest first, and wait until it is gone. Never raises.

        With ``no_cleanup`` nothing is deleted; the report lists what was kept and the ``kubectl``
        commands to inspect and delete it. Calling it twice returns the first report.

        The one exception it lets out: a SIGINT/SIGTERM that arrived *during* cleanup is held until
        cleanup has finished and then re-raised (``KeyboardInterrupt`` / :class:`Terminated`), so
        the user's interrupt is honoured without leaving objects behind.
        """
        if self._report is not None:
            return self._report
        report = CleanupReport(self.run_id)
        self._report = report
        entries = self.registered
        if not entries:
            return report
        if self.no_cleanup:
            report.kept = [r.describe() for r in entries]
            report.commands = self.kubectl_commands()
            return report
        with defer_signals():
            try:
                self._delete_all(entries, report)
            except CleanupAbandoned:
                left = [
                    r.describe()
                    for r in entries
                    if r.describe() not in {*report.deleted, *report.already_gone}
                ]
                report.warnings.append(
                    MSG_CLEANUP_ABANDONED.format(count=len(left), run_id=self.run_id, what="; ".join(left))
                )
                report.commands = self.kubectl_commands()
                raise
        return report

    def _delete_all(self, entries: list[Registered], report: CleanupReport) -> None:
        cluster = self.cluster
        # Per-run namespaces go with their contents; the shared one may outlive this run.
        run_namespaces = {
            r.name
            for r in entries
            if r.rtype.kind == "Namespace" and r.rtype.group == "" and r.name != self.namespace
        }
        pending: list[Registered] = []
        for reg in reversed(entries):
            if reg.namespace in run_namespaces:
                # Deleting the namespace removes it; one request instead of many.
                continue
            try:
                if reg.rtype.kind == "Namespace" and reg.rtype.group == "" and reg.name in self._leased:
                    gone = self._release(reg, report)
                    if gone is False:
                        continue
                else:
                    gone = cluster.delete(
                        reg.rtype.api_version, reg.rtype.kind, reg.name, reg.namespace, missing_ok=True
                    )
            except Exception as exc:  # report, never raise over a verdict
                report.warnings.append(MSG_CLEANUP_FAILED.format(what=reg.describe(), error=exc))
                continue
            if gone is None:
                report.already_gone.append(reg.describe())
            else:
                pending.append(reg)
        end = self.clock.time() + self.cleanup_timeout
        for reg in pending:
            remaining = max(0.0, end - self.clock.time())
            try:
                wait_deleted(
                    cluster,
                    reg.rtype.api_version,
                    reg.rtype.kind,
                    reg.name,
                    reg.namespace,
                    timeout=max(remaining, 1.0),
                    clock=self.clock,
                )
            except WaitTimeout as exc:
                report.warnings.append(MSG_CLEANUP_FAILED.format(what=reg.describe(), error=exc))
                continue
            except Exception as exc:
                report.warnings.append(MSG_CLEANUP_FAILED.format(what=reg.describe(), error=exc))
                continue
            report.deleted.append(reg.describe())
        if report.warnings:
            report.commands = self.kubectl_commands()

    # -- context manager -----------------------------------------------------------------------------
    def __enter__(self) -> RunScope:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


__all__ = [
    "CLEANUP_INSIST",
    "DEFAULT_NAMESPACE",
    "HELD_SIGNALS",
    "LEASE_PREFIX",
    "MSG_CLEANUP_ABANDONED",
    "MSG_CLEANUP_FAILED",
    "MSG_CLEANUP_HOLDING",
    "MSG_CLEANUP_KEPT",
    "CleanupAbandoned",
    "CleanupReport",
    "Registered",
    "RunScope",
    "Terminated",
    "add_image_pull_secrets",
    "defer_signals",
    "dns_label",
    "install_signal_handlers",
    "new_run_id",
    "scoped_name",
]
