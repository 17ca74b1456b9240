class_name PathServerConnection
extends RefCounted
## [PathServerClient]'s connection to the server and the requests in flight on it: the dealer
## reconnects with back-off while [member active]; each request is sent once the connection
## is ready (again after a reconnect, or after an "overloaded" reply's retry_after_ms), its
## reply matched by id, and it expires at its deadline. [method poll] advances it all.

## The ZeroMQ handshake completed.
signal connected
## The connection dropped, or was closed or reopened on purpose: [param reason] says which.
signal disconnected(reason: String)
## [param request] got [param reply]: the server's, or a timeout the connection wrote.
signal completed(request: Pending, reply: Dictionary)

const RECONNECT_MIN_MS := 100
const RECONNECT_MAX_MS := 2000
## A synchronous call ([method wait_for]) looks at the socket without pausing for this long
## (the answer usually comes within it), then sleeps this long between looks.
const SYNC_SPIN_USEC := 2000
const SYNC_SLEEP_USEC := 100
## While it spins with its request sent, it polls the connection whole this often, and only
## reads what came in between.
const SYNC_POLL_USEC := 1000

var dealer := PathServerZmtpDealer.new()
## Reconnect when the connection drops.
var active := false
## The requests in flight by id.
var pending := {}
## Calls waiting for the connection ([method PathServerClient.wait_connected]).
var waiters: Array[Waiter] = []
## The request a synchronous call waits for: replies to others are held meanwhile.
var hold_for := 0
## The replies held while a synchronous call waited, for [method release_held].
var held: Array[Dictionary] = []

var _was_ready := false
var _reconnect_at_ms := 0
var _backoff_ms := RECONNECT_MIN_MS


## Connects (or reconnects) to [param endpoint] at the next [method poll].
func open(endpoint: String) -> void:
	active = true
	_backoff_ms = RECONNECT_MIN_MS
	_reconnect_at_ms = 0
	dealer.close()
	_lost("reconnecting to %s" % endpoint)


## Closes the connection and stops reconnecting; requests in flight stay.
func stop(reason: String) -> void:
	active = false
	dealer.close()
	_lost(reason)


## Adds [param request] to those in flight, and queues it at once when connected.
func add(request: Pending) -> void:
	pending[request.result.id] = request
	if dealer.is_ready():
		request.sent = dealer.send([PackedByteArray(), request.bytes], false)


## Reconnects when it is time, reads and hands out the replies that came, and sends what
## waits to be sent. [param now]: [method Time.get_ticks_msec].
func poll(now: int, endpoint: String) -> void:
	if dealer.state == PathServerZmtpDealer.State.CLOSED and now >= _reconnect_at_ms:
		dealer.open(endpoint)
		_reconnect_at_ms = now + _backoff_ms
		_backoff_ms = mini(_backoff_ms * 2, RECONNECT_MAX_MS)
	for message: Array in dealer.poll():
		receive(message)
	if dealer.is_ready():
		if not _was_ready:
			_was_ready = true
			_backoff_ms = RECONNECT_MIN_MS
			connected.emit()
			finish_waiters(true)
		_send_unsent(now)
	elif _was_ready and dealer.state == PathServerZmtpDealer.State.CLOSED:
		_lost(dealer.last_error)
		_reconnect_at_ms = now + _backoff_ms


## Reads the replies that have come and hands them out, without advancing the connection
## otherwise (see [method PathServerZmtpDealer.receive]): what a synchronous call does between
## polls.
func read_replies() -> void:
	for message: Array in dealer.receive():
		receive(message)


## Waits for [param request] on the spot, looking at the socket until its reply came or its
## timeout passed (then it completes as "timeout"), polling [param server] meanwhile: what
## the synchronous calls block on. Replies to other requests are held meanwhile; called
## while another call waited, it hands out those held (the outer one's reply may be there).
func wait_for(request: Pending, endpoint: String, server: PathServerProcess) -> void:
	var outer := hold_for
	hold_for = request.result.id
	var began := Time.get_ticks_usec()
	var deadline := began + request.timeout_ms * 1000
	# Out now, with what this frame queued before it. Once it is out, the loop reads what
	# comes until the reply is there, and polls the connection whole only now and then (a
	# dropped connection, the embedded server's output, other requests to send).
	dealer.flush()
	var next_poll := began + SYNC_POLL_USEC if request.sent and not dealer.has_output() else began
	while not request.done:
		var now := Time.get_ticks_usec()
		if now >= deadline or not (active or server.state == PathServerClient.ServerState.STARTING):
			break
		if now - began > SYNC_SPIN_USEC:
			OS.delay_usec(SYNC_SLEEP_USEC)
		elif now < next_poll:
			read_replies()
			continue
		next_poll = now + SYNC_POLL_USEC if request.sent and not dealer.has_output() else now
		if server.pid > 0:
			server.poll(now / 1000)
		if active:
			poll(now / 1000, endpoint)
	hold_for = outer
	if not request.done:
		pending.erase(request.result.id)
		var message := "no reply from %s within %d ms, waited for" % [endpoint, request.timeout_ms]
		completed.emit(
			request, PathServerReplies.client_error("timeout", message, request.result.id, true)
		)
	if outer != 0:
		release_held()


