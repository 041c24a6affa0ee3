"""List-page prefetch (``Cluster(prefetch_pages=...)``) against the fake API server: the same
requests in the same order as without it, errors raised only when the caller reaches the page,
retries and the 410-with-continue-token recovery unchanged, and an early close leaves no thread
and at most one extra request. (API concepts: "Retrieving large results sets in chunks".)

Each test watches the facade's transport (``api_client.call_api``) to know which thread sent
which request and when; the responses still come from the fake over HTTP, except the one
synthesized 410 in the recovery test (the fake never expires continue tokens)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from _facade_helpers import FAST_RETRIES, assert_rbac_covers, backend_facade, facade, fake_of

from aicr_pytest.kube import AccessDenied, Cluster
from aicr_pytest.kube.client import Target
from aicr_pytest.kube.paging import _peek_continue
from aicr_pytest.testing import FakeCluster
from aicr_pytest.testing.store import decode_continue, encode_continue
from tests.harness.backends import K8sBackend

PODS = "/api/v1/namespaces/bulk/pods"
THREAD = "aicr-list-prefetch"
FAKE = "the fake's request log, fault injection and a transport tap"


def seed(fc: FakeCluster, n: int = 1200) -> None:
    fc.bulk_add(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bulk"}},
            *(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p{i:05d}", "namespace": "bulk", "labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "main", "image": "x"}]},
                    "status": {"phase": "Running"},
                }
                for i in range(n)
            ),
        ]
    )


@dataclass
class Sent:
    thread: str
    path: str
    token: str | None


class Tap:
    """Wraps ``api_client.call_api``: logs every request (thread, path, continue token), runs
    ``before[n]`` / ``after[n]`` around the n-th request (1-based), passes each 200 body through
    ``rewrite`` when set, and sets ``done[n]`` once the n-th request has its response."""

    def __init__(self, cluster: Cluster) -> None:
        self.rewrite: Callable[[bytes], bytes] | None = None
        self.sent: list[Sent] = []
        self.before: dict[int, Callable[[], Any]] = {}
        self.after: dict[int, Callable[[], None]] = {}
        self.done: dict[int, threading.Event] = {n: threading.Event() for n in range(1, 64)}
        self._lock = threading.Lock()
        self._real = cluster.api_client.call_api
        cluster.api_client.call_api = self

    def __call__(self, method: str, url: str, *args: Any, **kw: Any) -> Any:
        parts = urlsplit(url)
        token = dict(parse_qsl(parts.query)).get("continue")
        with self._lock:
            self.sent.append(Sent(threading.current_thread().name, parts.path, token))
            n = len(self.sent)
        try:
            hook = self.before.get(n)
            replaced = hook() if hook else None
            result = replaced if replaced is not None else self._real(method, url, *args, **kw)
            if self.rewrite is not None and replaced is None and result.status == 200:
                data = self.rewrite(result.response.data)
                result.response.release_conn()
                result = synthetic(result.status, result.reason, data)
            if n in self.after:
                self.after[n]()
            return result
        finally:
            self.done[n].set()

    def tokens(self) -> list[str | None]:
        return [s.token for s in self.sent]


def synthetic(status: int, reason: str, body: bytes) -> Any:
    """What ``call_api`` returns, as far as the facade reads it."""
    response = SimpleNamespace(data=body, headers={}, release_conn=lambda: None)
    return SimpleNamespace(status=status, reason=reason, response=response)


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def served(fc: FakeCluster) -> list[str]:
    """The query strings of the pod-list requests the fake answered, in order."""
    return [r.query for r in fc.server.requests if r.method == "GET" and r.path == PODS]


def open_pages(cluster: Cluster, page_size: int = 500) -> Iterator[dict[str, Any]]:
    return cluster.list_pages("v1", "pods", "bulk", label_selector="app=x", page_size=page_size)


def wait_until_in(thread: threading.Thread, function: str, timeout: float = 10.0) -> None:
    """Block until ``thread`` is executing ``function`` (somewhere on its stack)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(thread.ident or -1)
        while frame is not None:
            if frame.f_code.co_name == function:
                return
            frame = frame.f_back
        time.sleep(0.005)
    raise AssertionError(f"{thread.name} never reached {function}()")


@pytest.mark.fake_only(FAKE)
def test_prefetch_sends_the_same_requests_in_the_same_order_as_without(k8s_backend: K8sBackend) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    runs: dict[bool, tuple[list[str], list[str], list[str | None], list[str]]] = {}
    for prefetch in (False, True):
        fc.server.reset_counts()
        cluster, _ = facade(fc, prefetch_pages=prefetch)
        tap = Tap(cluster)
        got = [p["metadata"]["name"] for p in cluster.list("v1", "pods", "bulk", label_selector="app=x")]
        assert len(got) == 1200 and len(set(got)) == 1200
        assert cluster.stats.pages == 3 and cluster.stats.requests == 3
        assert (cluster.stats.by_verb["list"], cluster.retry_count) == (3, 0)
        assert_rbac_covers(cluster)
        runs[prefetch] = (got, served(fc), tap.tokens(), [s.thread for s in tap.sent])
    off, on = runs[False], runs[True]
    assert on[0] == off[0]  # same objects, same order
    assert on[1] == off[1] and len(on[1]) == 3  # the fake saw the very same three queries
    assert on[2] == off[2] and on[2][0] is None and None not in on[2][1:]
    main = threading.current_thread().name
    assert off[3] == [main, main, main]
    assert on[3] == [main, THREAD, THREAD]  # pages 2 and 3 came from the prefetch thread
    assert prefetch_threads() == []


