"""Fixtures for the fake-cluster tests (the aicr plugin exposes the same ones to users)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aicr_pytest.testing import FakeCluster


@pytest.fixture
def api(aicr_fake_cluster: FakeCluster) -> Iterator[Any]:
    """A real ``kubernetes.client.ApiClient`` built from the fake's kubeconfig file."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(aicr_fake_cluster.kubeconfig_path))
    yield client
    client.close()
