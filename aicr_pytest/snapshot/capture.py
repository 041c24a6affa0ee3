"""``aicr-pytest validate`` without ``--snapshot``: capture one first (AICR's validate step 12).

Order as in AICR: the recipe is loaded first (a bad recipe is exit 2 before anything is deployed),
``--no-cluster`` without ``--snapshot`` stays the guide's usage error (the caller does not call this
then), and only then the agent runs. The capture is :func:`~aicr_pytest.snapshot.cluster.capture_live`
with validate's own options: its kubeconfig and context, its ``--node-selector``/``--toleration``
(AICR forwards them to the agent too), ``--nvidia-smi-image`` (its resolved value) as the agent image,
``--no-cleanup``, ``--namespace`` (default ``aicr-validation``), ``--image-pull-secret`` (the last
four as the run's :class:`~aicr_pytest.core.settings.Placement`),
``--require-gpu``, ``--timeout`` (default 5 minutes) and ``--job-name`` as the Job's name prefix;
privileged (AICR's defaults). Plain ``pytest --recipe`` never captures: it needs ``--snapshot``.
The ``--aks-gpu-pools``/``--gke-gpu-pools``/``--oke-addons`` readings (read before any cluster work,
:mod:`aicr_pytest.snapshot.providers`) are added to the captured ``K8s`` measurement.

The captured snapshot is saved as YAML in the system temporary directory
(``aicr-pytest-snapshot-<run id>.yaml``) and kept, so the run can be repeated against the same state
with ``--snapshot``; the terminal says where. That file is what the readiness pre-flight evaluates.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core.recipe import is_overlay, parse_recipe
from aicr_pytest.core.settings import Placement
from aicr_pytest.core.sources import load_yaml_document
from aicr_pytest.kube.errors import ApiError
from aicr_pytest.kube.reach import DEFAULT_REACH_TIMEOUT_S
from aicr_pytest.snapshot.agent import JOB_BASE
from aicr_pytest.snapshot.cluster import DEFAULT_TIMEOUT_S, CaptureError, CaptureOptions, capture_live
from aicr_pytest.snapshot.output import dumps
from aicr_pytest.snapshot.providers import attach

Emit = Callable[[str], None]

MSG_FAILED: Final = "failed to capture snapshot: {err}"
LINE_CAPTURED: Final = (
    "snapshot: none given, so one was captured from node {node} and saved to {path} "
    "(readiness evaluates it; pass it with --snapshot to reuse it)"
)


def capture_for_validate(
    *,
    recipe: str,
    kubeconfig: str | None,
    kube_context: str | None,
    placement: Placement,
    image: str,
    no_cleanup: bool,
    emit: Emit,
    directory: str | Path | None = None,
    require_gpu: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
    job_name: str | None = None,
    provider_subtypes: Sequence[dict[str, Any]] = (),
    reach_timeout: float = DEFAULT_REACH_TIMEOUT_S,
) -> tuple[str | None, int]:
    """Capture the snapshot validate evaluates: ``(path, 0)``, or ``(None, exit code)`` after one
    ``aicr-pytest: error: failed to capture snapshot: ...`` line (5: the agent timed out; 8: it
    failed). Bad input raises :class:`UsageError` (exit 2) before the cluster is touched (the
    placement's flags are parsed by :func:`~aicr_pytest.core.settings.build_placement`).
    ``provider_subtypes``: the ``K8s`` subtypes the provider flags projected
    (:mod:`~aicr_pytest.snapshot.providers`), added to the captured snapshot."""
    from aicr_pytest.kube import connect

    cluster = None
    if recipe.strip().startswith("cm://"):
        cluster = connect(kubeconfig, kube_context, reach_timeout=reach_timeout)
    reader = cluster.read_configmap if cluster is not None else None
    raw = load_yaml_document(recipe, "recipe", reader)
    if not is_overlay(raw):  # a bad recipe fails first (an overlay is hydrated by the run)
        parse_recipe(raw, recipe)
    if cluster is None:
        cluster = connect(kubeconfig, kube_context, reach_timeout=reach_timeout)
    if cluster.tripped is not None:  # one line naming the server and what is wrong, in seconds
        emit(f"aicr-pytest: error: {MSG_FAILED.format(err=cluster.tripped)}")
        return None, 8
    opts = CaptureOptions(
        image=image,
        namespace=placement.namespace,
        node_selector=placement.node_selector,
        tolerations=placement.tolerations,
        require_gpu=require_gpu,
        timeout=timeout,
        image_pull_secrets=placement.image_pull_secrets,
        job_base=job_name or JOB_BASE,
    )
    connected = cluster

    def report_cleanup(lines: list[str]) -> None:
        for line in lines:
            emit(line)

    try:
        live = capture_live(
            lambda: connected, opts, no_cleanup=no_cleanup, emit=emit, on_cleanup=report_cleanup
        )
    except CaptureError as err:
        emit(f"aicr-pytest: error: {MSG_FAILED.format(err=err)}")
        return None, err.exit_code
    except ApiError as err:
        emit(f"aicr-pytest: error: {MSG_FAILED.format(err=f'[INTERNAL] {err}')}")
        return None, 8
    for warning in live.result.warnings:
        emit(f"WARNING: {warning}")
    attach(live.result.document, provider_subtypes)
    path = Path(directory or tempfile.gettempdir()) / f"aicr-pytest-snapshot-{live.run_id}.yaml"
    path.write_text(dumps(live.result.document, "yaml"), encoding="utf-8")
    emit(LINE_CAPTURED.format(node=live.result.source_node, path=path))
    return str(path), 0


__all__ = ["LINE_CAPTURED", "MSG_FAILED", "capture_for_validate"]
