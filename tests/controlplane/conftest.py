"""The real control plane (``controlplane`` fixture) for the tests in this directory."""

from aicr_pytest.testing.controlplane_fixtures import controlplane

__all__ = ["controlplane"]
