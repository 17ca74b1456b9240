#!/usr/bin/env bash
# The engine clients' tests, one entry point (.ci/run calls it):
#
#   engine_clients/test.sh
#
# 1. installs what the engine tests need, cached where it can: gdtoolkit into the active venv,
#    Mono (mono-mcs, mono-runtime), Godot 4 in a Debian sid tree (see godot/run_tests.sh);
# 2. static checks of every GDScript file: gdparse, gdlint, gdformat --check;
# 3. starts a real `pathserver serve` on a free loopback port, serving a temporary copy of the
#    repository's maps/ plus the Godot tests' map (the demo uploads its level), and a ZeroMQ peer that never answers
#    (`conformance.py silent`, for the timeout scenario); writes the server's option list,
#    `pathserver options --json`, which the engine tests check their clients' options against;
# 4. runs the Godot addon's tests in a headless Godot 4, the C# client's tests under Mono (both
#    include the shared scenarios of conformance.json) and those scenarios with the Python
#    client (`conformance.py run`), all against that one server;
# 5. prints `godot: N passed, N failed`, `csharp: N passed, N failed` and
#    `python conformance: N passed, N failed`.
#
# The engine tests get their inputs as environment variables: PATHSERVER_MAPS,
# PATHSERVER_PYTHON, PATHSERVER_SILENT_ENDPOINT, PATHSERVER_CONFORMANCE and PATHSERVER_OPTIONS.
# PATHSERVER_BUNDLE, set by the caller (.ci/run sets it to the bundle it builds), names a
# folder `pathserver bundle` built: the Godot export checks export the demo with it and run
# the exported game; unset, they are skipped, and the summary says so.
# PATHSERVER_OPTIONS set beforehand names a file to use instead of running
# `pathserver options --json` (a server checkout without that command).
#
# When Godot cannot be installed it prints `godot: SKIPPED (reason)` in a banner and still runs
# the rest; set ENGINE_CLIENTS_REQUIRE_GODOT=1 to make that a failure. Exits non-zero when a
# check or a test fails. Works from any directory; uses the active venv's Python, else the
# repository's .venv, else python3.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
GODOT_DIR="$HERE/godot"

