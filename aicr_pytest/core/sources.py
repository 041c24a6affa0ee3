"""Where a recipe or snapshot comes from: a local file, an ``https://`` URL, or ``cm://ns/name``.

* Files and HTTPS bodies are capped at 1 MiB, as in AICR.
* HTTPS always verifies the server certificate against the system trust store (honouring
  ``SSL_CERT_FILE``/``SSL_CERT_DIR``); redirects to anything but ``https://`` are refused.
* ``http://`` is refused outright (AICR accepts it; we do not fetch validation input in clear text).
* ``cm://namespace/name`` reads a ConfigMap through an injected reader.  The data key follows
  AICR's scheme for recipes *and* snapshots: ``snapshot.<format>`` where ``<format>`` is the
  ConfigMap's ``format`` key (default ``yaml``), falling back to ``snapshot.yaml``,
  ``snapshot.json``, ``snapshot.txt``.

Every content is parsed as YAML (JSON is a subset of YAML 1.2), regardless of the extension.
"""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import yaml

from aicr_pytest.core import inputfile, yamlio
from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.redact import redact_text, redact_url

if TYPE_CHECKING:  # ssl and urllib load only when a recipe or snapshot is fetched over HTTPS
    import ssl

SourceKind = Literal["recipe", "snapshot"]
#: ``reader(namespace, name) -> ConfigMap .data``; raises on API errors.
ConfigMapReader = Callable[[str, str], dict[str, str]]

MAX_INPUT_BYTES = 1 << 20  # AICR defaults.MaxSpecFileBytes / HTTPResponseBodyLimit
#: Snapshots of large clusters are far bigger than a recipe (5,000 nodes ≈ 20 MB).
MAX_SNAPSHOT_BYTES = 64 << 20


def _limit(kind: str) -> int:
    return MAX_SNAPSHOT_BYTES if kind == "snapshot" else MAX_INPUT_BYTES


def _limit_text(kind: str) -> str:
    return f"{_limit(kind) >> 20} MiB"


HTTP_TIMEOUT_S = 30.0
#: the whole fetch (connect, TLS, headers, body, redirects) ends within this many seconds: a server
#: that trickles a byte now and then never trips the idle timeout above, so it is cut here
HTTP_TOTAL_S = 60.0
CM_PREFIX = "cm://"
#: Keys tried, in order, after ``snapshot.<format>`` (for recipes too).
CM_FALLBACK_KEYS = ("snapshot.yaml", "snapshot.json", "snapshot.txt")

# Message quoted from AICR.
MSG_CM_NO_DATA = "ConfigMap {namespace}/{name} has no snapshot data"
# Our own messages.
MSG_CM_INVALID_URI = 'invalid ConfigMap URI "{uri}": expected cm://namespace/name'
MSG_CM_NO_CLUSTER = "cannot read {kind} from {uri}: reading a ConfigMap needs a cluster (kubeconfig)"
MSG_CM_READ_FAILED = "cannot read {kind} from {uri}: {error}"
MSG_CM_TABLE = "{kind} in {uri} (key {key}) is table output, which cannot be read back; store YAML or JSON"
MSG_FILE_NOT_FOUND = "{kind} file not found: {path}"
MSG_NOT_A_FILE = "{kind} path is not a regular file ({what}): {path}"
MSG_FILE_UNREADABLE = "cannot read {kind} file {path}: {error}"
MSG_TOO_LARGE = "{kind} {source} is larger than the {limit} limit"
MSG_HTTP_REJECTED = (
    "refusing to fetch {kind} over plain http: {uri} — the input decides what is validated, so it "
    "must come over TLS; use an https:// URL, a local file, or cm://namespace/name"
)
MSG_UNSUPPORTED_SCHEME = (
    "unsupported {kind} location {uri}: expected a file path, an https:// URL, or cm://namespace/name"
)
MSG_FETCH_STATUS = "failed to fetch {kind} from {uri}: status {status} {reason}"
MSG_FETCH_TLS = "failed to fetch {kind} from {uri}: TLS verification failed: {error}"
MSG_FETCH_FAILED = "failed to fetch {kind} from {uri}: {error}"
MSG_FETCH_TOO_SLOW = (
    "failed to fetch {kind} from {uri}: no complete response within {seconds:g}s "
    "(the server is too slow or stalls)"
)
MSG_REDIRECT_REJECTED = "redirect to a non-https location refused: {target}"
MSG_MALFORMED_YAML = "malformed YAML in {source}: {problem}"
MSG_NOT_A_MAPPING = "{kind} {source} is not a YAML mapping (got {what})"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _ssl_context() -> ssl.SSLContext:
    """Certificate- and hostname-verifying context over the default trust store."""
    import ssl

    return ssl.create_default_context()


