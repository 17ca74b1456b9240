#!/usr/bin/env bash
# Run the Godot addon's test project inside a real Godot 4 engine, headless.
#
#   run_tests.sh install      make sure the engine is installed (cached), print where it is
#   run_tests.sh ENDPOINT     install if needed, then run tests/test_pathserver.gd against a
#                             running server at ENDPOINT (e.g. tcp://127.0.0.1:5555), then the
#                             demo for a few seconds as a player runs it (its embedded server
#                             on a free port, its level uploaded from its TileMapLayer) and its
#                             RTS, tactics, hex and floors scenes likewise, then a real export of the
#                             demo (see export_checks), then the Asset Library zip (pack_check);
#                             prints "N passed, N failed" last, each demo run and each export
#                             and zip check counted as one check
#
# Godot 4 is packaged only in Debian's unstable release and needs its newer libc, so it lives in a
# minimal `debootstrap --variant=minbase sid` tree, cached under $PATHSERVER_CI_CACHE
# (default /var/cache/pathserver-ci) and reused while present. The engine runs through the tree's
# own dynamic loader with --library-path: no chroot, so the test project, the repository and the
# host's Python (for the embedded-server option) stay reachable at their real paths.
#
# PATHSERVER_DEBIAN_MIRROR overrides the mirror (default: the one this machine's apt uses).
#
# Environment for the test itself:
#   PATHSERVER_MAPS     the maps folder the server at ENDPOINT serves (the embedded-server tests
#                       start servers of their own with it); it must hold tests/maps too
#   PATHSERVER_PYTHON   the Python that runs `-m pathserver serve` (default: python3 on PATH),
#                       for the embedded servers of the tests and of the demo
#   PATHSERVER_SILENT_ENDPOINT, PATHSERVER_OPTIONS, PATHSERVER_CONFORMANCE
#                       for the shared conformance scenarios and the options check (see
#                       tests/test_pathserver.gd; engine_clients/test.sh sets them)
#   PATHSERVER_BUNDLE   a folder `pathserver bundle` built (.ci/run sets it to the one it
#                       builds): the export checks export the demo with it and run the
#                       exported game; unset, they print a SKIP line and check only the export
#                       without a bundle
#
# Exit codes: 0 all passed, 1 a test failed or the engine run broke, 3 the engine cannot be
# installed here (the caller must report that loudly; it is not a pass).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${PATHSERVER_CI_CACHE:-/var/cache/pathserver-ci}"
TREE="$CACHE_DIR/godot-sid"
STAMP="$TREE/.pathserver-godot-ready"
ENGINE_TIMEOUT="${GODOT_TEST_TIMEOUT:-180}"
# Debian's Linux export template for the same Godot: Godot's own export templates are in no
# package registry; Debian builds this one from the same source as its engine.
TEMPLATE_PACKAGE=godot-template-release
TEMPLATE="$TREE/usr/bin/$TEMPLATE_PACKAGE"

log() { printf 'godot: %s\n' "$*" >&2; }

debian_mirror() {
    # PATHSERVER_DEBIAN_MIRROR, else the mirror this machine's apt already uses (deb822 or
    # one-line format).
    local mirror="${PATHSERVER_DEBIAN_MIRROR:-}"
    if [[ -z "$mirror" ]] && compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
        mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | grep -m1 -E 'debian/?$' || true)"
    fi
    if [[ -z "$mirror" && -f /etc/apt/sources.list ]]; then
        mirror="$(awk '$1 == "deb" && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list)"
    fi
    echo "${mirror:-http://deb.debian.org/debian}"
}