@pytest.mark.fake_only(FAKE)
def test_next_page_is_fetched_while_the_caller_holds_the_current_one(k8s_backend: K8sBackend) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    for prefetch in (True, False):
        cluster, _ = facade(fc, prefetch_pages=prefetch)
        tap = Tap(cluster)
        pages = open_pages(cluster)
        first = next(pages)
        assert len(first["items"]) == 500
        # Prefetch on: request 2 completes without the caller asking; off: it is never sent.
        assert tap.done[2].wait(10 if prefetch else 0.3) is prefetch
        assert len(tap.sent) == (2 if prefetch else 1)
        assert [len(p["items"]) for p in pages] == [500, 200]
        assert len(tap.sent) == 3 and cluster.stats.pages == 3
    assert prefetch_threads() == []


@pytest.mark.fake_only(FAKE)
@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "no-prefetch"])
def test_error_on_page_two_is_raised_only_when_the_caller_reaches_page_two(
    k8s_backend: K8sBackend, prefetch: bool
) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    cluster, sleep = facade(fc, prefetch_pages=prefetch)
    tap = Tap(cluster)
    tap.after[1] = lambda: fc.faults.deny("GET", PODS, times=1)  # page 2's request gets a 403
    pages = open_pages(cluster)
    first = next(pages)  # no error yet: page 1 is fine
    if prefetch:
        assert tap.done[2].wait(10)  # page 2 has already failed, in the background ...
    consumed = [p["metadata"]["name"] for p in first["items"]]  # ... and the caller is unaffected
    assert len(consumed) == 500 and cluster.stats.pages == 1
    with pytest.raises(AccessDenied, match=r"cannot list pods in namespace bulk \(403"):
        next(pages)
    assert len(tap.sent) == 2 and len(served(fc)) == 2  # 403 is not retried, nothing after it
    assert cluster.retry_count == 0 and sleep.calls == []
    assert cluster.stats.pages == 1
    assert prefetch_threads() == []


@pytest.mark.fake_only(FAKE)
def test_retries_of_a_prefetched_page_are_counted_and_results_unchanged(k8s_backend: K8sBackend) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    cluster, sleep = facade(fc, retry_policy=FAST_RETRIES, prefetch_pages=True)
    tap = Tap(cluster)
    tap.after[1] = lambda: fc.faults.server_error("GET", PODS, times=2)  # page 2: 500, 500, 200
    got = [p["metadata"]["name"] for p in cluster.list("v1", "pods", "bulk", label_selector="app=x")]
    assert got == sorted(got) and len(set(got)) == 1200
    assert cluster.retry_count == 2 and len(sleep.calls) == 2
    assert cluster.stats.requests == 5 and cluster.stats.pages == 3
    assert [s.thread for s in tap.sent][1:] == [THREAD] * 4
    assert len(served(fc)) == 5
    assert prefetch_threads() == []


@pytest.mark.fake_only(FAKE)
@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "no-prefetch"])
def test_early_close_leaves_no_thread_and_at_most_one_extra_request(
    k8s_backend: K8sBackend, prefetch: bool
) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    cluster, _ = facade(fc, prefetch_pages=prefetch)
    tap = Tap(cluster)
    pages = open_pages(cluster, page_size=100)  # 12 pages
    assert [len(next(pages)["items"]) for _ in range(2)] == [100, 100]
    pages.close()
    assert prefetch_threads() == []
    assert len(tap.sent) == (3 if prefetch else 2) and cluster.stats.pages == 2
    time.sleep(0.2)  # nothing more trickles in after the close
    assert len(tap.sent) == len(served(fc)) == (3 if prefetch else 2)

    # The caller's loop breaks (the generator is dropped, not closed explicitly).
    fc.server.reset_counts()
    before = len(tap.sent)
    for i, _pod in enumerate(cluster.list("v1", "pods", "bulk", page_size=100)):
        if i == 250:  # on page 3
            break
    assert prefetch_threads() == []
    assert len(tap.sent) - before == (4 if prefetch else 3) == len(served(fc))


