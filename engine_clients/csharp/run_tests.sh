#!/usr/bin/env bash
# Compile the C# client, laid out as a Unity package, with Debian's Mono and run its test
# program against a real server.
#
#   engine_clients/csharp/run_tests.sh tcp://127.0.0.1:PORT
#
# Installs mono-mcs and mono-runtime when missing (apt-get; idempotent). In a temporary
# directory it compiles, as Unity compiles the package:
#   PathServer.Client.dll        every .cs under Runtime/ (Runtime/PathServer.Client.asmdef's
#                                assembly), alone;
#   PathServer.Client.Tests.exe  the test program, Tests~/Tests*.cs, against it
#                                (Runtime/AssemblyInfo.cs shows it the internals), and Demo.exe,
#                                Tests~/Demo.cs;
#   Sample.dll                   the package's samples (Samples~/*/) against it and a stub of the
#                                few UnityEngine types they use (Tests~/UnityEngineStub.cs);
#   PathServerClient.dll         the Runtime/PathServerClient*.cs files on their own (the client's
#                                files, which a project can drop in without the package);
# then runs the tests under `timeout` and prints "csharp: N passed, N failed" as its last line.
# Exits non-zero on any failure, including a build failure or a test program that dies without
# its closing line.
# Environment: CSHARP_TEST_TIMEOUT (seconds, default 420), CSHARP_TEST_ARGS (extra arguments
# for the tests, e.g. "--map example" or "--only reconnect --verbose"); PATHSERVER_OPTIONS (the
# output of `pathserver options --json`), PATHSERVER_SILENT_ENDPOINT (a peer that never
# answers) and PATHSERVER_PYTHON (a Python with pathserver, for EmbeddedServer's fallback),
# which engine_clients/test.sh sets, become --options, --silent-endpoint and --python;
# PATHSERVER_BUNDLE (a folder built by `pathserver bundle`), when set, becomes --bundle.
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

# Unity leaves out hidden entries and those ending in "~" (Samples~, Tests~).
mapfile -t runtime < <(find "$here/Runtime" \( -name '.*' -o -name '*~' \) -prune -o -name '*.cs' -print | sort)
mcs -nologo -warn:4 -target:library -out:"$build/PathServer.Client.dll" "${runtime[@]}" >&2 \
    || fail "the package's assembly (Runtime/) does not compile"
mcs -nologo -warn:4 -out:"$build/PathServer.Client.Tests.exe" -r:"$build/PathServer.Client.dll" "$here"/Tests~/Tests*.cs >&2 \
    || fail "the tests, Tests~/Tests*.cs, do not compile against the package's assembly"
mcs -nologo -warn:4 -out:"$build/Demo.exe" -r:"$build/PathServer.Client.dll" "$here/Tests~/Demo.cs" >&2 \
    || fail "Tests~/Demo.cs does not compile against the package's assembly"
mcs -nologo -warn:4 -target:library -out:"$build/Sample.dll" -r:"$build/PathServer.Client.dll" \
    "$here"/Samples~/*/*.cs "$here/Tests~/UnityEngineStub.cs" >&2 \
    || fail "the samples (Samples~/) do not compile against the package's assembly and the UnityEngine stub"
mkdir "$build/single"
client=("$here"/Runtime/PathServerClient*.cs)
mcs -nologo -warn:4 -target:library -out:"$build/single/PathServerClient.dll" "${client[@]}" >&2 \
    || fail "the Runtime/PathServerClient*.cs files do not compile on their own"
echo "csharp: compiled the package's assembly (${#runtime[@]} files), its tests, the demo, the samples and the lone client (${#client[@]} files)" >&2

shared=(--protocol-doc "$repo/docs/protocol.md" --conformance "$here/../conformance.json" --package "$here")
[[ -n "${PATHSERVER_OPTIONS:-}" ]] && shared+=(--options "$PATHSERVER_OPTIONS")
[[ -n "${PATHSERVER_SILENT_ENDPOINT:-}" ]] && shared+=(--silent-endpoint "$PATHSERVER_SILENT_ENDPOINT")
[[ -n "${PATHSERVER_PYTHON:-}" ]] && shared+=(--python "$PATHSERVER_PYTHON")
[[ -n "${PATHSERVER_BUNDLE:-}" ]] && shared+=(--bundle "$PATHSERVER_BUNDLE")

# shellcheck disable=SC2086  # CSHARP_TEST_ARGS is split on purpose
timeout -k 10 "${CSHARP_TEST_TIMEOUT:-420}" \
    mono "$build/PathServer.Client.Tests.exe" "$endpoint" "${shared[@]}" ${CSHARP_TEST_ARGS:-} \
    | tee "$build/output.txt"
status=$?

closing=$(tail -n 1 "$build/output.txt")
if [[ "$closing" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=${BASH_REMATCH[1]}
    failed=${BASH_REMATCH[2]}
    if [[ $status -ne 0 && $failed -eq 0 ]]; then
        fail "the tests exited with status $status after their closing line" "$passed" 1
    fi
    echo "csharp: $passed passed, $failed failed"
    [[ $status -eq 0 && $failed -eq 0 ]]
    exit
fi

# No closing line: the program hung (timeout gives 124) or crashed. Count what it printed.
passed=$(grep -c '^ok   ' "$build/output.txt")
failed=$(( $(grep -c '^FAIL ' "$build/output.txt") + 1 ))
if [[ $status -eq 124 || $status -eq 137 ]]; then
    fail "the tests timed out after ${CSHARP_TEST_TIMEOUT:-420} s without their closing line" "$passed" "$failed"
fi
fail "the tests exited with status $status without their closing line" "$passed" "$failed"