install_engine() {
    if [[ -f "$STAMP" ]]; then
        return 0
    fi
    if [[ "$(id -u)" != 0 ]]; then
        log "cannot install: building the Debian sid tree needs root"
        return 3
    fi
    if ! command -v debootstrap >/dev/null; then
        log "installing debootstrap on the host"
        apt-get install -y -q debootstrap >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q debootstrap >/dev/null 2>&1; } \
            || { log "cannot install debootstrap"; return 3; }
    fi
    mkdir -p "$CACHE_DIR"
    # One builder at a time; a job that waited finds the tree ready.
    exec 9>"$CACHE_DIR/godot-sid.lock"
    flock 9
    if [[ -f "$STAMP" ]]; then
        return 0
    fi
    local mirror build
    mirror="$(debian_mirror)"
    build="$TREE.building"
    rm -rf "$TREE" "$build"
    log "building a Debian sid tree from $mirror in $TREE (about a minute)"
    if ! debootstrap --variant=minbase sid "$build" "$mirror" >"$CACHE_DIR/debootstrap.log" 2>&1; then
        log "debootstrap failed; last lines of $CACHE_DIR/debootstrap.log:"
        tail -n 5 "$CACHE_DIR/debootstrap.log" >&2
        rm -rf "$build"
        return 3
    fi
    cp /etc/resolv.conf "$build/etc/resolv.conf" 2>/dev/null || true
    # The mirror's unstable Release file reads as expired against this clock.
    local apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -q)
    if ! chroot "$build" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive sh -c \
        "apt-get ${apt_opts[*]} update && apt-get ${apt_opts[*]} install -y godot $TEMPLATE_PACKAGE" \
        >"$CACHE_DIR/apt-godot.log" 2>&1; then
        log "installing godot in the tree failed; last lines of $CACHE_DIR/apt-godot.log:"
        tail -n 5 "$CACHE_DIR/apt-godot.log" >&2
        rm -rf "$build"
        return 3
    fi
    chroot "$build" apt-get clean >/dev/null 2>&1 || true
    touch "$build/.pathserver-godot-ready"
    mv "$build" "$TREE"
    exec 9>&-
}

install_template() {
    # A tree made before the export checks has the engine only: add the template to it.
    [[ -x "$TEMPLATE" ]] && return 0
    if [[ "$(id -u)" != 0 ]]; then
        log "cannot install $TEMPLATE_PACKAGE: installing into the Debian sid tree needs root"
        return 1
    fi
    local apt_opts=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -q)
    local install="apt-get ${apt_opts[*]} install -y $TEMPLATE_PACKAGE"
    exec 9>"$CACHE_DIR/godot-sid.lock"
    flock 9
    if [[ ! -x "$TEMPLATE" ]]; then
        log "installing $TEMPLATE_PACKAGE in $TREE"
        cp /etc/resolv.conf "$TREE/etc/resolv.conf" 2>/dev/null || true
        chroot "$TREE" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
            DEBIAN_FRONTEND=noninteractive sh -c \
            "$install || { apt-get ${apt_opts[*]} update && $install; }" \
            >"$CACHE_DIR/apt-template.log" 2>&1
        chroot "$TREE" apt-get clean >/dev/null 2>&1 || true
    fi
    exec 9>&-
    if [[ ! -x "$TEMPLATE" ]]; then
        log "installing $TEMPLATE_PACKAGE failed; last lines of $CACHE_DIR/apt-template.log:"
        tail -n 5 "$CACHE_DIR/apt-template.log" >&2
        return 1
    fi
}

godot_binary() {
    # /usr/bin/godot may be a symlink or a wrapper; use the real ELF.
    local candidate
    candidate="$(chroot "$TREE" readlink -f /usr/bin/godot 2>/dev/null || echo /usr/bin/godot)"
    candidate="$TREE$candidate"
    if [[ -f "$candidate" ]] && head -c 4 "$candidate" | grep -q 'ELF'; then
        echo "$candidate"
    fi
}

