class_name PathServerBundle
extends RefCounted
## Where the self-contained server is: the folder [code]pathserver bundle OUT_DIR[/code]
## builds (an executable [code]pathserver-server[/code], [code].exe[/code] on Windows, beside
## an [code]_internal/[/code] folder), one per platform. The one definition of the platform
## folder names, used by the embedded server ([PathServerClient]) and by the export plugin.
##
## [codeblock]
## res://addons/pathserver/bin/<platform>/pathserver-server   in the project (the editor)
## <game folder>/pathserver/<platform>/pathserver-server      in an exported game
## [/codeblock]
## [code]<platform>[/code] is [code]<os>-<arch>[/code]: [code]linux-x86_64[/code],
## [code]linux-arm64[/code], [code]windows-x86_64[/code], [code]windows-arm64[/code],
## [code]macos-x86_64[/code], [code]macos-arm64[/code]. A bundle runs only on the platform
## it was built on (PyInstaller does not cross-build).

## Godot's OS feature tags (export features, [method OS.has_feature]) and the folder name's
## OS part for each.
const OS_NAMES := {"linux": "linux", "windows": "windows", "macos": "macos"}
## Godot's architecture names (export features, [method Engine.get_architecture_name]) and
## the folder name's architecture part for each.
const ARCH_NAMES := {"x86_64": "x86_64", "arm64": "arm64"}
## The executable's name without the Windows extension.
const EXECUTABLE := "pathserver-server"
## The project's bundles, one subfolder per platform. It holds a [code].gdignore[/code]: the
## editor does not scan 90 MB of libraries, and nothing of it goes into the PCK.
const ADDON_BIN_DIR := "res://addons/pathserver/bin"
## The folder beside an exported game's executable that holds its bundle's platform folder.
const EXPORTED_DIR := "pathserver"


## [code]"<os>-<arch>"[/code] for Godot's OS feature tag and architecture name, or "" when
## no bundle can exist for them (the web, Android, a 32-bit build, ...).
static func platform_name(os_tag: String, arch: String) -> String:
	if not OS_NAMES.has(os_tag) or not ARCH_NAMES.has(arch):
		return ""
	return "%s-%s" % [OS_NAMES[os_tag], ARCH_NAMES[arch]]


## The platform of an export with these feature tags (those given to
## [method EditorExportPlugin._export_begin]), or "" (see [method platform_name]).
static func platform_of_features(features: PackedStringArray) -> String:
	var os_tag := ""
	var arch := ""
	for tag in features:
		if OS_NAMES.has(tag):
			os_tag = tag
		elif ARCH_NAMES.has(tag):
			arch = tag
	return platform_name(os_tag, arch)


## The platform this game or editor runs on, or "".
static func current_platform() -> String:
	for os_tag: String in OS_NAMES:
		if OS.has_feature(os_tag):
			return platform_name(os_tag, Engine.get_architecture_name())
	return ""


## The executable's file name on [param platform].
static func executable_name(platform: String) -> String:
	return EXECUTABLE + (".exe" if platform.begins_with("windows-") else "")


## The project's bundle folder for [param platform], as an absolute path (the editor's view
## of [code]res://[/code]).
static func project_folder(platform: String) -> String:
	return ProjectSettings.globalize_path(ADDON_BIN_DIR.path_join(platform))


## Where an exported game whose executable is [param game_executable] has its bundle.
static func exported_folder(game_executable: String, platform: String) -> String:
	return game_executable.get_base_dir().path_join(EXPORTED_DIR).path_join(platform)


## Where this run looks for its bundle: the project's [code]bin/[/code] when run from the
## editor (its [code]res://[/code] is a folder on disk), else beside the game's executable.
static func folder_for_this_run(platform: String) -> String:
	if OS.has_feature("editor"):
		return project_folder(platform)
	return exported_folder(OS.get_executable_path(), platform)


## How to run the server for the embedded-server [param mode] ("auto", "bundle", "python"):
## [code]{"program": ..., "arguments": [...]}[/code], the arguments to put before
## [code]serve[/code], or [code]{"error": "..."}[/code] saying what is missing and where it
## was looked for. "auto" runs the bundle when there is one for this platform, else, in the
## editor only, [code]PYTHON -m pathserver[/code]; an exported game never falls back to a
## Python the player does not have.
static func server_launch(mode: String, python: String) -> Dictionary:
	if mode == "python":
		return {"program": python, "arguments": PackedStringArray(["-m", "pathserver"])}
	if mode != "auto" and mode != "bundle":
		return {"error": "unknown embedded server mode '%s' (auto, bundle or python)" % mode}
	var platform := current_platform()
	if platform == "":
		return {
			"error":
			(
				"no pathserver bundle can run on %s %s"
				% [OS.get_name(), Engine.get_architecture_name()]
			)
		}
	var folder := folder_for_this_run(platform)
	var executable := folder.path_join(executable_name(platform))
	if FileAccess.file_exists(executable):
		return {"program": executable, "arguments": PackedStringArray()}
	if mode == "auto" and OS.has_feature("editor"):
		return {"program": python, "arguments": PackedStringArray(["-m", "pathserver"])}
	var hint := (
		"put the folder `pathserver bundle` builds there"
		if OS.has_feature("editor")
		else "the export did not carry one: see the export's warnings"
	)
	return {"error": "no pathserver bundle at %s (%s)" % [executable, hint]}
