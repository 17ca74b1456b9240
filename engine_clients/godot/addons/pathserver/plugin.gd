@tool
extends EditorPlugin
## Registers the [code]PathServer[/code] autoload, the pathserver project settings and the
## export plugin that carries the server bundle into exported games.

const AUTOLOAD_NAME := "PathServer"
const AUTOLOAD_PATH := "res://addons/pathserver/path_server.gd"
const ExportPlugin := preload("res://addons/pathserver/export_plugin.gd")

var _export_plugin: EditorExportPlugin


func _enable_plugin() -> void:
	add_autoload_singleton(AUTOLOAD_NAME, AUTOLOAD_PATH)


func _disable_plugin() -> void:
	remove_autoload_singleton(AUTOLOAD_NAME)


func _enter_tree() -> void:
	for name: String in PathServerClient.SETTINGS:
		_add_setting(name, PathServerClient.SETTINGS[name])
	_export_plugin = ExportPlugin.new()
	add_export_plugin(_export_plugin)


func _exit_tree() -> void:
	remove_export_plugin(_export_plugin)
	_export_plugin = null


func _add_setting(name: String, default: Variant) -> void:
	if default is Array:
		# A constant cannot hold a PackedStringArray; the setting is one.
		default = PackedStringArray(default)
	if not ProjectSettings.has_setting(name):
		ProjectSettings.set_setting(name, default)
	ProjectSettings.set_initial_value(name, default)
	ProjectSettings.set_as_basic(name, true)
	var info := {"name": name, "type": typeof(default)}
	if name == PathServerClient.SETTING_EMBEDDED_MAPS_DIR:
		info["hint"] = PROPERTY_HINT_DIR
	elif name == PathServerClient.SETTING_EMBEDDED_MODE:
		info["hint"] = PROPERTY_HINT_ENUM
		info["hint_string"] = ",".join(PathServerClient.EMBEDDED_MODES)
	elif name == PathServerClient.SETTING_EMBEDDED_PORT:
		# 0 binds a free port (the server's `--bind tcp://127.0.0.1:*`).
		info["hint"] = PROPERTY_HINT_RANGE
		info["hint_string"] = "0,65535"
	ProjectSettings.add_property_info(info)