@pytest.mark.fake_only(FAKE)
def test_close_during_a_failing_prefetch_tries_no_retry(k8s_backend: K8sBackend) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    cluster, sleep = facade(fc, retry_policy=FAST_RETRIES, prefetch_pages=True)
    tap = Tap(cluster)
    tap.after[1] = lambda: fc.faults.server_error("GET", PODS, times=None)  # page 2 always fails
    caller = threading.current_thread()
    # Page 2's request is held until the caller is inside close(), waiting for it.
    tap.before[2] = lambda: wait_until_in(caller, "discard")
    pages = open_pages(cluster)
    next(pages)
    pages.close()  # returns once the in-flight request is over; its 500 is dropped, not retried
    assert prefetch_threads() == []
    assert len(tap.sent) == 2 and cluster.retry_count == 0 and sleep.calls == []
    time.sleep(0.2)
    assert len(tap.sent) == len(served(fc)) == 2


@pytest.mark.fake_only(FAKE)
@pytest.mark.parametrize("prefetch", [True, False], ids=["prefetch", "no-prefetch"])
def test_expired_continue_token_recovers_with_the_inconsistent_continuation(
    k8s_backend: K8sBackend, prefetch: bool
) -> None:
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    cluster, _ = facade(fc, prefetch_pages=prefetch)
    tap = Tap(cluster)
    fresh: list[str] = []

    def expired() -> Any:
        """410 Expired for page 2's token, offering an equivalent token (another rv) to go on."""
        token = tap.sent[1].token
        assert token is not None
        rv, key = decode_continue(token)
        fresh.append(encode_continue(rv + 1000, key))
        body = (
            '{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,'
            f'"message":"continue token expired","metadata":{{"continue":"{fresh[0]}"}}}}'
        ).encode()
        return synthetic(410, "Gone", body)

    tap.before[2] = expired
    got = [p["metadata"]["name"] for p in cluster.list("v1", "pods", "bulk", label_selector="app=x")]
    assert got == [f"p{i:05d}" for i in range(1200)]
    tokens = tap.tokens()
    assert len(tokens) == 4 and tokens[0] is None and tokens[2] == fresh[0] != tokens[1]
    assert len(served(fc)) == 3  # the 410 never reached the fake
    assert cluster.stats.pages == 3 and cluster.retry_count == 0
    threads = [s.thread for s in tap.sent]
    assert threads[1:] == ([THREAD] * 3 if prefetch else [threading.current_thread().name] * 3)
    assert prefetch_threads() == []


def test_peek_reads_the_continue_token_only_from_metadata_before_items() -> None:
    head = '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"t1"},'
    assert _peek_continue((head + '"items":[]}').encode()) == "t1"
    assert (
        _peek_continue(b' {\n "kind" : "PodList" ,\n "metadata" : { "continue" : "t\\u00e9" } }') == "t\u00e9"
    )
    # Not cheaply known: the caller takes the token from the full parse instead.
    assert _peek_continue(b'{"apiVersion":"v1","items":[],"kind":"L","metadata":{"continue":"t"}}') is None
    assert _peek_continue(b'{"metadata":{"continue":"' + b"t" * 20000 + b'"},"items":[]}') is None
    for body in (b"", b"[]", b"{}", b"null", b'{"metadata":null}', b'{"metadata":{"continue":5}}'):
        assert _peek_continue(body) is None
    assert _peek_continue(b'{"metadata":{"resourceVersion":"7"},"items":[]}') is None  # last page


def test_list_bodies_put_metadata_before_items_so_the_token_is_read_early(k8s_backend: K8sBackend) -> None:
    """The fake and the real kube-apiserver both write ``metadata`` (with ``continue``) before
    ``items``: the next page's request starts before the current page is decoded."""
    ns = k8s_backend.namespace("bulk")
    k8s_backend.seed(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            *(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": ns}}
                for i in range(30)
            ),
        ]
    )
    cluster, _ = backend_facade(k8s_backend)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    first = cluster.request("GET", path, Target("list", "", "configmaps", ns), query=[("limit", 10)])
    token = json.loads(first.data)["metadata"]["continue"]
    assert token and _peek_continue(first.data) == token


@pytest.mark.fake_only(FAKE)
def test_items_before_metadata_still_prefetches_after_the_parse(k8s_backend: K8sBackend) -> None:
    """Go encodes an unstructured (custom resource) list as a map: sorted keys, items first."""
    fc = fake_of(k8s_backend)
    seed(fc, 1200)
    cluster, _ = facade(fc, prefetch_pages=True)
    tap = Tap(cluster)
    tap.rewrite = lambda data: json.dumps(json.loads(data), sort_keys=True).encode()
    got = [p["metadata"]["name"] for p in cluster.list("v1", "pods", "bulk", label_selector="app=x")]
    assert got == [f"p{i:05d}" for i in range(1200)] and cluster.stats.pages == 3
    tokens = tap.tokens()
    assert len(tokens) == 3 and tokens[0] is None and None not in tokens[1:]
    assert [s.thread for s in tap.sent][1:] == [THREAD, THREAD]
    assert prefetch_threads() == []
