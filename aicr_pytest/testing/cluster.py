"""``FakeCluster``: the fake API server + store + clock + simulator, started as one unit.

>>> with FakeCluster(profile="h100-eks-training") as fc:        # doctest: +SKIP
...     api = kubernetes.config.new_client_from_config(config_file=str(fc.kubeconfig_path))
...     kubernetes.client.CoreV1Api(api).list_node()

With ``auto_advance=True`` (or within ``with fc.auto_advancing():``) the fake moves its
:class:`FakeClock` by itself whenever every client is blocked in a watch: straight to the next
simulator timer, or to the watch's own ``timeoutSeconds`` deadline when nothing is scheduled. A
check that waits with watches then runs in virtual time, deterministically and at no real cost
(see :mod:`aicr_pytest.testing.virtualtime` for the exact rule and its limits). It is off by
default: a test that opens watches and moves the clock itself keeps full control.

The kubeconfig written points at ``http://127.0.0.1:<port>`` with a bearer-token user; its
cluster entry carries the extension ``aicr.run/simulated`` so tooling can say the cluster is
simulated, and the ConfigMap ``kube-public/aicr-simulator`` records the profile and faults.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from aicr_pytest.testing.clock import FakeClock, TimerClock
from aicr_pytest.testing.model import ClusterProfile
from aicr_pytest.testing.profiles import resolve_profile
from aicr_pytest.testing.server import FakeApiServer, Faults
from aicr_pytest.testing.simulator import Simulator
from aicr_pytest.testing.store import ApiError, Obj, Store, clone
from aicr_pytest.testing.virtualtime import DEFAULT_SETTLE_S, AutoAdvancer

__all__ = ["FakeCluster"]


class FakeCluster:
    """An in-process Kubernetes API (real HTTP on loopback) with a GPU-cluster simulator.

    Args:
        profile: a profile name from :data:`aicr_pytest.testing.profiles.PROFILES`, a
            :class:`~aicr_pytest.testing.profiles.ClusterProfile`, or ``None`` for an empty
            cluster (default namespaces only).
        faults: fault names from :data:`aicr_pytest.testing.profiles.FAULTS` applied to the profile.
        clock: defaults to a :class:`FakeClock` (tests); ``simulate`` passes a ``RealClock``.
        token: bearer token the server requires (the kubeconfig carries it).
        version: overrides for ``/version`` (``gitVersion``, ``major``, ``minor``...).
        kubeconfig_path: where to write the kubeconfig (default: a private temp dir).
        simulate: run the simulator's controllers (scheduler, kubelet, Job controller).
        history_size: how many watch events are kept before older resourceVersions expire (410).
        auto_advance: move the (fake) clock whenever every client is blocked in a watch (see the
            module docstring); needs a :class:`FakeClock`. Toggle later with
            :meth:`set_auto_advance` or :meth:`auto_advancing`.
        settle: real seconds the cluster must stay quiet before an automatic advance.
        tls: serve HTTPS with a fresh CA that the kubeconfig carries (``certificate-authority-data``),
            as ``aicr-pytest simulate`` does, so kubectl sends the bearer token.
    """

    def __init__(
        self,
        profile: str | ClusterProfile | None = None,
        faults: Iterable[str] = (),
        *,
        clock: TimerClock | None = None,
        token: str = "aicr-fake-token",
        version: Mapping[str, str] | None = None,
        kubeconfig_path: str | Path | None = None,
        simulate: bool = True,
        history_size: int = 10_000,
        seed: int = 0,
        auto_advance: bool = False,
        settle: float = DEFAULT_SETTLE_S,
        tls: bool = False,
    ) -> None:
        self.clock: TimerClock = clock or FakeClock()
        self.store = Store(self.clock, history_size=history_size, seed=seed, version=version)
        self.sim = Simulator(self.store, enabled=simulate)
        material = None
        if tls:  # cryptography only for HTTPS (simulate); the in-process tests stay on plain HTTP
            from aicr_pytest.testing.server.tls import make_tls

            material = make_tls()
        self.server = FakeApiServer(self.store, token=token, tls=material)
        self._settle = settle
        self._auto_advance = False
        self._started = False
        self.advancer: AutoAdvancer | None = None
        if auto_advance:
            self.set_auto_advance(True)
        self.token = token
        self._tmpdir: Path | None = None
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self.kubeconfig_path: Path = self._kubeconfig_arg or Path("/nonexistent/kubeconfig")
        self._started = False
        self.profile: ClusterProfile | None = None
        self.fault_names: list[str] = list(faults)
        if profile is not None or self.fault_names:
            self.profile = resolve_profile(profile, self.fault_names)
            self.profile.apply(self)

    # ---------------------------------------------------------------------------- lifecycle --
    def start(self) -> FakeCluster:
        if self._started:
            return self
        self.server.start()
        if self._kubeconfig_arg is None:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="aicr-fake-"))
            self.kubeconfig_path = self._tmpdir / "kubeconfig"
        self.write_kubeconfig(self.kubeconfig_path)
        self._started = True
        if self._auto_advance and self.advancer is not None:
            self.advancer.start()
        return self

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.advancer is not None:
            self.advancer.stop()
        self.server.stop()
        stop = getattr(self.clock, "stop", None)
        if callable(stop):
            stop()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> FakeCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def faults(self) -> Faults:
        """Scripted HTTP faults (429/500/dropped connection/403/410 on watch)."""
        return self.server.faults

    def kubeconfig(self) -> Obj:
        """The kubeconfig document (a dict) for this cluster."""
        profile = self.profile.name if self.profile else ""
        cluster: Obj = {
            "server": self.url,
            "extensions": [
                {
                    "name": "aicr.run/simulated",
                    "extension": {"profile": profile, "faults": list(self.fault_names)},
                }
            ],
        }
        if self.server.tls is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.server.tls.ca_pem).decode("ascii")
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "aicr-fake", "cluster": cluster}],
            "users": [{"name": "aicr-fake-user", "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": "aicr-fake",
                    "context": {"cluster": "aicr-fake", "user": "aicr-fake-user", "namespace": "default"},
                }
            ],
            "current-context": "aicr-fake",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        p.chmod(0o600)
        return p

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` configured from this cluster's kubeconfig."""
        from kubernetes import config  # imported lazily: tests-only dependency path

        return config.new_client_from_config(config_file=str(self.kubeconfig_path))  # type: ignore[no-untyped-call]

    # -------------------------------------------------------------------------- store helpers --
    def add(self, obj: Obj) -> Obj:
        """Create-or-replace an object as given (status included); controllers react to it."""
        return self.store.add(obj)

    def add_all(self, objs: Iterable[Obj]) -> list[Obj]:
        return [self.store.add(o) for o in objs]

    def bulk_add(self, objs: list[Obj]) -> int:
        """Fast seeding (no copies, no controllers): see :meth:`Store.bulk_add`."""
        return self.store.bulk_add(objs)

    def find(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """The object (a copy) or ``None``; ``kind`` may also be the plural resource name."""
        rt = self.store.resolve(api_version, kind)
        obj = self.store.peek(rt, namespace or ("default" if rt.namespaced else None), name)
        return clone(obj) if obj is not None else None

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
        """The object (a copy); raises :class:`ApiError` 404 when missing."""
        rt = self.store.resolve(api_version, kind)
        return self.store.get(rt, namespace or ("default" if rt.namespaced else None), name)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Obj]:
        rt = self.store.resolve(api_version, kind)
        return list(
            self.store.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)[
                "items"
            ]
        )

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        rt = self.store.resolve(api_version, kind)
        try:
            self.store.delete(rt, namespace or ("default" if rt.namespaced else None), name)
        except ApiError as exc:
            if exc.code != 404:
                raise

    def set_pod_log(
        self, namespace: str, pod: str, container: str, text: str, *, previous: bool = False
    ) -> None:
        """Set the log ``GET .../pods/<pod>/log?container=<container>`` returns."""
        self.store.set_log(namespace, pod, container, text, previous=previous)

    def append_pod_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        """Append to a container log (followers receive it immediately)."""
        self.store.append_log(namespace, pod, container, text)

    def request_count(
        self, method: str | None = None, path: str | None = None, *, watch: bool | None = None
    ) -> int:
        return self.server.request_count(method, path, watch=watch)

    def advance(self, seconds: float) -> None:
        """Advance the (fake) clock; the simulator's timeline runs synchronously."""
        advance = getattr(self.clock, "advance", None)
        if advance is None:
            raise TypeError("advance() needs a FakeClock")
        advance(seconds)

    # ------------------------------------------------------------------------- virtual time --
    @property
    def auto_advance(self) -> bool:
        """Whether the clock moves by itself while every client is blocked in a watch."""
        return self._auto_advance

    def set_auto_advance(self, enabled: bool) -> None:
        """Turn auto-advance on or off (see the module docstring); needs a :class:`FakeClock`."""
        if enabled and not isinstance(self.clock, FakeClock):
            raise ValueError(f"auto_advance needs a FakeClock ({type(self.clock).__name__} moves by itself)")
        self._auto_advance = enabled
        if enabled:
            if self.advancer is None:
                assert isinstance(self.clock, FakeClock)
                self.advancer = AutoAdvancer(self.clock, self.store.activity, settle=self._settle)
            if self._started:
                self.advancer.start()
        elif self.advancer is not None:
            self.advancer.stop()

    @contextlib.contextmanager
    def auto_advancing(self) -> Iterator[FakeCluster]:
        """Auto-advance within the block (e.g. around a check run), restoring the setting after."""
        before = self._auto_advance
        self.set_auto_advance(True)
        try:
            yield self
        finally:
            self.set_auto_advance(before)

    @property
    def state(self) -> dict[str, Any]:
        """Free-form scenario state (e.g. ``state["faults"]``) that checks' simulators read."""
        return self.store.state

    def record_faults(self, names: Sequence[str]) -> None:
        self.store.state.setdefault("faults", [])
        for n in names:
            if n not in self.store.state["faults"]:
                self.store.state["faults"].append(n)
