"""The registry client behind :mod:`aicr_pytest.evidence.oci`: one repository of one registry.

oras-py's ``Registry`` does the auth handshake (Docker credential store, token/basic auth); our
transport policy sits on top: retries bounded by attempts and by a silence budget (the time since
the registry last answered, pauses included), a progress line before each retry, timeouts on every
request, no cookies, and every body read capped and checked by the caller against its digest.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from typing import Any

import requests

from aicr_pytest.core import progress
from aicr_pytest.evidence import constants as C
from aicr_pytest.evidence.canonical import sha256_digest
from aicr_pytest.evidence.ociref import Reference

#: the longest a registry may stay silent during one operation, retries and pauses included
SILENCE_S = 30.0
#: the longest one body (a manifest or a blob) may take to arrive in all: a registry that trickles
#: a byte now and then never stays silent long enough for :data:`SILENCE_S` to end the read
READ_TOTAL_S = 120.0
MSG_READ_TOO_SLOW = "{what} did not arrive within {seconds:g}s in all (the registry sends it too slowly)"
#: the longest a TCP connect may take (within the silence budget)
CONNECT_TIMEOUT_S = 10.0
#: ask for any manifest kind, so a tag holding something unexpected is seen, not reported as absent
ANY_MANIFEST = f"{C.MT_INDEX}, {C.MT_MANIFEST}"
ATTEMPTS = 3

#: the silence budget ran out / every attempt failed (one line, naming the host)
MSG_SILENT = (
    "registry {host} did not answer within {seconds}s ({attempts} attempt(s), last: {problem}): "
    "{method} {url}"
)
MSG_GAVE_UP = "registry {host}: {problem} ({attempts} attempts): {method} {url}"
MSG_RETRYING = "registry {host}: {problem}; retrying in {pause}s (attempt {next} of {attempts})"


class RegistryError(Exception):
    """A registry call failed; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    artifact_type: str = ""
    annotations: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.artifact_type:
            out["artifactType"] = self.artifact_type
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


# ---- the client ----------------------------------------------------------------------------------


class _TimeoutSession(requests.Session):
    def __init__(self, timeout: float) -> None:
        super().__init__()
        self.timeout = timeout

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        kwargs.setdefault("timeout", (min(CONNECT_TIMEOUT_S, self.timeout), self.timeout))
        return super().request(method, url, *args, **kwargs)


def _problem(err: Exception) -> str:
    """A short, one-line reason for a transport error (requests' own text nests whole reprs)."""
    if isinstance(err, requests.Timeout):
        return "timed out"
    text = " ".join(str(err).split())
    for marker in ("Connection refused", "Name or service not known", "No route to host", "reset by peer"):
        if marker in text:
            return marker.lower() if marker != "Connection refused" else "connection refused"
    return text[:200] or type(err).__name__


