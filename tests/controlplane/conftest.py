"""The real control plane (``controlplane`` fixture) for the tests in this directory.

The fixture comes from :mod:`tests.harness.backend_fixtures` (imported by tests/conftest.py),
so these tests and the backend-parametrized scenario tests share one control plane per session.
"""
