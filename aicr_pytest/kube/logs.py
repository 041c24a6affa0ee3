"""Pod logs, always by container name.

AICR read "the first container" in places, which silently reads a sidecar's log when one is
injected (service meshes, log shippers). Here the container is always named; the only shortcut is
a pod with exactly one container, whose name is read from its spec.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aicr_pytest.core.errors import Inconclusive
from aicr_pytest.kube.client import Cluster, Target

JSON = dict[str, Any]

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


def _pod_log_path(namespace: str, pod: str) -> str:
    from urllib.parse import quote

    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/log"


def resolve_container(cluster: Cluster, namespace: str, pod: str, container: str | None) -> str:
    """``container`` itself, or the only container of a single-container pod.

    Raises :class:`Inconclusive` for a multi-container pod without a name: guessing "container 0"
    reads the wrong log when a sidecar is injected first.
    """
    if container:
        return container
    spec = cluster.get("v1", "Pod", pod, namespace).get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    if len(names) == 1:
        return names[0]
    raise Inconclusive(f"pod {namespace}/{pod} has containers {names}: name the one whose log to read")


def _log_query(
    container: str,
    tail_lines: int | None,
    limit_bytes: int | None,
    previous: bool,
    follow: bool,
) -> list[tuple[str, str | int | bool]]:
    query: list[tuple[str, str | int | bool]] = [("container", container)]
    if tail_lines is not None:
        query.append(("tailLines", int(tail_lines)))
    if limit_bytes is not None:
        query.append(("limitBytes", int(limit_bytes)))
    if previous:
        query.append(("previous", True))
    if follow:
        query.append(("follow", True))
    return query


def read_log(
    cluster: Cluster,
    namespace: str,
    pod: str,
    container: str | None,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
    previous: bool = False,
) -> str:
    """The container's log (optionally only the last ``tail_lines`` / first ``limit_bytes``)."""
    name = resolve_container(cluster, namespace, pod, container)
    target = Target("get", "", "pods/log", namespace, pod)
    resp = cluster.request(
        "GET",
        _pod_log_path(namespace, pod),
        target,
        query=_log_query(name, tail_lines, limit_bytes, previous, follow=False),
    )
    return resp.data.decode("utf-8", "replace")


def follow_log(
    cluster: Cluster,
    namespace: str,
    pod: str,
    container: str | None,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
) -> Iterator[str]:
    """Yield log lines (without newlines) as the container writes them, until it exits."""
    name = resolve_container(cluster, namespace, pod, container)
    target = Target("get", "", "pods/log", namespace, pod)
    stream = cluster.stream(
        _pod_log_path(namespace, pod),
        target,
        query=_log_query(name, tail_lines, limit_bytes, previous=False, follow=True),
        timeout=(cluster.request_timeout[0], 3600.0),
    )
    with stream:
        for line in stream.lines():
            yield line.decode("utf-8", "replace").rstrip("\r")


def job_pods(cluster: Cluster, namespace: str, job_name: str) -> list[JSON]:
    """The Job's pods, newest first (by ``creationTimestamp``, then name)."""
    pods: list[JSON] = []
    for label in JOB_NAME_LABELS:
        pods = list(cluster.list("v1", "pods", namespace, label_selector=f"{label}={job_name}"))
        if pods:
            break

    def created(pod: JSON) -> tuple[str, str]:
        meta = pod.get("metadata") or {}
        return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")

    return sorted(pods, key=created, reverse=True)


def job_newest_pod_log(
    cluster: Cluster,
    namespace: str,
    job_name: str,
    container: str | None,
    tail_lines: int | None = None,
    limit_bytes: int | None = None,
) -> str:
    """The log of the Job's newest pod (label ``batch.kubernetes.io/job-name``, else ``job-name``)."""
    pods = job_pods(cluster, namespace, job_name)
    if not pods:
        raise Inconclusive(f"job {namespace}/{job_name} has no pods to read a log from")
    newest = str(pods[0]["metadata"]["name"])
    return read_log(cluster, namespace, newest, container, tail_lines, limit_bytes)


__all__ = ["JOB_NAME_LABELS", "follow_log", "job_newest_pod_log", "job_pods", "read_log", "resolve_container"]