def _registry_class() -> type[Any]:
    import oras.provider

    class _Registry(oras.provider.Registry):  # type: ignore[misc]
        """oras-py's registry with our transport policy: retries bounded by attempts and by the
        silence budget (:data:`SILENCE_S`: the time since the registry last answered, pauses
        included), a progress line before each retry, no raising on 401."""

        sleep: Callable[[float], None] = time.sleep
        clock: Callable[[], float] = time.monotonic
        notify: Callable[[str], None] = staticmethod(progress.emit)
        silence: float = SILENCE_S

        def do_request(
            self,
            url: str,
            method: str = "GET",
            data: Any = None,
            headers: dict[str, str] | None = None,
            json: Any = None,
            stream: bool = False,
        ) -> requests.Response:
            delay = 1.0
            host = self.hostname
            heard = self.clock()  # when the registry last answered (or the operation began)
            for attempt in range(1, ATTEMPTS + 1):
                left = max(0.1, self.silence - (self.clock() - heard))
                try:
                    response = self._request_once(
                        url, method, data, dict(headers or {}), json, stream, timeout=left
                    )
                except (requests.ConnectionError, requests.Timeout) as err:
                    problem = _problem(err)
                else:
                    retryable = response.status_code >= 500 or response.status_code == 429
                    if not retryable or attempt == ATTEMPTS:
                        return response
                    heard = self.clock()
                    problem = f"HTTP {response.status_code}"
                pause = delay * random.uniform(0.75, 1.25)
                silent = self.clock() - heard + pause >= self.silence
                if attempt == ATTEMPTS or silent:
                    template = MSG_SILENT if silent else MSG_GAVE_UP
                    raise RegistryError(
                        template.format(
                            host=host,
                            seconds=f"{self.silence:g}",
                            attempts=attempt,
                            method=method,
                            url=url,
                            problem=problem,
                        )
                    ) from None
                self.notify(
                    MSG_RETRYING.format(
                        host=host, problem=problem, pause=f"{pause:.0f}", next=attempt + 1, attempts=ATTEMPTS
                    )
                )
                self.sleep(pause)
                delay *= 2
            raise AssertionError("unreachable")

        def _request_once(
            self,
            url: str,
            method: str,
            data: Any,
            headers: dict[str, str],
            json: Any,
            stream: bool,
            *,
            timeout: float,
        ) -> requests.Response:
            import oras.auth

            if isinstance(self.auth, oras.auth.TokenAuth) and self.auth.token is not None:
                headers.update(self.auth.get_auth_header())
            kwargs = {
                "data": data,
                "json": json,
                "stream": stream,
                "verify": self._tls_verify,
                "timeout": (min(CONNECT_TIMEOUT_S, timeout), timeout),
            }
            session: requests.Session = self.session
            response = session.request(method, url, headers=headers, **kwargs)
            if response.status_code not in (401, 403) or "www-authenticate" not in response.headers:
                return response
            new_headers, changed = self.auth.authenticate_request(response, headers)
            if not changed:
                return response
            return session.request(method, url, headers=new_headers, **kwargs)

    return _Registry


