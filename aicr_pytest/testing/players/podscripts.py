"""One :class:`PodScript` per pod a check creates: the pattern the tool players share.

:func:`script_each_pod` registers, for every created pod ``wanted`` accepts and no test scripted
itself, the script ``build(sim, pod)`` returns, bound to that pod alone (by uid), and drops it
when the pod is deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from aicr_pytest.testing.simulator import PodScript, Simulator
from aicr_pytest.testing.store import Obj

if TYPE_CHECKING:
    from aicr_pytest.testing.model import SimulatedCluster

__all__ = ["script_each_pod"]


def _uid(pod: Obj) -> str:
    return str((pod.get("metadata") or {}).get("uid"))


def script_each_pod(
    fc: SimulatedCluster, wanted: Callable[[Obj], bool], build: Callable[[Simulator, Obj], PodScript]
) -> None:
    """Script each created pod ``wanted`` accepts with ``build(sim, pod)`` (see the module docstring)."""
    scripts: dict[str, PodScript] = {}  # pod uid -> its script, dropped when the pod goes

    def on_pod(sim: Simulator, pod: Obj) -> None:
        if not wanted(pod) or any(s.matches(pod) for s in sim.scripts):
            return  # not ours, or a test scripted this pod itself
        uid = _uid(pod)
        script = build(sim, pod)
        script.predicate = lambda p: _uid(p) == uid
        scripts[uid] = script
        sim.script(script)

    def on_pod_deleted(sim: Simulator, pod: Obj) -> None:
        script = scripts.pop(_uid(pod), None)
        if script is not None:
            sim.scripts[:] = [s for s in sim.scripts if s is not script]

    fc.sim.on_create("", "v1", "pods", on_pod)
    fc.sim.on_delete("", "v1", "pods", on_pod_deleted)
