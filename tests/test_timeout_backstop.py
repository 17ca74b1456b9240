"""The suite's backstop against hangs (issue 12): pytest-timeout, configured in
pyproject.toml, ends a test that runs too long with every thread's stack instead of
letting the whole run hang. These fail if that configuration silently goes away."""


def test_every_test_runs_under_a_timeout(request):
    config = request.config
    assert config.pluginmanager.hasplugin("timeout"), "pytest-timeout is not installed (the `test` extra)"
    # getini raises ValueError for a key no plugin registered.
    assert float(config.getini("timeout")) > 0
    # "thread" ends the run even when a thread is stuck in C code, on every platform.
    assert config.getini("timeout_method") == "thread"


def test_slow_tests_get_their_own_longer_budget(request):
    backstop = float(request.config.getini("timeout"))
    for item in request.session.items:
        if "slow" in item.keywords:
            marker = item.get_closest_marker("timeout")
            assert marker is not None, item.nodeid
            budget = marker.args[0] if marker.args else marker.kwargs["timeout"]
            assert float(budget) > backstop, item.nodeid
