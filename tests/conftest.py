import sys
from pathlib import Path

import pytest

from pathserver import kernel_cache

# Before any test module imports the kernels: the suite and the servers it starts share
# the folder pathserver's own entry points use (or NUMBA_CACHE_DIR, as CI sets it).
kernel_cache.configure()

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MOVINGAI = ROOT.parent / "shared" / "movingai"
#: The --slow tests' budget instead of pyproject's 120 s backstop: the soaks take about a
#: minute each on an idle 2-core box, the long wire-garbage flood allows itself 260 s.
SLOW_TIMEOUT_S = 600

sys.path.insert(0, str(TESTS))


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="run the long opt-in tests (all Moving AI scenarios, soaks)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long opt-in test, run with --slow")


def pytest_collection_modifyitems(config, items):
    slow = [item for item in items if "slow" in item.keywords]
    for item in slow:
        if item.get_closest_marker("timeout") is None:  # a test's own budget wins
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="opt-in: run with --slow")
    for item in slow:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def movingai_dir():
    if not MOVINGAI.is_dir():
        pytest.skip(f"Moving AI benchmark folder not found at {MOVINGAI}")
    return MOVINGAI
