"""Workload players: simulator extensions that play the controllers and tools checks depend on.

A player is ``install(fc, profile)`` (:class:`~aicr_pytest.testing.model.Player`), run by
``ClusterProfile.apply`` after the profile's components are installed. It typically registers
``fc.sim.on_create`` hooks (e.g. "when a TrainJob appears, create launcher and worker pods with this
log") and ``PodScript`` entries for pods a check creates, reading ``profile.faults`` to misbehave on
cue.

Importing this package registers the built-in players, in this order: ``nvidia-smi``
(:mod:`.nvidia_smi`), ``nccl`` (:mod:`.nccl`), ``inference`` (:mod:`.inference`), ``conformance``
(:mod:`.conformance`: the conformance phase's GPU probe pods, KAI gangs, operator webhooks), ``metrics``
(:mod:`.metrics`: DCGM exporter, Prometheus, prometheus-adapter), ``autoscaling``
(:mod:`.autoscaling`: HPA controller, Deployments a run creates, Karpenter), ``slinky``
(:mod:`.slinky`: Slurm answers in the login pod), ``cre`` (:mod:`.cre`: NVCRE answers Certifications),
``snapshot-agent`` (:mod:`.snapshot_agent`), ``dcgm-diag`` (:mod:`.dcgm_diag`: gpu-diagnostics'
``dcgmi diag`` pods), ``gpu-health`` (:mod:`.gpu_health`: each DCGM exporter pod's health series
through the pod proxy), ``cuda-smoke`` (:mod:`.cuda_smoke`: gpu-cuda-smoke's pods), ``sandbox``
(:mod:`.sandbox`: workload-sandboxing's isolation probe), ``kueue`` (:mod:`.kueue`: Kueue's quota
admission of gang Jobs) and ``imex`` (:mod:`.imex`: dra-support's IMEX channel probe). A user's own
check brings its own player with :func:`aicr_pytest.testing.register_player`.
"""

from __future__ import annotations

from aicr_pytest.testing.model import Player, register_player
from aicr_pytest.testing.players import (
    autoscaling,
    conformance,
    cre,
    cuda_smoke,
    dcgm_diag,
    gpu_health,
    imex,
    inference,
    kueue,
    metrics,
    nccl,
    nvidia_smi,
    sandbox,
    slinky,
    snapshot_agent,
)

__all__ = ["BUILTIN_PLAYERS"]

#: The players AICR's checks need, by registry name, in the order they run.
BUILTIN_PLAYERS: tuple[tuple[str, Player], ...] = (
    ("nvidia-smi", nvidia_smi.install),
    ("nccl", nccl.install),
    ("inference", inference.install),
    ("conformance", conformance.install),
    ("metrics", metrics.install),
    ("autoscaling", autoscaling.install),
    ("slinky", slinky.install),
    ("cre", cre.install),
    ("snapshot-agent", snapshot_agent.install),
    ("dcgm-diag", dcgm_diag.install),
    ("gpu-health", gpu_health.install),
    ("cuda-smoke", cuda_smoke.install),
    ("sandbox", sandbox.install),
    ("kueue", kueue.install),
    ("imex", imex.install),
)

for _name, _install in BUILTIN_PLAYERS:
    register_player(_name, _install)