def _first_line(text: object) -> str:
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else type(text).__name__


def parse_configmap_uri(uri: str) -> tuple[str, str]:
    """``cm://ns/name`` → ``(ns, name)``: split on the first ``/``, both parts trimmed, non-empty."""
    if not uri.startswith(CM_PREFIX):
        raise UsageError(MSG_CM_INVALID_URI.format(uri=uri))
    rest = uri[len(CM_PREFIX) :]
    namespace, sep, name = rest.partition("/")
    namespace, name = namespace.strip(), name.strip()
    if not sep or not namespace or not name:
        raise UsageError(MSG_CM_INVALID_URI.format(uri=uri))
    return namespace, name


def configmap_data_key(data: dict[str, str]) -> str | None:
    """The key holding the document: ``snapshot.<format>``, then the fixed fallbacks."""
    fmt = (data.get("format") or "").strip() or "yaml"
    for key in (f"snapshot.{fmt}", *CM_FALLBACK_KEYS):
        if key in data:
            return key
    return None


def _load_configmap(uri: str, kind: SourceKind, reader: ConfigMapReader | None) -> tuple[bytes, str]:
    namespace, name = parse_configmap_uri(uri)
    if reader is None:
        raise UsageError(MSG_CM_NO_CLUSTER.format(kind=kind, uri=uri))
    try:
        data = reader(namespace, name)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(MSG_CM_READ_FAILED.format(kind=kind, uri=uri, error=_first_line(exc))) from None
    key = configmap_data_key(data or {})
    if key is None:
        raise UsageError(MSG_CM_NO_DATA.format(namespace=namespace, name=name))
    if key.endswith((".txt", ".table")):
        raise UsageError(MSG_CM_TABLE.format(kind=kind, uri=uri, key=key))
    body = (data[key] or "").encode("utf-8")
    label = f"{CM_PREFIX}{namespace}/{name} (key {key})"
    if len(body) > _limit(kind):
        raise UsageError(MSG_TOO_LARGE.format(limit=_limit_text(kind), kind=kind, source=label))
    return body, label