if [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/python" ]]; then
    PY="$VIRTUAL_ENV/bin/python"
elif [[ -x "$REPO/.venv/bin/python" ]]; then
    PY="$REPO/.venv/bin/python"
else
    PY="$(command -v python3)"
fi
export PATHSERVER_PYTHON="$PY"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/pathserver-engines.XXXXXX")"
SERVER_PID=""
SILENT_PID=""
stop_process() {
    local pid="$1"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -9 "$pid" 2>/dev/null
    fi
}
cleanup() {
    stop_process "$SERVER_PID"
    stop_process "$SILENT_PID"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

section() { printf '\n== %s\n' "$*"; }
FAILURES=()

# -- 1. install -------------------------------------------------------------------------------
section "install"
install_started=$SECONDS
if ! "$PY" -c 'import gdtoolkit' 2>/dev/null; then
    "$PY" -m pip install -q 'gdtoolkit>=4,<5' || FAILURES+=("pip install gdtoolkit")
fi
if ! command -v mcs >/dev/null || ! command -v mono >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q mono-mcs mono-runtime >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q mono-mcs mono-runtime >/dev/null 2>&1; } \
        || echo "mono could not be installed; csharp/run_tests.sh will say more"
fi
GODOT_SKIP=""
godot_install_log="$WORK/godot-install.log"
"$GODOT_DIR/run_tests.sh" install 2>"$godot_install_log"
godot_install_rc=$?
cat "$godot_install_log"
if [[ $godot_install_rc != 0 ]]; then
    GODOT_SKIP="$(grep -v 'last lines' "$godot_install_log" | tail -n 1 | sed 's/^godot: //')"
    GODOT_SKIP="${GODOT_SKIP:-engine install failed (exit $godot_install_rc)}"
fi
echo "install step took $((SECONDS - install_started)) s"

# -- 2. static checks -------------------------------------------------------------------------
section "GDScript static checks (gdparse, gdlint, gdformat --check)"
mapfile -t GD_FILES < <(find "$GODOT_DIR" \( -name .godot -o -path "$GODOT_DIR/tests/addons" \) -prune \
    -o -name '*.gd' -print | sort)
echo "${#GD_FILES[@]} files"
static_ok=1
# As modules of the Python that has gdtoolkit: its scripts may not be on PATH.
"$PY" -m gdtoolkit.parser "${GD_FILES[@]}" >/dev/null || static_ok=0
"$PY" -m gdtoolkit.linter "${GD_FILES[@]}" || static_ok=0
"$PY" -m gdtoolkit.formatter --check "${GD_FILES[@]}" || static_ok=0
if [[ $static_ok == 1 ]]; then
    echo "static checks: ok"
else
    echo "static checks: FAILED"
    FAILURES+=("GDScript static checks")
fi

# -- 3. a real server -------------------------------------------------------------------------
section "server"
mkdir -p "$WORK/maps"
cp -R "$REPO/maps/." "$WORK/maps/" 2>/dev/null || true
cp "$GODOT_DIR/tests/maps/"* "$WORK/maps/"
export PATHSERVER_MAPS="$WORK/maps"
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT="$(free_port)"
ENDPOINT="tcp://127.0.0.1:$PORT"
: >"$WORK/server.log"
(cd "$REPO" && exec "$PY" -m pathserver serve --maps "$WORK/maps" --bind "$ENDPOINT") \
    >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
server_ready=0
for _ in $(seq 1 1200); do
    if grep -q "^pathserver ready on $ENDPOINT" "$WORK/server.log"; then
        server_ready=1
        break
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
if [[ $server_ready == 1 ]]; then
    grep -m1 '^pathserver ready' "$WORK/server.log"
else
    echo "the server did not become ready; its output:"
    tail -n 30 "$WORK/server.log"
    FAILURES+=("server start")
fi

# A peer that completes the ZeroMQ handshake and never answers: the timeout scenario.
SILENT_ENDPOINT="tcp://127.0.0.1:$(free_port)"
"$PY" "$HERE/conformance.py" silent --bind "$SILENT_ENDPOINT" >"$WORK/silent.log" 2>&1 &
SILENT_PID=$!
for _ in $(seq 1 100); do
    grep -q '^silent on ' "$WORK/silent.log" && break
    kill -0 "$SILENT_PID" 2>/dev/null || break
    sleep 0.1
done
if grep -q '^silent on ' "$WORK/silent.log"; then
    echo "a peer that never answers on $SILENT_ENDPOINT"
    export PATHSERVER_SILENT_ENDPOINT="$SILENT_ENDPOINT"
else
    echo "the silent peer did not start:"
    cat "$WORK/silent.log"
    FAILURES+=("silent peer start")
fi
export PATHSERVER_CONFORMANCE="$HERE/conformance.json"

# The server's one definition of the path options; the engine tests check their clients'
# option names and defaults against it.
if [[ -n "${PATHSERVER_OPTIONS:-}" ]]; then
    echo "the server's options from PATHSERVER_OPTIONS=$PATHSERVER_OPTIONS (not from the command)"
elif (cd "$REPO" && "$PY" -m pathserver options --json) >"$WORK/options.json" 2>"$WORK/options.err"; then
    export PATHSERVER_OPTIONS="$WORK/options.json"
    echo "the server's options: $("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["options"]))' "$PATHSERVER_OPTIONS") from \`pathserver options --json\`"
else
    echo "\`$PY -m pathserver options --json\` failed: the engine tests check their clients' option"
    echo "names and defaults against its output, so this checkout's pathserver must have the"
    echo "\`options\` subcommand (or set PATHSERVER_OPTIONS to a file in its format). It said:"
    tail -n 5 "$WORK/options.err"
    FAILURES+=("pathserver options --json")
