@tool
extends EditorExportPlugin
## Carries the pathserver bundle for the export's platform into the exported game.
##
## The bundle ([code]res://addons/pathserver/bin/<platform>/[/code], see [PathServerBundle])
## is a folder of executables and libraries: files in the PCK cannot be run, so it is copied
## beside the exported game's executable, as
## [code]<export folder>/pathserver/<platform>/[/code], when the export ends (files keep
## their permissions, links stay links). [PathServerClient] looks there in an exported game.
##
## Everything that keeps the game from starting its server is said at export time, in the
## export's messages and in the output (a warning, or an error when the copy fails): no bundle
## for the export's platform while the project starts an embedded server, a platform no
## bundle can run on, a macOS or ZIP export (not carried: copy it yourself), a failed copy.

## The category of this plugin's export messages.
const NAME := "PathServer"
## The export option that carries the bundle (off for a build that connects to a server
## elsewhere).
const OPTION_CARRY := "pathserver/carry_server_bundle"

## The bundle folder to copy when the export ends, or "".
var _source := ""
## Where the copy goes.
var _target := ""


func _get_name() -> String:
	return NAME


func _supports_platform(_platform: EditorExportPlatform) -> bool:
	return true


func _get_export_options(_platform: EditorExportPlatform) -> Array[Dictionary]:
	return [{"option": {"name": OPTION_CARRY, "type": TYPE_BOOL}, "default_value": true}]


## In the export dialog, before exporting: the project starts an embedded server and has no
## bundle for the platform's OS at all (the architecture is known only at export time).
func _get_export_option_warning(platform: EditorExportPlatform, option: String) -> String:
	if option != OPTION_CARRY or not get_option(OPTION_CARRY) or not _project_needs_bundle():
		return ""
	var os_name := platform.get_os_name().to_lower()
	for arch: String in PathServerBundle.ARCH_NAMES:
		var folder := PathServerBundle.project_folder(PathServerBundle.platform_name(os_name, arch))
		if DirAccess.dir_exists_absolute(folder):
			return ""
	return (
		"No pathserver bundle for %s in %s: the game's embedded server will not start."
		% [platform.get_os_name(), PathServerBundle.ADDON_BIN_DIR]
	)


func _export_begin(features: PackedStringArray, _is_debug: bool, path: String, _flags: int) -> void:
	_source = ""
	_target = ""
	if not get_option(OPTION_CARRY):
		_say(
			EditorExportPlatform.EXPORT_MESSAGE_INFO, "%s is off: no bundle carried" % OPTION_CARRY
		)
		return
	var plan := export_plan(features, path, _project_needs_bundle())
	if plan.has("warning"):
		_say(EditorExportPlatform.EXPORT_MESSAGE_WARNING, plan.warning)
	_source = plan.get("source", "")
	_target = plan.get("target", "")


func _export_end() -> void:
	if _source == "":
		return
	var copied := copy_folder(_source, _target)
	if copied.has("error"):
		_say(
			EditorExportPlatform.EXPORT_MESSAGE_ERROR,
			"could not copy the server bundle %s to %s: %s" % [_source, _target, copied.error]
		)
	else:
		_say(
			EditorExportPlatform.EXPORT_MESSAGE_INFO,
			"server bundle copied to %s (%d files)" % [_target, copied.files]
		)
	_source = ""
	_target = ""


## What an export with [param features] to [param path] does with the bundle:
## [code]{"source": ..., "target": ...}[/code] to copy one, and/or [code]{"warning": ...}[/code]
## saying why the exported game will have none. [param needed]: the game starts an embedded
## server (without one, a missing bundle is no warning).
static func export_plan(features: PackedStringArray, path: String, needed: bool) -> Dictionary:
	var platform := PathServerBundle.platform_of_features(features)
	if platform == "":
		if not needed:
			return {}
		return {
			"warning":
			(
				(
					"the project starts an embedded server, and no pathserver bundle can run on"
					+ " this export's platform (%s); connect to a server elsewhere instead"
				)
				% ", ".join(features)
			)
		}
	var source := PathServerBundle.project_folder(platform)
	var executable := source.path_join(PathServerBundle.executable_name(platform))
	if not FileAccess.file_exists(executable):
		if not needed:
			return {}
		return {
			"warning":
			(
				(
					"no pathserver bundle for %s: %s is missing, so the exported game's embedded"
					+ " server will not start. Build one on a %s machine with `pathserver bundle"
					+ " OUT_DIR` and put OUT_DIR's contents in %s"
				)
				% [
					platform,
					executable,
					platform,
					PathServerBundle.ADDON_BIN_DIR.path_join(platform)
				]
			)
		}
	var where := "pathserver/%s beside the game's executable" % platform
	if platform.begins_with("macos-"):
		return {
			"warning":
			(
				(
					"macOS exports do not carry the server bundle yet: copy %s into %s (the"
					+ " app's Contents/MacOS) before signing"
				)
				% [source, where]
			)
		}
	if path.get_extension().to_lower() == "zip":
		return {
			"warning":
			(
				"a ZIP export does not carry the server bundle: export to a folder, or add %s as %s"
				% [source, where]
			)
		}
	if path.is_relative_path():
		# As the export itself reads it: the editor runs in the project's folder.
		path = ProjectSettings.globalize_path("res://").path_join(path)
	return {"source": source, "target": PathServerBundle.exported_folder(path, platform)}