def _load_https(uri: str, kind: SourceKind) -> tuple[bytes, str]:
    """Fetch ``uri`` within :data:`HTTP_TOTAL_S` in all: the fetch runs in a helper thread, and
    when the bound passes its sockets are shut down (which ends any read it is blocked in)."""
    import threading

    sockets: list[socket.socket] = []
    outcome: list[tuple[bytes, str] | BaseException] = []

    def fetch() -> None:
        try:
            outcome.append(_fetch_https(uri, kind, sockets))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    worker = threading.Thread(target=fetch, name="aicr-pytest-fetch", daemon=True)
    worker.start()
    worker.join(HTTP_TOTAL_S)
    if worker.is_alive() or not outcome:
        for sock in list(sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        raise UsageError(MSG_FETCH_TOO_SLOW.format(kind=kind, uri=uri, seconds=HTTP_TOTAL_S))
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _fetch_https(uri: str, kind: SourceKind, sockets: list[socket.socket]) -> tuple[bytes, str]:
    import http.client
    import ssl  # here, not at module level: only an https:// source needs them (start-up time)
    import urllib.error
    import urllib.request

    class TrackedConnection(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            sockets.append(self.sock)

    class TrackedHandler(urllib.request.HTTPSHandler):
        def __init__(self, context: ssl.SSLContext) -> None:
            super().__init__(context=context)
            self.tls = context

        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(TrackedConnection, req, context=self.tls)

    class HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(
            self,
            req: urllib.request.Request,
            fp: object,
            code: int,
            msg: str,
            headers: object,
            newurl: str,
        ) -> urllib.request.Request | None:
            if not newurl.lower().startswith("https://"):
                raise urllib.error.URLError(MSG_REDIRECT_REJECTED.format(target=redact_url(newurl)))
            return super().redirect_request(req, fp, code, msg, headers, newurl)  # type: ignore[arg-type]

    opener = urllib.request.build_opener(TrackedHandler(_ssl_context()), HttpsOnlyRedirects())
    request = urllib.request.Request(uri, headers={"Accept": "application/yaml, application/json, */*"})
    try:
        with opener.open(request, timeout=HTTP_TIMEOUT_S) as response:
            status = int(response.status)
            if status != 200:
                raise UsageError(
                    MSG_FETCH_STATUS.format(kind=kind, uri=uri, status=status, reason=response.reason)
                )
            body: bytes = response.read(_limit(kind) + 1)
    except UsageError:
        raise
    except urllib.error.HTTPError as exc:
        raise UsageError(
            MSG_FETCH_STATUS.format(kind=kind, uri=uri, status=exc.code, reason=exc.reason)
        ) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ssl.SSLError):
            raise UsageError(
                MSG_FETCH_TLS.format(kind=kind, uri=uri, error=_first_line(exc.reason))
            ) from None
        raise UsageError(MSG_FETCH_FAILED.format(kind=kind, uri=uri, error=_first_line(exc.reason))) from None
    except ssl.SSLError as exc:
        raise UsageError(MSG_FETCH_TLS.format(kind=kind, uri=uri, error=_first_line(exc))) from None
    except (OSError, ValueError) as exc:  # timeouts, resets, malformed URLs
        raise UsageError(MSG_FETCH_FAILED.format(kind=kind, uri=uri, error=_first_line(exc))) from None
    if len(body) > _limit(kind):
        raise UsageError(MSG_TOO_LARGE.format(limit=_limit_text(kind), kind=kind, source=uri))
    return body, uri


def _load_file(uri: str, kind: SourceKind) -> tuple[bytes, str]:
    path = Path(uri).expanduser()
    if not path.exists():
        raise UsageError(MSG_FILE_NOT_FOUND.format(kind=kind, path=uri))
    if not path.is_file():  # a FIFO, a socket or a device is never opened (it would hang the run)
        what = inputfile.kind_of(path.stat().st_mode)
        raise UsageError(MSG_NOT_A_FILE.format(kind=kind, path=uri, what=what))
    try:
        with path.open("rb") as fh:
            body = fh.read(_limit(kind) + 1)
    except OSError as exc:
        raise UsageError(
            MSG_FILE_UNREADABLE.format(kind=kind, path=uri, error=exc.strerror or _first_line(exc))
        ) from None
    if len(body) > _limit(kind):
        raise UsageError(MSG_TOO_LARGE.format(limit=_limit_text(kind), kind=kind, source=uri))
    return body, uri


def load_source(
    uri: str,
    *,
    kind: SourceKind,
    configmap_reader: ConfigMapReader | None = None,
) -> tuple[bytes, str]:
    """Read the raw bytes of a recipe or snapshot.  Returns ``(body, label)``.

    ``label`` names the source for messages (the path, the URL, or ``cm://ns/name (key k)``).
    Every failure is a one-line :class:`UsageError`.
    """
    uri = uri.strip()
    if not uri:
        raise UsageError(f"{kind} location is empty")
    match = _SCHEME.match(uri)
    if match is None:
        return _load_file(uri, kind)
    scheme = match.group(1).lower()
    if scheme == "https":
        try:
            body, label = _load_https(uri, kind)
        except UsageError as err:  # whatever a failure quoted, the URL's credentials stay out
            raise UsageError(redact_text(str(err))) from None
        return body, redact_url(label)
    if scheme == "http":
        raise UsageError(MSG_HTTP_REJECTED.format(kind=kind, uri=redact_url(uri)))
    if scheme == "cm":
        return _load_configmap(uri, kind, configmap_reader)
    raise UsageError(MSG_UNSUPPORTED_SCHEME.format(kind=kind, uri=redact_url(uri)))


def parse_yaml_document(body: bytes | str, label: str, *, kind: str = "document") -> object:
    """Parse one YAML document (YAML 1.2 scalars); errors become one line with a line number.

    The result must be a mapping: recipes and snapshots are, and this also rejects an HTML
    error page or other text that happens to parse as a YAML scalar.
    """
    try:
        data = yamlio.load(body)
    except yaml.MarkedYAMLError as exc:
        problem = "; ".join(p for p in (exc.context, exc.problem) if p) or "syntax error"
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UsageError(MSG_MALFORMED_YAML.format(source=label, problem=f"{problem}{where}")) from None
    except yaml.YAMLError as exc:  # reader errors (bad encoding) carry no mark
        raise UsageError(MSG_MALFORMED_YAML.format(source=label, problem=_first_line(exc))) from None
    if not isinstance(data, dict):
        what = "an empty document" if data is None else ("a list" if isinstance(data, list) else "a scalar")
        raise UsageError(MSG_NOT_A_MAPPING.format(kind=kind, source=label, what=what))
    return data


def load_yaml_document(
    uri: str,
    kind: SourceKind,
    configmap_reader: ConfigMapReader | None = None,
) -> object:
    """:func:`load_source` + :func:`parse_yaml_document`."""
    body, label = load_source(uri, kind=kind, configmap_reader=configmap_reader)
    return parse_yaml_document(body, label, kind=kind)


__all__ = [
    "CM_FALLBACK_KEYS",
    "MAX_INPUT_BYTES",
    "ConfigMapReader",
    "SourceKind",
    "configmap_data_key",
    "load_source",
    "load_yaml_document",
    "parse_configmap_uri",
    "parse_yaml_document",
]