fi

# -- 4. engine tests --------------------------------------------------------------------------
closing() { grep -E '([0-9]+) passed, ([0-9]+) failed' "$1" | tail -n 1 | grep -oE '[0-9]+ passed, [0-9]+ failed'; }

GODOT_LINE=""
section "Godot 4 addon tests"
if [[ -n "$GODOT_SKIP" ]]; then
    GODOT_LINE="godot: SKIPPED ($GODOT_SKIP)"
    [[ "${ENGINE_CLIENTS_REQUIRE_GODOT:-0}" == 1 ]] && FAILURES+=("godot engine not installed")
elif [[ $server_ready == 1 ]]; then
    "$GODOT_DIR/run_tests.sh" "$ENDPOINT" 2>&1 | tee "$WORK/godot.log"
    godot_rc=${PIPESTATUS[0]}
    result="$(closing "$WORK/godot.log")"
    GODOT_LINE="godot: ${result:-no closing line (exit $godot_rc)}"
    [[ $godot_rc == 0 && -n "$result" ]] || FAILURES+=("godot tests")
else
    GODOT_LINE="godot: not run (no server)"
fi

PYTHON_LINE=""
section "Python client conformance"
if [[ $server_ready == 1 && -n "${PATHSERVER_SILENT_ENDPOINT:-}" ]]; then
    (cd "$REPO" && "$PY" "$HERE/conformance.py" run "$ENDPOINT" --silent-endpoint "$PATHSERVER_SILENT_ENDPOINT") \
        2>&1 | tee "$WORK/python.log"
    python_rc=${PIPESTATUS[0]}
    result="$(closing "$WORK/python.log")"
    PYTHON_LINE="python conformance: ${result:-no closing line (exit $python_rc)}"
    [[ $python_rc == 0 && -n "$result" ]] || FAILURES+=("python conformance")
else
    PYTHON_LINE="python conformance: not run (no server)"
fi

CSHARP_LINE=""
section "C# client tests"
if [[ ! -x "$HERE/csharp/run_tests.sh" ]]; then
    CSHARP_LINE="csharp: MISSING (engine_clients/csharp/run_tests.sh not found)"
    FAILURES+=("csharp tests missing")
elif [[ $server_ready == 1 ]]; then
    "$HERE/csharp/run_tests.sh" "$ENDPOINT" 2>&1 | tee "$WORK/csharp.log"
    csharp_rc=${PIPESTATUS[0]}
    result="$(closing "$WORK/csharp.log")"
    CSHARP_LINE="csharp: ${result:-no closing line (exit $csharp_rc)}"
    [[ $csharp_rc == 0 && -n "$result" ]] || FAILURES+=("csharp tests")
else
    CSHARP_LINE="csharp: not run (no server)"
fi

# -- 5. summary -------------------------------------------------------------------------------
section "summary"
if [[ -n "$GODOT_SKIP" ]]; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!!! THE GODOT ENGINE COULD NOT BE INSTALLED: its tests did NOT run."
    echo "!!! Only the GDScript static checks ran. Reason: $GODOT_SKIP"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
fi
echo "static: $([[ $static_ok == 1 ]] && echo ok || echo FAILED)"
echo "$GODOT_LINE"
if [[ -z "${PATHSERVER_BUNDLE:-}" ]]; then
    echo "godot export with a bundle: SKIPPED (PATHSERVER_BUNDLE not set; .ci/run sets it)"
fi
echo "$CSHARP_LINE"
echo "$PYTHON_LINE"
if [[ ${#FAILURES[@]} -gt 0 ]]; then
    if [[ -s "$WORK/server.log" ]]; then
        echo "-- the server's last log lines:"
        tail -n 30 "$WORK/server.log"
    fi
    echo "engine clients: FAILED (${FAILURES[*]})"
    exit 1
fi
echo "engine clients: ok"
