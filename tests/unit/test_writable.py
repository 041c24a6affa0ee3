"""Reports written whole or not at all, and the output/input paths a run refuses up front."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from aicr_pytest.core import writable
from aicr_pytest.core.errors import UsageError


def test_write_atomic_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "ctrf.json"
    assert writable.write_atomic(target, "one\n", "-o") == target
    assert target.read_text() == "one\n"
    target.chmod(0o640)
    writable.write_atomic(str(target), b"two\n", "-o")
    assert target.read_text() == "two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing report keeps its mode
    assert sorted(p.name for p in target.parent.iterdir()) == ["ctrf.json"]


def test_a_new_report_gets_the_mode_of_a_plain_open(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    writable.write_atomic(target, "x", "-o")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_keeps_the_old_report_and_names_path_and_errno(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "ctrf.json"
    target.write_text("old report\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(writable.OutputError) as err:
        writable.write_atomic(target, "new report\n", "--html")
    assert (
        str(err.value)
        == f"--html {target}: the output could not be written: ENOSPC (No space left on device)"
    )
    assert target.read_text() == "old report\n"  # never truncated, never half-replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ctrf.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_is_written_in_place_and_fails_with_enospc() -> None:
    with pytest.raises(writable.OutputError) as err:
        writable.write_atomic("/dev/full", "x" * 10, "-o")
    assert str(err.value) == "-o /dev/full: the output could not be written: ENOSPC (No space left on device)"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # the device is never replaced


def test_a_symlinked_report_replaces_the_link_target_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    writable.write_atomic(link, "new", "-o")
    assert link.is_symlink() and real.read_text() == "new"


def test_write_output_falls_back_and_still_raises(tmp_path: Path) -> None:
    with pytest.raises(writable.OutputError) as err:
        writable.write_output("/proc/x/report.html", "<p>page</p>", "--html")
    line = str(err.value)
    head = "--html /proc/x/report.html: the output could not be written: ENOENT (No such file or directory); "
    assert line.startswith(head + "it was written to ") and line.endswith(" instead")
    fallback = Path(line[len(head + "it was written to ") : -len(" instead")])
    assert fallback.read_text() == "<p>page</p>" and err.value.fallback == fallback
    fallback.unlink()


def test_the_probe_writes_a_byte_so_a_full_filesystem_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    real = tempfile.NamedTemporaryFile

    class Full:
        def __init__(self, **kwargs: object) -> None:
            self.inner = real(**kwargs)  # type: ignore[call-overload]

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def flush(self) -> None:
            return None

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", Full)
    with pytest.raises(UsageError) as err:
        writable.check_writable(str(tmp_path / "ctrf.json"), "--output")
    assert str(err.value) == (
        f"--output {tmp_path / 'ctrf.json'}: cannot write the report there: ENOSPC (No space left on device)"
    )
    assert list(tmp_path.iterdir()) == []


def test_two_outputs_on_one_file_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with pytest.raises(UsageError) as err:
        writable.check_distinct([("--output", "x.json"), ("--html", "sub/../x.json")])
    assert str(err.value) == (
        "--html sub/../x.json: the same file as --output x.json; give each output its own path"
    )
    with pytest.raises(UsageError) as err:
        writable.check_distinct([("--output", "y"), ("--junitxml", str(tmp_path / "y"))])
    assert str(err.value).startswith(f"--junitxml {tmp_path / 'y'}: the same file as --output y")


def test_an_output_on_an_input_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "recipe.yaml").write_text("kind: RecipeResult\n")
    (tmp_path / "alias.yaml").symlink_to(tmp_path / "recipe.yaml")
    with pytest.raises(UsageError) as err:
        writable.check_distinct([("--output", "alias.yaml")], [("--recipe", "recipe.yaml")])
    assert str(err.value) == (
        "--output alias.yaml: the same file as the input --recipe recipe.yaml; it would be overwritten"
    )


def test_stdout_devices_urls_and_configmaps_may_repeat(tmp_path: Path) -> None:
    writable.check_distinct(
        [("--output", "-"), ("--html", "/dev/null"), ("--junitxml", "/dev/null"), ("--x", "")],
        [("--recipe", "https://example.com/r.yaml"), ("--snapshot", "cm://ns/snap")],
    )
    writable.check_distinct([("--output", "cm://ns/a")], [("--recipe", "cm://ns/a")])
    writable.check_distinct([("--output", str(tmp_path / "a"))], [("--recipe", str(tmp_path / "b"))])


def test_inputs_of_names_each_file_input() -> None:
    values: dict[str, object] = {"recipe": "r.yaml", "snapshot": None, "data": "d", "config": "c.yaml"}
    assert writable.inputs_of(values) == [("--recipe", "r.yaml"), ("--data", "d"), ("--config", "c.yaml")]
