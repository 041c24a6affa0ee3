"""``aicr-pytest validate``'s options as one typed request, resolved once.

:func:`aicr_pytest.cli.cmd_validate` reads every option it acts on from a :class:`ValidateRequest`
(never a string key); what goes on to pytest is the :class:`~aicr_pytest.plugin.options.RunSettings`
resolved in the same pass (:func:`~aicr_pytest.plugin.options.resolve_validate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ValidateRequest:
    """What ``aicr-pytest validate`` was asked for: its options, each resolved once (the flag, else
    its environment variable, else ``--config``, else the default).  A field is named after its row
    of the option table; a test keeps the two in step."""

    recipe: str | None
    snapshot: str | None
    kubeconfig: str | None
    kube_context: str | None
    namespace: str | None
    no_cluster: bool
    no_cleanup: bool
    simulate: str | None
    fault: list[str] | None
    output: str | None
    fail_on_error: bool
    debug: bool
    log_json: bool
    timeout: str
    reach_timeout: str | None
    node_selector: list[str] | None
    toleration: list[str] | None
    image_pull_secret: list[str] | None
    image: str | None
    nvidia_smi_image: str
    require_gpu: bool
    job_name: str | None
    cncf_submission: bool
    emit_attestation: str | None
    html: str | None
    aks_gpu_pools: str | None
    gke_gpu_pools: str | None
    oke_addons: str | None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> ValidateRequest:
        return cls(**{f.name: values.get(f.name) for f in dataclasses.fields(cls)})  # type: ignore[arg-type]

    @property
    def alongside(self) -> bool:
        """``--cncf-submission`` next to a recipe and a run output: the phases run too (the
        plugin's ``cncf_wiring.alongside_run``), so the snapshot is captured as for any run."""
        to_file = bool(self.output and self.output != "-")
        return bool(self.recipe and (self.emit_attestation or self.html or to_file))

    @property
    def reach_s(self) -> float:
        """``--reach-timeout`` in seconds (a bad value: one line, exit 2, before any cluster work)."""
        from aicr_pytest.core.settings import parse_duration_flag
        from aicr_pytest.kube.reach import DEFAULT_REACH_TIMEOUT_S

        if not self.reach_timeout:
            return DEFAULT_REACH_TIMEOUT_S
        return parse_duration_flag(str(self.reach_timeout), "--reach-timeout")

    @property
    def captures(self) -> bool:
        """No ``--snapshot``: validate captures one (not offline, not for a submission alone)."""
        return not self.snapshot and not self.no_cluster and (not self.cncf_submission or self.alongside)


__all__ = ["ValidateRequest"]
