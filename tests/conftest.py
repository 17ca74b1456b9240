import os
import sys
import threading
from pathlib import Path

import pytest
import zmq

from pathserver import kernel_cache

# Before any test module imports the kernels: the suite and the servers it starts share
# the folder pathserver's own entry points use (or NUMBA_CACHE_DIR, as CI sets it).
kernel_cache.configure()

_SECOND_PROCESS = pytest.StashKey()
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MOVINGAI = ROOT.parent / "shared" / "movingai"
#: The --slow tests' budget instead of pyproject's 300 s backstop: the soaks take about a
#: minute each on an idle 2-core box, the long wire-garbage flood allows itself 260 s.
SLOW_TIMEOUT_S = 600

sys.path.insert(0, str(TESTS))

from reliability.helpers import FIGURES  # noqa: E402  (the suite's figures, printed at the end)


@pytest.fixture
def context():
    """A ZeroMQ context for a test's sockets, destroyed (LINGER 0) after it."""
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def pytest_sessionstart(session):
    """On an empty kernel cache (as in CI) and a second core, a second process compiles the
    second half of the server's warm-up while the tests compile what they need, as
    ``pathserver serve`` does; its kernels are merged into the cache as soon as it ends."""
    from pathserver.server import startup

    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the controller started the second process
    if startup.kernels_cached(startup.kernel_cache_dir()) or (os.cpu_count() or 1) < 2:
        return
    helper = startup.SecondProcess()

    def merge_when_done():
        helper.wait(None)
        helper.merge()

    threading.Thread(target=merge_when_done, name="kernels-second-process", daemon=True).start()
    session.config.stash[_SECOND_PROCESS] = helper


def pytest_sessionfinish(session):
    helper = session.config.stash.get(_SECOND_PROCESS, None)
    if helper is not None:
        helper.close()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its figures go to the controller
        workeroutput["figures"] = FIGURES


def pytest_testnodedown(node, error):
    """pytest-xdist: a worker's figures, for the controller's summary."""
    for section, lines in getattr(node, "workeroutput", {}).get("figures", {}).items():
        FIGURES.setdefault(section, []).extend(lines)


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for section, lines in FIGURES.items():
        for line in lines:
            terminalreporter.write_line(f"{section:>14}: {line}")


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


#: Set by .ci/run: CI must run every test but the opt-in ones, so a skip for any other
#: reason (the Moving AI maps not found, an extra not installed) fails the run there.
STRICT_SKIPS = os.environ.get("PATHSERVER_STRICT_SKIPS") == "1"
ALLOWED_SKIPS = ("opt-in: run with --slow", "all tests skipped by +SKIP option")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if STRICT_SKIPS and report.skipped and not hasattr(report, "wasxfail"):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if not any(allowed in reason for allowed in ALLOWED_SKIPS):
            report.outcome = "failed"
            report.longrepr = f"skipped in CI, where every test must run (PATHSERVER_STRICT_SKIPS=1): {reason}"


@pytest.fixture(scope="session")
def movingai_dir():
    if not MOVINGAI.is_dir():
        pytest.skip(f"Moving AI benchmark folder not found at {MOVINGAI}")
    return MOVINGAI