resolve_engine() {
    # GODOT: the command that runs the tree's engine through the tree's own loader and
    # libraries, never the host's older libc. Subfolders holding libraries are added because
    # some libraries (libpulse) find their private ones through a RUNPATH of /usr/lib/...
    local binary libdirs dir
    binary="$(godot_binary)"
    if [[ -z "$binary" ]]; then
        log "no godot binary in $TREE"
        return 3
    fi
    libdirs="$TREE/usr/lib/x86_64-linux-gnu:$TREE/lib/x86_64-linux-gnu"
    for dir in "$TREE"/usr/lib/x86_64-linux-gnu/*/; do
        if compgen -G "${dir}lib*.so*" >/dev/null; then
            libdirs="$libdirs:${dir%/}"
        fi
    done
    ENGINE_LIBDIRS="$libdirs"
    GODOT=("$TREE/lib64/ld-linux-x86-64.so.2" --library-path "$libdirs" "$binary")
}

check_engine() {
    local version
    resolve_engine || return $?
    if ! version="$(timeout 60 "${GODOT[@]}" --headless --version 2>&1)"; then
        log "the engine in $TREE does not start:"
        printf '%s\n' "$version" | tail -n 5 >&2
        return 3
    fi
    version="$(printf '%s\n' "$version" | tail -n 1)"
    case "$version" in
        4.*) log "engine $version" ;;
        *) log "expected Godot 4, got '$version'"; return 3 ;;
    esac
}

prepare_project() {
    # Projects use the addon through a symlink, so the tested code is the repository's own.
    local project="$1"
    mkdir -p "$project/addons"
    ln -sfn ../../addons/pathserver "$project/addons/pathserver"
    timeout 180 "${GODOT[@]}" --headless --path "$project" --import >"$project/.import.log" 2>&1 || {
        log "import of $project failed; last lines:"
        tail -n 20 "$project/.import.log" >&2
        return 1
    }
}

# Runs the demo headless for a few seconds with its own embedded server (override.cfg names
# the Python); true when its group moved at least twice, found paths, no unit failed to get
# one, no two units ended on the same cell, its simulated right click placed a wall that
# changed the small units' route and made units ask for new paths, and no script error
# happened.
demo_smoke() {
    local out="$HERE/demo/.last-run.log"
    printf '[pathserver]\n\nembedded_server/command="%s"\n' "${PATHSERVER_PYTHON:-python3}" \
        >"$HERE/demo/override.cfg"
    prepare_project "$HERE/demo" || return 1
    timeout 90 "${GODOT[@]}" --headless --path "$HERE/demo" -- --demo-seconds=6 >"$out" 2>&1
    local summary
    summary="$(grep -m1 '^demo summary:' "$out" || true)"
    local pattern=',\ [1-9][0-9]*\ paths,.*\ 0\ failures,\ ([0-9]+)\ group\ moves,\ 0\ overlaps,'
    pattern+='\ [1-9][0-9]*\ walls\ placed,\ [1-9][0-9]*\ routes\ changed,\ [1-9][0-9]*\ units\ re-routed$'
    if grep -q 'SCRIPT ERROR' "$out" \
        || ! [[ "$summary" =~ $pattern ]] \
        || [[ "${BASH_REMATCH[1]}" -lt 2 ]]; then
        echo "FAIL  demo smoke run: ${summary:-no summary line}"
        tail -n 20 "$out"
        return 1
    fi
    echo "ok    demo smoke run: ${summary#demo summary: }"
}

# One check's line, "ok    NAME" or "FAIL  NAME" with the last lines of LOG; counts it.
EXPORT_PASSED=0
EXPORT_FAILED=0
export_result() {
    local ok="$1" name="$2" log="${3:-}"
    if [[ "$ok" == 1 ]]; then
        echo "ok    $name"
        EXPORT_PASSED=$((EXPORT_PASSED + 1))
    else
        echo "FAIL  $name"
        if [[ -n "$log" && -f "$log" ]]; then
            grep -v -e '^\s*at: ' -e 'savepack' "$log" | tail -n 15
        fi
        EXPORT_FAILED=$((EXPORT_FAILED + 1))
    fi
}

# Points an exported game at the sid tree's loader and libraries: Debian's template is built
# against sid's libc like the engine. libpulse's own RUNPATH names /usr/lib/..., so a copy of
# it without one comes first. A player's machine needs none of this.
runnable_here() {
    local game="$1" libs="$2"
    patchelf --set-interpreter "$TREE/lib64/ld-linux-x86-64.so.2" --force-rpath \
        --set-rpath "$libs:$ENGINE_LIBDIRS" "$game"
}

# A real export of the demo with Debian's Linux release template, from a copy of the demo (the
# addon dereferenced, so a bundle put in its bin/ never lands in the repository):
#   1. without a bundle: the export warns that the game's embedded server will not start, and
#      the exported game says that it has no bundle and where it looked;
#   2. with $PATHSERVER_BUNDLE in the copy's addons/pathserver/bin/<platform>/: the export
#      copies it beside the game (files, modes and links as they were), and the exported
#      game, run with an empty HOME and a PATH with no Python on it (an empty folder), starts
#      that copy and plays the demo (the summary demo_smoke checks).
export_checks() {
    local work copy game log ok platform
    # This machine's platform as PathServerBundle names it, <os>-<arch>.
    platform="linux-$(uname -m)"
    if ! install_template; then
        export_result 0 "export: $TEMPLATE_PACKAGE installed"
        return
    fi
    if ! command -v patchelf >/dev/null; then
        apt-get install -y -q patchelf >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q patchelf >/dev/null 2>&1; }
    fi
    if ! command -v patchelf >/dev/null; then
        export_result 0 "export: patchelf installed (to run the exported game on this machine)"
        return
    fi
    work="$(mktemp -d "${TMPDIR:-/tmp}/pathserver-export.XXXXXX")" || return
    copy="$work/demo"
    mkdir -p "$copy" "$work/libs" "$work/no-python" "$work/home" "$work/bare" "$work/game"
    (cd "$HERE/demo" && find . -mindepth 1 -maxdepth 1 ! -name .godot ! -name override.cfg \
        ! -name '.*.log' -exec cp -RL {} "$copy/" \;) || true
    printf '%s\n' '[preset.0]' '' 'name="Linux"' 'platform="Linux"' 'runnable=true' \
        'export_filter="all_resources"' 'include_filter=""' 'exclude_filter=""' '' \
        '[preset.0.options]' '' "custom_template/release=\"$TEMPLATE\"" \
        "binary_format/architecture=\"$(uname -m)\"" 'binary_format/embed_pck=false' \
        >"$copy/export_presets.cfg"
    if ! { cp -L "$TREE/usr/lib/x86_64-linux-gnu/libpulse.so.0" "$work/libs/" \
        && patchelf --remove-rpath "$work/libs/libpulse.so.0"; }; then
        export_result 0 "export: a copy of libpulse without its RUNPATH"
        rm -rf "$work"
        return
    fi
    if ! timeout 180 "${GODOT[@]}" --headless --path "$copy" --import >"$work/import.log" 2>&1; then
        export_result 0 "export: the demo's copy imports" "$work/import.log"
        rm -rf "$work"
        return
    fi

    # 1. No bundle.
    log="$work/export-bare.log"
    timeout 300 "${GODOT[@]}" --headless --path "$copy" --export-release Linux \
        "$work/bare/demo.x86_64" >"$log" 2>&1 || true
    ok=0
    if [[ -x "$work/bare/demo.x86_64" && ! -e "$work/bare/pathserver" ]] \
        && grep -q "^WARNING: PathServer: no pathserver bundle for $platform: .* will not start" "$log"; then
        ok=1
    fi
    export_result $ok "export without a bundle: exported, with a warning naming the missing bundle" "$log"
    game="$work/bare/demo.x86_64"
    log="$work/run-bare.log"
    ok=0
    if runnable_here "$game" "$work/libs"; then
        (cd "$work" && timeout 60 env -i HOME="$work/home" PATH="$work/no-python" "$game" \
            --headless -- --demo-seconds=2 >"$log" 2>&1) || true
        grep -q "cannot start: no pathserver bundle at $work/bare/pathserver/$platform/pathserver-server" \
            "$log" && ok=1
    fi
    export_result $ok "the exported game without its bundle says where it looked for one" "$log"

    # 2. With the bundle.
    if [[ -z "${PATHSERVER_BUNDLE:-}" ]]; then
        echo "SKIP  export with a bundle and the exported game starting it: PATHSERVER_BUNDLE is not set (.ci/run sets it to the bundle it builds)"
        rm -rf "$work"
        return
    fi
    local bundle carried summary pattern
    bundle="$(cd "$PATHSERVER_BUNDLE" 2>/dev/null && pwd)"
    if [[ -z "$bundle" || ! -x "$bundle/pathserver-server" ]]; then
        export_result 0 "PATHSERVER_BUNDLE=$PATHSERVER_BUNDLE holds a bundle (pathserver-server)"
        rm -rf "$work"
        return
    fi
    ln -s "$bundle" "$copy/addons/pathserver/bin/$platform"
    log="$work/export-bundle.log"
    timeout 300 "${GODOT[@]}" --headless --path "$copy" --export-release Linux \
        "$work/game/demo.x86_64" >"$log" 2>&1 || true
    carried="$work/game/pathserver/$platform"
    ok=0
    if [[ -x "$work/game/demo.x86_64" && -x "$carried/pathserver-server" ]] \
        && ! grep -q -e '^WARNING: PathServer' -e '^ERROR: PathServer' "$log" \
        && [[ "$(cd "$bundle" && find . ! -type d -printf '%p %s %m %l\n' | sort)" \
            == "$(cd "$carried" && find . ! -type d -printf '%p %s %m %l\n' | sort)" ]]; then
        ok=1
    fi
    export_result $ok "export with a bundle: carried beside the game as pathserver/$platform ($(du -sm "$carried" 2>/dev/null | cut -f1) MB; files, modes and links as in the bundle)" "$log"
    game="$work/game/demo.x86_64"
    log="$work/run-game.log"
    ok=0
    if runnable_here "$game" "$work/libs"; then
        (cd "$work" && timeout 90 env -i HOME="$work/home" PATH="$work/no-python" "$game" \
            --headless -- --demo-seconds=6 >"$log" 2>&1) || true
        summary="$(grep -m1 '^demo summary:' "$log" || true)"
        pattern=',\ [1-9][0-9]*\ paths,.*\ 0\ failures,\ ([0-9]+)\ group\ moves,\ 0\ overlaps,'
        pattern+='\ [1-9][0-9]*\ walls\ placed,\ [1-9][0-9]*\ routes\ changed,\ [1-9][0-9]*\ units\ re-routed$'
        if grep -q "^PathServer: starting the embedded server: $carried/pathserver-server serve " "$log" \
            && grep -q '^pathserver ready on ' "$log" \
            && ! grep -q 'SCRIPT ERROR' "$log" \
            && [[ "$summary" =~ $pattern ]] && [[ "${BASH_REMATCH[1]}" -ge 2 ]]; then
            ok=1
        fi
    fi
    export_result $ok "the exported demo (no Python on PATH, an empty HOME) starts its bundle and plays: ${summary#demo summary: }" "$log"
    grep -m1 -e '^pathserver: kernels ready' "$log" || true
    rm -rf "$work"
}

# The Asset Library zip (pack.py): built, holding the addon with its LICENSE and README and
# nothing of bin/ but its .gdignore, and working as a user installs it: unpacked (its root
# folder dropped, as the installer does) into a new project, imported, its classes resolve.
pack_check() {
    local work py zip ok=0 listing
    py="${PATHSERVER_PYTHON:-python3}"
    work="$(mktemp -d "${TMPDIR:-/tmp}/pathserver-pack.XXXXXX")" || return
    zip="$work/pathserver-godot.zip"
    if "$py" "$HERE/pack.py" "$zip" >"$work/pack.log" 2>&1; then
        listing="$("$py" -m zipfile -l "$zip" | awk 'NR > 1 {print $1}')"
        mkdir -p "$work/project" "$work/unpacked"
        "$py" -m zipfile -e "$zip" "$work/unpacked" >>"$work/pack.log" 2>&1 || true
        cp -R "$work"/unpacked/*/addons "$work/project/" 2>>"$work/pack.log" || true
        printf '%s\n' 'config_version=5' '' '[autoload]' '' \
            'PathServer="*res://addons/pathserver/path_server.gd"' '' '[editor_plugins]' '' \
            'enabled=PackedStringArray("res://addons/pathserver/plugin.cfg")' \
            >"$work/project/project.godot"
        printf '%s\n' 'extends SceneTree' '' '' 'func _initialize() -> void:' \
            '	var client := PathServerClient.new()' \
            '	print("release works: ", PathServerBundle.current_platform(), " ", client.timeout_ms)' \
            '	client.free()' '	quit(0)' >"$work/project/check.gd"
        if grep -q '/addons/pathserver/LICENSE$' <<<"$listing" \
            && grep -q '/addons/pathserver/README.md$' <<<"$listing" \
            && grep -q '/addons/pathserver/plugin.cfg$' <<<"$listing" \
            && ! grep -v '/bin/.gdignore$' <<<"$listing" | grep -q -e '/bin/.' -e '/tests/' -e '/demo/' \
            && timeout 120 "${GODOT[@]}" --headless --path "$work/project" --import >>"$work/pack.log" 2>&1 \
            && timeout 60 "${GODOT[@]}" --headless --path "$work/project" -s res://check.gd \
                >>"$work/pack.log" 2>&1 \
            && grep -q '^release works: linux-' "$work/pack.log" \
            && ! grep -q 'SCRIPT ERROR' "$work/pack.log"; then
            ok=1
        fi
    fi
    export_result $ok "Asset Library zip: $(head -n 1 "$work/pack.log"); installs into a new project and loads" "$work/pack.log"
    rm -rf "$work"
}

