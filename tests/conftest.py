import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MOVINGAI = ROOT.parent / "shared" / "movingai"

sys.path.insert(0, str(TESTS))


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="run the long opt-in tests (all Moving AI scenarios, soaks)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long opt-in test, run with --slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="opt-in: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def movingai_dir():
    if not MOVINGAI.is_dir():
        pytest.skip(f"Moving AI benchmark folder not found at {MOVINGAI}")
    return MOVINGAI
