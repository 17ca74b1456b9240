class_name PathServerOptions
extends RefCounted
## The options of the requests, defined once: each option's default and the ops that take it
## in their [param options]. [member PathServerClient.PATH_OPTIONS] and
## [member PathServerClient.QUERY_OPTIONS] are its views by op. The engine tests check it
## against the server's own list, [code]pathserver options --json[/code].

## Defaults this client applies and always sends, where they differ from the server's on
## purpose: positions in a game are world coordinates (the server's default is "grid").
const CLIENT_DEFAULTS := {"space": "world"}
## Options read by the client itself and never sent to the server.
const CLIENT_OPTIONS := ["map", "timeout_ms"]
## Every path and query op.
const EVERY_OP := ["path", "paths", "reachable", "field", "next_steps", "check_block"]
## The ops of one path ([method PathServerClient.find_path]) and of a batch.
const PATH_OPS := ["path", "paths"]
## Each option with what a request gets when its options leave it out (null: none, no limit,
## the whole map, or the server chooses) and the ops it goes with. Every default is the
## server's but those of [constant CLIENT_DEFAULTS].
const TABLE := {
	"space": {"default": CLIENT_DEFAULTS.space, "ops": EVERY_OP},
	"smooth": {"default": "los", "ops": PATH_OPS},
	"diagonal": {"default": "no_corner_cutting", "ops": EVERY_OP},
	"snap": {"default": true, "ops": EVERY_OP},
	"allow_partial": {"default": false, "ops": PATH_OPS},
	"max_expansions": {"default": null, "ops": PATH_OPS},
	"heuristic": {"default": null, "ops": PATH_OPS},
	"weight": {"default": 1.0, "ops": PATH_OPS},
	"max_climb": {"default": null, "ops": ["path", "paths", "reachable", "field", "next_steps"]},
	"algorithm": {"default": "auto", "ops": PATH_OPS},
	"line_of_sight": {"default": true, "ops": PATH_OPS},
	"goals": {"default": null, "ops": PATH_OPS},
	"max_cost": {"default": null, "ops": ["field", "next_steps"]},
	"region": {"default": null, "ops": ["field"]},
	"lookahead": {"default": "cell", "ops": ["next_steps"]},
	"avoid": {"default": null, "ops": ["path", "paths", "reachable", "field", "next_steps"]},
	"avoid_cost": {"default": null, "ops": ["path", "paths", "reachable", "field", "next_steps"]},
	"traversal": {"default": null, "ops": EVERY_OP},
}


## The options [param op] takes, with their defaults, in [constant TABLE]'s order (read-only).
static func of_op(op: String) -> Dictionary:
	var options := {}
	for name: String in TABLE:
		if op in TABLE[name].ops:
			options[name] = TABLE[name].default
	options.make_read_only()
	return options


## The options of each query beyond one path, by op (read-only).
static func of_queries() -> Dictionary:
	var by_op := {}
	for op: String in ["reachable", "field", "next_steps", "check_block"]:
		by_op[op] = of_op(op)
	by_op.make_read_only()
	return by_op