## Reads what comes, for at most [constant SYNC_POLL_USEC], until the reply to request
## [param id] is there: returns its bytes, not read (empty when none came by then or the
## connection closed). Other replies are handed to [method receive] meanwhile, held as during
## [method wait_for]. What a synchronous path call does first
## ([method PathServerCalls.find_path_now]).
func read_reply(id: int) -> PackedByteArray:
	var outer := hold_for
	hold_for = id
	var found := PackedByteArray()
	var until := Time.get_ticks_usec() + SYNC_POLL_USEC
	while found.is_empty() and dealer.is_ready() and dealer.wait_readable(until):
		for message: Array in dealer.receive():
			if found.is_empty() and PathServerReplies.reply_id(message[-1]) == id:
				found = message[-1]
			else:
				receive(message)
	hold_for = outer
	return found


## Reads one message's frames as a reply and hands it to its request.
func receive(frames: Array) -> void:
	var decoded := PathServerMsgPack.decode(frames[-1])
	var reply: Variant = decoded[0]
	if decoded[1] != "" or not reply is Dictionary:
		push_warning("PathServer: unreadable reply ignored: %s" % decoded[1])
		return
	_on_reply(reply)


## Hands out the replies held while a synchronous call waited.
func release_held() -> void:
	if held.is_empty():
		return
	var replies := held
	held = []
	for reply in replies:
		_on_reply(reply)


## Gives every request and wait in flight its whole timeout from [param now] (the embedded
## server just became ready).
func restart_deadlines(now: int) -> void:
	for request: Pending in pending.values():
		request.deadline_ms = maxi(request.deadline_ms, now + request.timeout_ms)
	for waiter in waiters:
		waiter.deadline_ms = maxi(waiter.deadline_ms, now + waiter.timeout_ms)


## Fails the requests and waits past their deadline, naming [param endpoint]; with a
## [param server_failure], all of them, with that message.
func expire(now: int, endpoint: String, server_failure := "") -> void:
	var failed := server_failure != ""
	var expired: Array[Pending] = []
	for request: Pending in pending.values():
		if failed or now >= request.deadline_ms:
			expired.append(request)
	for request in expired:
		pending.erase(request.result.id)
		var id := request.result.id
		if failed:
			var error := PathServerReplies.client_error(
				"embedded_server_failed", server_failure, id
			)
			completed.emit(request, error)
			continue
		var why := "waiting for the connection" if not request.sent else "after sending"
		if not dealer.is_ready() and dealer.last_error != "":
			why += " (%s)" % dealer.last_error
		var message := "no reply from %s within %d ms, %s" % [endpoint, request.timeout_ms, why]
		completed.emit(request, PathServerReplies.client_error("timeout", message, id, true))
	var waiting: Array[Waiter] = []
	var timed_out: Array[Waiter] = []
	for waiter in waiters:
		if failed or now >= waiter.deadline_ms:
			timed_out.append(waiter)
		else:
			waiting.append(waiter)
	waiters = waiting
	for waiter in timed_out:
		waiter.finished.emit(false)


func finish_waiters(ok: bool) -> void:
	var finishing := waiters
	waiters = []
	for waiter in finishing:
		waiter.finished.emit(ok)


func _lost(reason: String) -> void:
	for request: Pending in pending.values():
		request.sent = false
	if _was_ready:
		_was_ready = false
		disconnected.emit(reason)


func _send_unsent(now: int) -> void:
	for request: Pending in pending.values():
		if not request.sent and now >= request.retry_at_ms:
			if not dealer.send([PackedByteArray(), request.bytes]):
				return
			request.sent = true


func _on_reply(reply: Dictionary) -> void:
	var id: Variant = reply.get("id")
	if hold_for != 0 and id != hold_for:
		held.append(reply)
		return
	if not id is int or not pending.has(id):
		# A reply to a request that timed out or was cancelled, or one the server could not
		# read (id nil: a client bug worth seeing).
		if id == null:
			push_warning("PathServer: the server could not read a request: %s" % reply)
		return
	var request: Pending = pending[id]
	if _retry_later(request, reply):
		return
	pending.erase(id)
	completed.emit(request, reply)


## Whether [param reply] is "overloaded" with time left before [param request]'s deadline to
## send it again after the reply's retry_after_ms: then it is marked to be sent again then.
func _retry_later(request: Pending, reply: Dictionary) -> bool:
	var error: Variant = reply.get("error")
	if not (error is Dictionary and error.get("code") == "overloaded"):
		return false
	var retry_ms: int = reply.get("retry_after_ms", 0) if reply.get("retry_after_ms") is int else 0
	var now := Time.get_ticks_msec()
	if now + retry_ms >= request.deadline_ms:
		return false
	# The server asked to come back later; the deadline still bounds the wait.
	request.sent = false
	request.retry_at_ms = now + retry_ms
	return true


## A request waiting for its reply.
class Pending:
	extends RefCounted

	## Emitted once, when the request completed (answered, failed, timed out or cancelled).
	signal finished

	var result := PathServerResult.new()
	## Its [enum PathServerClient.Kind].
	var kind := 0
	var body := {}
	var bytes := PackedByteArray()
	var deadline_ms := 0
	var timeout_ms := 0
	var sent := false
	## When the server answered "overloaded": not before this time.
	var retry_at_ms := 0
	## PATHS only: one PathServerResult per request, filled on completion.
	var batch: Array[PathServerResult] = []
	var done := false
	## The request's "map" field, for the generation its reply names.
	var body_map := ""
	## What the client answers itself, without sending.
	var local_reply := {}
	## Added to a successful result's info (put_tilemap: the layer's rect).
	var extra_info := {}

	func finish() -> void:
		done = true
		finished.emit()


## A call waiting for the connection.
class Waiter:
	extends RefCounted

	signal finished(ok: bool)

	var deadline_ms := 0
	var timeout_ms := 0
