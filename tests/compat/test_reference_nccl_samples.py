"""The NCCL launcher-log parser on AICR's own NCCL samples (read in place from ../shared/reference):
the value AICR asserts or derives for each, its transport markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_pytest import nccl
from tests.unit.test_nccl_parser import aicr_value

pytestmark = pytest.mark.compat


def samples(reference_dir: Path) -> Path:
    return reference_dir / "samples"


# --- the AICR samples (INDEX.md) ---------------------------------------------------------------

# file → (our value or None for a parse error, AICR's value per INDEX.md or None for its error)
SAMPLE_VALUES: dict[str, tuple[float | None, float | None]] = {
    # asserted by AICR: 450.30 (out-of-place busbw of the 16 GiB row, not the 225.15 average)
    "nccl-allreduce-h100-eks-16g.log": (450.30, 450.30),
    # derived: 333.47 (out-of-place; the in-place column says 333.51)
    "nccl-launcher-log-complete-8g.log": (333.47, 333.47),
    # derived: parse error (header only)
    "nccl-launcher-log-header-only.log": (None, None),
    # NCCL bootstrap line + mpirun noise only
    "nccl-launcher-log-init-noise.log": (None, None),
    # derived: the trailer alone has no data row -> parse error
    "nccl-launcher-log-summary-trailer-only.log": (None, None),
    # derived: 337.87 (16 GiB row, headerless rows of a termination message, no trailing newline)
    "nccl-termination-log-results-rows.log": (337.87, 337.87),
    # asserted: "could not find bandwidth value in logs"
    "nccl-launcher-log-fastrak-teardown-rotated.log": (None, None),
    "nccl-launcher-termination-message-orte-failed.txt": (None, None),
    # transport samples carry no table
    "nccl-transport-net-efa-libfabric.log": (None, None),
    "nccl-transport-nvls-mnnvl.log": (None, None),
    "nccl-transport-silent.log": (None, None),
}


def test_every_nccl_sample_is_covered(reference_dir: Path) -> None:
    on_disk = {p.name for p in samples(reference_dir).iterdir() if p.name.startswith("nccl-")}
    assert on_disk == set(SAMPLE_VALUES)


@pytest.mark.parametrize("name", sorted(SAMPLE_VALUES))
def test_sample_value_matches_aicr(reference_dir: Path, name: str) -> None:
    path = samples(reference_dir) / name
    ours, aicrs = SAMPLE_VALUES[name]
    assert aicr_value(path.read_text()) == aicrs  # what AICR's regex extracts from the same bytes
    if ours is None:
        with pytest.raises(nccl.NcclParseError) as err:
            nccl.parse_all_reduce_file(path)
        assert str(err.value).startswith(
            "failed to parse bandwidth from logs: could not find bandwidth value in logs"
        )
    else:
        assert nccl.parse_all_reduce_file(path).busbw_gbps == ours
        # the line-iterable API gives the same answer
        with path.open() as fh:
            assert nccl.parse_all_reduce(fh).busbw_gbps == ours


def test_eks_sample_details(reference_dir: Path) -> None:
    result = nccl.parse_all_reduce_file(samples(reference_dir) / "nccl-allreduce-h100-eks-16g.log")
    assert result.size_bytes == 17179869184
    assert result.avg_busbw_gbps == 225.15
    assert result.complete is True
    assert [(r.size_bytes, r.busbw_gbps) for r in result.rows] == [(1024, 0.07), (17179869184, 450.30)]
    assert result.to_json()["transport"] == {"network": None, "nvls": False}


def test_trailer_only_sample_keeps_the_average_for_the_report(reference_dir: Path) -> None:
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce_file(samples(reference_dir) / "nccl-launcher-log-summary-trailer-only.log")
    assert err.value.avg_busbw_gbps == 333.49


def test_rotated_log_recovers_with_appended_termination_rows(reference_dir: Path) -> None:
    # GKE (#1713): the streamed log lost its table; the launcher's termination message is appended.
    rotated = (samples(reference_dir) / "nccl-launcher-log-fastrak-teardown-rotated.log").read_text()
    term = (samples(reference_dir) / "nccl-termination-log-results-rows.log").read_text()
    assert nccl.parse_all_reduce(rotated + "\n" + term).busbw_gbps == 337.87


@pytest.mark.parametrize(
    ("name", "variant", "error"),
    [
        ("nccl-transport-net-efa-libfabric.log", "net", None),
        ("nccl-transport-net-efa-libfabric.log", "nvls", nccl.MSG_NVLS_NOT_AVAILABLE),
        ("nccl-transport-nvls-mnnvl.log", "nvls", None),
        ("nccl-transport-nvls-mnnvl.log", "net", nccl.MSG_NET_NO_BANNER),
        ("nccl-transport-silent.log", "default", None),
        ("nccl-transport-silent.log", "nvls", nccl.MSG_NVLS_NOT_AVAILABLE),
        ("nccl-transport-silent.log", "net", nccl.MSG_NET_NO_BANNER),
    ],
)
def test_transport_samples(reference_dir: Path, name: str, variant: nccl.Variant, error: str | None) -> None:
    with pytest.raises(nccl.NcclParseError) as err:  # no table in these samples
        nccl.parse_all_reduce_file(samples(reference_dir) / name)
    transport = err.value.transport
    if error is None:
        nccl.verify_transport(variant, transport)
    else:
        with pytest.raises(nccl.TransportError) as terr:
            nccl.verify_transport(variant, transport)
        assert str(terr.value) == error


def test_transport_sample_network_name(reference_dir: Path) -> None:
    with pytest.raises(nccl.NcclParseError) as err:
        nccl.parse_all_reduce_file(samples(reference_dir) / "nccl-transport-net-efa-libfabric.log")
    assert err.value.transport.network == "AWS Libfabric"
    assert err.value.transport.network_plugin == "AWS"
