"""Fixtures of the evidence tests: the fake Sigstore instance and the two real registries.

Registries (built by ``scripts/registry.sh build``, cached per machine) run as child processes on
127.0.0.1 for the whole session; every test pushes to its own repository.  Without the binaries
the registry tests skip with a reason, or fail when ``AICR_REQUIRE_REGISTRY=1`` (set by ``.ci/run``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

# In-process pytester runs restore sys.modules afterwards, so a module first imported inside one
# run is imported again by the next (two copies of each class: requests' cookie jars stop matching).
# Import everything the evidence code loads lazily up front.
from tests.evidence import sigstore_fake

REPO = Path(__file__).resolve().parents[2]
REFERENCE_POINTERS = "aicr/recipes/evidence"


def _registry_bin() -> Path:
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "registry.sh"), "dir"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


def _unavailable(reason: str) -> None:
    if os.environ.get("AICR_REQUIRE_REGISTRY") == "1":
        pytest.fail(reason + "; AICR_REQUIRE_REGISTRY=1 makes this a failure")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(host: str, proc: subprocess.Popen[bytes], deadline_s: float = 20.0) -> None:

    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"registry exited with {proc.returncode}")
        try:
            if requests.get(f"http://{host}/v2/", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"registry at {host} did not answer /v2/ within {deadline_s}s")


@dataclass(frozen=True)
class Registry:
    name: str  # "distribution-2.8" | "ggcr-referrers"
    host: str  # 127.0.0.1:PORT
    referrers_api: bool

    def repo(self, prefix: str = "ev") -> str:
        """A repository nobody else uses: ``host/<prefix>-<random>/aicr-evidence``."""
        return f"{self.host}/{prefix}-{uuid.uuid4().hex[:10]}/aicr-evidence"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def distribution_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Debian's docker-registry 2.8 (no Referrers API: the tag-schema fallback path)."""
    binary = _registry_bin() / "docker-registry"
    if not binary.is_file():
        _unavailable(f"{binary} not built (run scripts/registry.sh build)")
    work = tmp_path_factory.mktemp("distribution")
    log = (work / "registry.log").open("wb")
    for attempt in range(3):  # the port is picked before the registry binds it: retry a lost race
        port = _free_port()
        config = work / "config.yml"
        config.write_text(
            "version: 0.1\nlog: {level: error}\n"
            f"storage: {{filesystem: {{rootdirectory: {work / 'data'}}}, delete: {{enabled: true}}}}\n"
            f"http: {{addr: 127.0.0.1:{port}}}\n"
        )
        proc = subprocess.Popen([str(binary), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(f"127.0.0.1:{port}", proc)
            break
        except RuntimeError:
            _stop(proc)
            if attempt == 2:
                raise
    try:
        yield Registry("distribution-2.8", f"127.0.0.1:{port}", referrers_api=False)
    finally:
        _stop(proc)
        log.close()


@pytest.fixture(scope="session")
def referrers_registry() -> Iterator[Registry]:
    """go-containerregistry's pkg/registry with the OCI 1.1 Referrers API."""
    binary = _registry_bin() / "referrers-registry"
    if not binary.is_file():
        _unavailable(f"{binary} not built (run scripts/registry.sh build)")
    proc = subprocess.Popen(
        [str(binary), "-addr", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()
        assert line.startswith("listening on http://"), line
        host = line.removeprefix("listening on http://")
        _wait_ready(host, proc)
        yield Registry("ggcr-referrers", host, referrers_api=True)
    finally:
        _stop(proc)


@pytest.fixture(params=["distribution", "referrers"])
def registry(request: pytest.FixtureRequest) -> Registry:
    """Each registry in turn."""
    name = "distribution_registry" if request.param == "distribution" else "referrers_registry"
    reg: Registry = request.getfixturevalue(name)
    return reg


@pytest.fixture(autouse=True)
def _no_docker_credentials(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the developer's ~/.docker/config.json."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path_factory.mktemp("docker-config")))


@pytest.fixture
def fake_sigstore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[sigstore_fake.FakeSigstore]:
    """A private Sigstore on loopback, installed as the trust configuration (env var) for this test."""
    with sigstore_fake.serve() as fake:
        path = tmp_path / "trust-config.json"
        path.write_text(json.dumps(fake.trust_config()))
        monkeypatch.setenv("AICR_PYTEST_TEST_TRUST_CONFIG", str(path))
        fake.trust_config_path = path
        yield fake
