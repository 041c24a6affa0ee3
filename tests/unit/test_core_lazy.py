"""core.lazy: package re-exports imported on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aicr_pytest.core.lazy import lazy_exports


def test_names_are_imported_on_first_use_and_cached() -> None:
    code = (
        "import sys, aicr_pytest.nccl as n\n"
        "assert 'aicr_pytest.nccl.parse' not in sys.modules, 'imported eagerly'\n"
        "f = n.parse_all_reduce\n"
        "assert 'aicr_pytest.nccl.parse' in sys.modules and vars(n)['parse_all_reduce'] is f\n"
        "assert 'parse_all_reduce' in dir(n)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    namespace: dict[str, object] = {"__name__": "pkg"}
    getattr_, dir_ = lazy_exports(namespace, {"parse_go_duration": "aicr_pytest.core.goduration"})
    assert "parse_go_duration" in dir_()
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        getattr_("nope")
    value = getattr_("parse_go_duration")
    assert value("1m30s") == 90.0 and namespace["parse_go_duration"] is value


def test_names_of_one_module_come_from_one_copy_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester drops modules an inner run imported: a function and the exception class it raises,
    cached at different times, would come from two copies and ``pytest.raises`` would miss."""
    from aicr_pytest.nccl import verdict

    namespace: dict[str, object] = {"__name__": "pkg"}
    names = {"TransportError": verdict.__name__, "verify_transport": verdict.__name__}
    getattr_, _ = lazy_exports(namespace, names)
    error_class = getattr_("TransportError")
    monkeypatch.delitem(sys.modules, verdict.__name__)  # as pytester's snapshot restore does
    check = getattr_("verify_transport")
    assert check.__globals__["TransportError"] is error_class