class RegistryClient:
    """One repository of one registry."""

    def __init__(
        self,
        ref: Reference,
        *,
        plain_http: bool = False,
        insecure_tls: bool = False,
        timeout: float = SILENCE_S,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        import oras.container

        self.ref = ref
        self.scheme = "http" if plain_http else "https"
        reg = _registry_class()(
            hostname=ref.api_host, insecure=plain_http, tls_verify=plain_http or not insecure_tls
        )
        session = _TimeoutSession(timeout)
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
        reg.session = session
        reg.auth.session = session
        reg.silence = timeout
        if sleep is not None:
            reg.sleep = sleep
        if clock is not None:
            reg.clock = clock
        if notify is not None:
            reg.notify = notify
        container = oras.container.Container("placeholder", registry=ref.api_host)
        namespace, _, repository = ref.repository.rpartition("/")
        container.namespace = namespace or None
        container.repository = repository
        container.tag = ref.tag or "latest"
        container.digest = ref.digest or None
        self.container = container
        self.reg = reg
        # an unreadable Docker config means anonymous access, like no config at all
        with contextlib.suppress(OSError, ValueError, KeyError):
            reg.auth.load_configs(container)

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.ref.api_host}/v2/{self.ref.repository}"

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        try:
            response: requests.Response = self.reg.do_request(self.base + path, method, **kwargs)
        except RegistryError:
            raise
        except requests.RequestException as err:
            raise RegistryError(f"{method} {self.base + path}: {err}") from None
        return response

    # -- reads (every body checked against its digest) ------------------------------------------

    def _read(self, response: requests.Response, limit: int, what: str) -> bytes:
        """The whole body, at most ``limit`` bytes and within :data:`READ_TOTAL_S` in all: past the
        bound a watchdog shuts the connection's socket down, which ends any read blocked on it."""
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise RegistryError(f"{what} is larger than the {limit} byte limit")
        cut = threading.Event()

        def watchdog() -> None:
            cut.set()
            sock = getattr(getattr(response.raw, "connection", None), "sock", None)
            if sock is None:  # a response that closes its connection keeps the socket behind its file
                fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
                sock = getattr(getattr(fp, "raw", None), "_sock", None)
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(READ_TOTAL_S, watchdog)
        timer.daemon = True
        timer.start()
        chunks: list[bytes] = []
        total = 0
        try:
            for chunk in response.iter_content(65536):
                total += len(chunk)
                if total > limit:
                    raise RegistryError(f"{what} is larger than the {limit} byte limit")
                chunks.append(chunk)
        except (requests.RequestException, OSError) as err:
            if cut.is_set():
                raise RegistryError(MSG_READ_TOO_SLOW.format(what=what, seconds=READ_TOTAL_S)) from None
            raise RegistryError(f"{what}: {_problem(err)}") from None
        finally:
            timer.cancel()
        if cut.is_set():
            raise RegistryError(MSG_READ_TOO_SLOW.format(what=what, seconds=READ_TOTAL_S))
        return b"".join(chunks)

    def get_manifest(
        self, reference: str, accept: str = f"{C.MT_MANIFEST}, {C.MT_INDEX}"
    ) -> tuple[bytes, str]:
        """(body, digest); a digest reference must match the body's sha256."""
        response = self.request("GET", f"/manifests/{reference}", headers={"Accept": accept}, stream=True)
        if response.status_code != 200:
            raise RegistryError(
                f"manifest {self.ref.name}@{reference}: HTTP {response.status_code}", response.status_code
            )
        body = self._read(response, C.MAX_OCI_MANIFEST, f"manifest {reference}")
        digest = sha256_digest(body)
        if reference.startswith("sha256:") and digest != reference:
            raise RegistryError(f"manifest {reference}: registry returned content with digest {digest}")
        return body, digest

    def get_blob(self, digest: str, size: int | None, limit: int) -> bytes:
        if size is not None and size > limit:
            raise RegistryError(f"blob {digest}: size {size} exceeds the {limit} byte limit")
        response = self.request("GET", f"/blobs/{digest}", stream=True)
        if response.status_code != 200:
            raise RegistryError(f"blob {digest}: HTTP {response.status_code}", response.status_code)
        body = self._read(response, limit, f"blob {digest}")
        got = sha256_digest(body)
        if got != digest:
            raise RegistryError(f"blob {digest}: registry returned content with digest {got}")
        if size is not None and len(body) != size:
            raise RegistryError(f"blob {digest}: {len(body)} bytes, descriptor says {size}")
        return body

    # -- writes ---------------------------------------------------------------------------------

    def upload_blob(self, data: bytes, media_type: str) -> Descriptor:
        desc = Descriptor(media_type, sha256_digest(data), len(data))
        fd, tmp = tempfile.mkstemp(prefix="aicr-evidence-blob-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            layer = {"mediaType": media_type, "digest": desc.digest, "size": desc.size}
            try:
                response = self.reg.upload_blob(tmp, self.container, layer)
            except RegistryError:
                raise
            except (requests.RequestException, ValueError) as err:
                raise RegistryError(f"blob upload {desc.digest}: {err}") from None
        finally:
            Path(tmp).unlink(missing_ok=True)
        if response.status_code not in (200, 201, 202):
            raise RegistryError(
                f"blob upload {desc.digest}: HTTP {response.status_code}", response.status_code
            )
        return desc

    def put_manifest(self, body: bytes, media_type: str, reference: str) -> requests.Response:
        response = self.request(
            "PUT", f"/manifests/{reference}", data=body, headers={"Content-Type": media_type}
        )
        if response.status_code not in (200, 201):
            raise RegistryError(
                f"manifest PUT {self.ref.name}:{reference}: HTTP {response.status_code} "
                f"{response.text[:200]}",
                response.status_code,
            )
        echoed = response.headers.get("Docker-Content-Digest")
        if echoed and echoed != sha256_digest(body):
            raise RegistryError(f"registry stored the manifest as {echoed}, expected {sha256_digest(body)}")
        return response
