"""Fixtures for the reliability tests: one shared ``pathserver serve`` subprocess over the
small maps (tests that need their own server start one) and the table of
measured figures printed at the end of the run (also without ``-s``)."""

import pytest

from reliability.helpers import ServerProcess, record, small_maps
from pathserver.server.startup import warm_kernels


@pytest.fixture(scope="session")
def compiled():
    """The kernels compiled (or loaded from numba's cache) in this process."""
    warm_kernels()


@pytest.fixture(scope="session")
def small_maps_dir(tmp_path_factory):
    return small_maps(tmp_path_factory.mktemp("reliability-maps"))


@pytest.fixture(scope="session")
def served(small_maps_dir):
    """A real server process over the small maps, shared by the tests that only talk to
    it. Each test checks it is still alive afterwards."""
    server = ServerProcess(small_maps_dir)
    try:
        seconds = server.start()
        record("server", f"subprocess ready in {seconds:.2f} s (CLI defaults, {server.endpoint})")
        yield server
    finally:
        server.close()


@pytest.fixture
def live(served):
    """``served``, asserted alive and free of internal errors after the test."""
    yield served
    assert served.alive, f"the server died; stderr:\n{served.stderr_tail()}"
    assert "internal error" not in served.stderr_text(), served.stderr_tail()
