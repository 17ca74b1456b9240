#!/usr/bin/env bash
# Compile the C# client with Debian's Mono and run its test program against a real server.
#
#   engine_clients/csharp/run_tests.sh tcp://127.0.0.1:PORT
#
# Installs mono-mcs and mono-runtime when missing (apt-get; idempotent), builds Tests.exe and
# Demo.exe in a temporary directory, runs Tests.exe under `timeout`, and prints
# "csharp: N passed, N failed" as its last line. Exits non-zero on any failure, including a
# build failure or a test program that dies without its closing line.
# Environment: CSHARP_TEST_TIMEOUT (seconds, default 300), CSHARP_TEST_ARGS (extra arguments
# for Tests.exe, e.g. "--map example" or "--only reconnect --verbose"); PATHSERVER_OPTIONS (the
# output of `pathserver options --json`) and PATHSERVER_SILENT_ENDPOINT (a peer that never
# answers), which engine_clients/test.sh sets, become --options and --silent-endpoint.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
endpoint=${1:-}
if [[ -z "$endpoint" ]]; then
    echo "usage: $0 tcp://HOST:PORT" >&2
    echo "csharp: 0 passed, 1 failed"
    exit 2
fi

fail() {
    echo "csharp: $1" >&2
    echo "csharp: ${2:-0} passed, ${3:-1} failed"
    exit 1
}

if ! command -v mcs >/dev/null 2>&1 || ! command -v mono >/dev/null 2>&1; then
    echo "csharp: installing mono-mcs and mono-runtime" >&2
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q mono-mcs mono-runtime >&2 \
        || { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q mono-mcs mono-runtime >&2; } \
        || fail "could not install Mono (apt-get install mono-mcs mono-runtime)"
fi

build=$(mktemp -d "${TMPDIR:-/tmp}/pathserver-csharp.XXXXXX")
trap 'rm -rf "$build"' EXIT

mcs -nologo -warn:4 -out:"$build/Tests.exe" "$here/PathServerClient.cs" "$here/Tests.cs" >&2 \
    || fail "Tests.exe does not compile"
mcs -nologo -warn:4 -out:"$build/Demo.exe" "$here/PathServerClient.cs" "$here/Demo.cs" >&2 \
    || fail "Demo.exe does not compile"

shared=(--protocol-doc "$repo/docs/protocol.md" --conformance "$here/../conformance.json")
[[ -n "${PATHSERVER_OPTIONS:-}" ]] && shared+=(--options "$PATHSERVER_OPTIONS")
[[ -n "${PATHSERVER_SILENT_ENDPOINT:-}" ]] && shared+=(--silent-endpoint "$PATHSERVER_SILENT_ENDPOINT")

# shellcheck disable=SC2086  # CSHARP_TEST_ARGS is split on purpose
timeout -k 10 "${CSHARP_TEST_TIMEOUT:-300}" \
    mono "$build/Tests.exe" "$endpoint" "${shared[@]}" ${CSHARP_TEST_ARGS:-} \
    | tee "$build/output.txt"
status=$?

closing=$(tail -n 1 "$build/output.txt")
if [[ "$closing" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=${BASH_REMATCH[1]}
    failed=${BASH_REMATCH[2]}
    if [[ $status -ne 0 && $failed -eq 0 ]]; then
        fail "Tests.exe exited with status $status after its closing line" "$passed" 1
    fi
    echo "csharp: $passed passed, $failed failed"
    [[ $status -eq 0 && $failed -eq 0 ]]
    exit
fi

# No closing line: the program hung (timeout gives 124) or crashed. Count what it printed.
passed=$(grep -c '^ok   ' "$build/output.txt")
failed=$(( $(grep -c '^FAIL ' "$build/output.txt") + 1 ))
if [[ $status -eq 124 || $status -eq 137 ]]; then
    fail "Tests.exe timed out after ${CSHARP_TEST_TIMEOUT:-300} s without its closing line" "$passed" "$failed"
fi
fail "Tests.exe exited with status $status without its closing line" "$passed" "$failed"