# Runs one of the demo's other scenes headless (`--scene=NAME --demo-seconds=N`, its embedded
# server, its level uploaded from its TileMapLayer); true when its summary line matches
# PATTERN and no script error happened. The RTS scene: 500 units of two sizes moved by one
# flow group, a wall placed and the gap closed by simulated input, units re-routed; the
# tactics scene: a movement range drawn, a path to a hovered cell, a placement refused by
# check_block and one placed, the unit moved, its range as a heavy unit (traversal); the hex
# scene: the ranges of a unit of size 1 and one of size 2 drawn, a path for each to a hovered
# hex, the big unit moved, its range kept off the ridge's one-hex gap, every range hex and
# waypoint checked; the floors scene: a unit up the stairs to the upper floor (the link's signal
# with its tag), then down by the one-way drop, the shorter way.
demo_scene_smoke() {
    local scene="$1" seconds="$2" pattern="$3"
    local out="$HERE/demo/.last-run-$scene.log"
    timeout 90 "${GODOT[@]}" --headless --path "$HERE/demo" -- --scene="$scene" \
        --demo-seconds="$seconds" >"$out" 2>&1
    local summary
    summary="$(grep -m1 "^$scene summary:" "$out" || true)"
    if grep -q 'SCRIPT ERROR' "$out" || ! [[ "$summary" =~ $pattern ]]; then
        echo "FAIL  demo $scene scene smoke run: ${summary:-no summary line}"
        tail -n 20 "$out"
        return 1
    fi
    echo "ok    demo $scene scene smoke run: ${summary#"$scene summary: "}"
}