## Copies the folder [param from] to [param to] (replaced if there), keeping each file's
## permissions (the executable stays executable) and symbolic links as links (a link that
## cannot be made is copied as the file it points to). [code]{"files": N}[/code], or
## [code]{"error": "..."}[/code].
static func copy_folder(from: String, to: String) -> Dictionary:
	if from.is_relative_path() or to.is_relative_path():
		return {"error": "copy_folder takes absolute paths, not %s and %s" % [from, to]}
	if DirAccess.dir_exists_absolute(to):
		var removed := remove_folder(to)
		if removed != "":
			return {"error": removed}
	var made := DirAccess.make_dir_recursive_absolute(to)
	if made != OK:
		return {"error": "cannot create %s (%s)" % [to, error_string(made)]}
	var dir := DirAccess.open(from)
	if dir == null:
		return {"error": "cannot open %s (%s)" % [from, error_string(DirAccess.get_open_error())]}
	dir.include_hidden = true
	var files := 0
	for name in dir.get_files():
		var source := from.path_join(name)
		var target := to.path_join(name)
		if dir.is_link(source) and dir.create_link(dir.read_link(source), target) == OK:
			files += 1
			continue
		# Windows has no Unix permissions to keep (and refuses to set them).
		var mode := -1 if OS.get_name() == "Windows" else FileAccess.get_unix_permissions(source)
		var copied := DirAccess.copy_absolute(source, target, mode)
		if copied != OK:
			return {"error": "cannot copy %s (%s)" % [source, error_string(copied)]}
		files += 1
	for name in dir.get_directories():
		var inner := copy_folder(from.path_join(name), to.path_join(name))
		if inner.has("error"):
			return inner
		files += inner.files
	return {"files": files}


## Removes the folder [param path] and everything in it (links, not what they point to);
## "" or what failed.
static func remove_folder(path: String) -> String:
	var dir := DirAccess.open(path)
	if dir == null:
		return "cannot open %s (%s)" % [path, error_string(DirAccess.get_open_error())]
	dir.include_hidden = true
	for name in dir.get_directories():
		var inner := path.path_join(name)
		if dir.is_link(inner):
			if DirAccess.remove_absolute(inner) != OK:
				return "cannot remove %s" % inner
			continue
		var failed := remove_folder(inner)
		if failed != "":
			return failed
	for name in dir.get_files():
		if DirAccess.remove_absolute(path.path_join(name)) != OK:
			return "cannot remove %s" % path.path_join(name)
	if DirAccess.remove_absolute(path) != OK:
		return "cannot remove %s" % path
	return ""


## Whether the project starts an embedded server that runs the bundle.
func _project_needs_bundle() -> bool:
	return (
		PathServerClient.setting(PathServerClient.SETTING_EMBEDDED)
		and PathServerClient.setting(PathServerClient.SETTING_EMBEDDED_MODE) != "python"
	)


## An export message, shown with the export's result; the editor also prints warnings and
## errors to the output (without an export platform, this does).
func _say(type: EditorExportPlatform.ExportMessageType, text: String) -> void:
	var platform := get_export_platform()
	if platform != null:
		platform.add_message(type, NAME, text)
	elif type == EditorExportPlatform.EXPORT_MESSAGE_INFO:
		print("%s: %s" % [NAME, text])
	elif type == EditorExportPlatform.EXPORT_MESSAGE_WARNING:
		push_warning("%s: %s" % [NAME, text])
	else:
		push_error("%s: %s" % [NAME, text])