main() {
    local cmd="${1:-}"
    if [[ -z "$cmd" ]]; then
        echo "usage: $0 install | ENDPOINT" >&2
        return 2
    fi
    local started=$SECONDS status=0
    install_engine || status=$?
    if [[ $status != 0 ]]; then
        return $status
    fi
    check_engine || return $?
    log "engine ready in $((SECONDS - started)) s ($TREE)"
    if [[ "$cmd" == install ]]; then
        return 0
    fi
    prepare_project "$HERE/tests" || return 1
    local out="$HERE/tests/.last-run.log" rc=0
    timeout "$ENGINE_TIMEOUT" "${GODOT[@]}" --headless --path "$HERE/tests" \
        -s res://test_pathserver.gd -- "$cmd" >"$out" 2>&1 || rc=$?
    # The engine's closing line is reprinted below with the demo counted in.
    grep -vE '^[0-9]+ passed, [0-9]+ failed$' "$out"
    local closing
    closing="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1 || true)"
    if [[ -z "$closing" ]]; then
        if [[ $rc == 124 ]]; then
            log "the engine run timed out after ${ENGINE_TIMEOUT} s (a GDScript runtime error?)"
        fi
        log "no closing line from the test run (exit $rc)"
        return 1
    fi
    local passed failed
    passed="${closing%% passed*}"
    failed="${closing#*passed, }"
    failed="${failed%% failed}"
    if demo_smoke; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    local rts_pattern='^rts summary: (5[0-9][0-9]|[6-9][0-9][0-9]) units, 2 sizes, ([0-9]+) moved, .*'
    rts_pattern+=' 0 failures, 1 gate toggles, [1-9][0-9]* walls placed, [1-9][0-9]* units re-routed,'
    local tactics_pattern='^tactics summary: range of [1-9][0-9]* cells \([1-9][0-9]* drawn\), path of'
    tactics_pattern+=' [2-9][0-9]* cells to .*, 1 placements refused, 1 placed, range after [1-9][0-9]* cells,'
    tactics_pattern+=' unit at \(([0-9]+, [0-9]+)\), range as heavy [1-9][0-9]* cells$'
    if demo_scene_smoke rts 6 "$rts_pattern" && [[ "${BASH_REMATCH[2]}" -ge 250 ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    if demo_scene_smoke tactics 4 "$tactics_pattern" && [[ "${BASH_REMATCH[1]}" != "4, 7" ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    local hex_path='path of ([2-9]|[1-9][0-9]+) hexes to \([0-9]+, [0-9]+\)'
    local hex_pattern="^hex summary: small unit: range [1-9][0-9]* hexes \\([1-9][0-9]* drawn\\),"
    hex_pattern+=" $hex_path; big unit: range [1-9][0-9]* hexes \\([1-9][0-9]* drawn\\), $hex_path,"
    hex_pattern+=' moved there, range [1-9][0-9]* hexes; the one-hex gap in range: small yes, big no;'
    hex_pattern+=' [1-9][0-9]* hexes checked, 0 failures$'
    if demo_scene_smoke hex 4 "$hex_pattern"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    local floors_pattern='^floors summary: level 30x20, 2 floors, 2 links; up: path of [1-9][0-9]* waypoints'
    floors_pattern+=' to \(27, 17\) on floor 1 taking stairs, signals stairs; down: path of [1-9][0-9]*'
    floors_pattern+=' waypoints to \(2, 17\) on floor 0 taking drop, signals drop; arrived 2, 0 failures$'
    if demo_scene_smoke floors 6 "$floors_pattern"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
    export_checks
    pack_check
    passed=$((passed + EXPORT_PASSED))
    failed=$((failed + EXPORT_FAILED))
    echo "$passed passed, $failed failed"
    if [[ $rc != 0 || $failed != 0 ]]; then
        return 1
    fi
}

main "$@"
