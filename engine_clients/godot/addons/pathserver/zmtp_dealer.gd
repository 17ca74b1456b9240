class_name PathServerZmtpDealer
extends RefCounted
## A ZeroMQ DEALER socket in pure GDScript: ZMTP 3.x over [StreamPeerTCP] with the NULL
## mechanism, enough to talk to a libzmq ROUTER.
##
## It never blocks: call [method poll] once per frame; it advances the connection, flushes what
## is queued for sending, answers heartbeats and returns the messages that arrived. Reconnecting
## is the caller's decision (see [PathServerClient]); this class reports [member state] and
## [member last_error] and starts over on [method open].
## [codeblock]
## var dealer := PathServerZmtpDealer.new()
## dealer.open("tcp://127.0.0.1:5555")
## # every frame:
## for message in dealer.poll():  # message: Array of PackedByteArray frames
##     print(message[-1].hex_encode())
## dealer.send([PackedByteArray(), body])  # empty delimiter, then the body
## [/codeblock]

enum State { CLOSED, CONNECTING, GREETING, HANDSHAKE, READY }

const FLAG_MORE := 0x01
const FLAG_LONG := 0x02
const FLAG_COMMAND := 0x04
## The greeting's fixed part: signature, version 3.0, mechanism "NULL" (padded to 20 bytes),
## as-server 0 and 31 bytes of filler; see ZeroMQ RFC 23.
const GREETING_SIZE := 64
## A handshake taking longer than this means a peer that is not a ZMTP 3 ROUTER.
const HANDSHAKE_TIMEOUT_MS := 3000

var state := State.CLOSED
## Why the connection last closed or failed, for logs and error messages.
var last_error := ""
## Properties the peer sent in its READY command (e.g. "Socket-Type": "ROUTER").
var peer_properties := {}
## Heartbeat PINGs answered on this connection (libzmq drops peers that stay silent).
var pings_answered := 0

var _tcp := StreamPeerTCP.new()
var _inbox := PackedByteArray()
## Read position in _inbox; consumed bytes are dropped once per poll, not once per frame.
var _in_pos := 0
var _outbox := PackedByteArray()
var _frames: Array[PackedByteArray] = []
var _state_since_ms := 0


## Starts connecting to [param endpoint] ("tcp://HOST:PORT"). Returns an error code; on
## failure [member last_error] says why. Messages sent before the handshake completes wait.
func open(endpoint: String) -> Error:
	close()
	var address := parse_endpoint(endpoint)
	if address.is_empty():
		last_error = "bad endpoint %s: expected tcp://HOST:PORT" % endpoint
		return ERR_INVALID_PARAMETER
	var err := _tcp.connect_to_host(address[0], address[1])
	if err != OK:
		last_error = "cannot connect to %s: %s" % [endpoint, error_string(err)]
		return err
	_set_state(State.CONNECTING)
	return OK


## Drops the connection and anything queued in either direction.
func close() -> void:
	_tcp.disconnect_from_host()
	_inbox.clear()
	_in_pos = 0
	_outbox.clear()
	_frames.clear()
	peer_properties.clear()
	pings_answered = 0
	if state != State.CLOSED:
		_set_state(State.CLOSED)


func is_ready() -> bool:
	return state == State.READY


## True while queued bytes wait for the socket to take them.
func has_output() -> bool:
	return not _outbox.is_empty()


## Hands what is queued to the socket now (else the next [method poll] does).
func flush() -> void:
	_flush()


## Queues one multipart message (an array of frames) and, with [param flush], hands what is
## queued to the socket at once (else the next [method poll] does: many messages, one write).
## Only valid in the READY state; returns false otherwise, so the caller keeps the message to
## send after (re)connecting.
func send(frames: Array, flush := true) -> bool:
	if state != State.READY:
		return false
	var last := frames.size() - 1
	for i in frames.size():
		write_frame(_outbox, frames[i], i < last, false)
	if flush:
		_flush()
	return true


## Advances the connection without blocking and returns the complete messages received since
## the last call, each an [Array] of [PackedByteArray] frames.
func poll() -> Array:
	var messages := []
	if state == State.CLOSED:
		return messages
	_tcp.poll()
	var status := _tcp.get_status()
	if status == StreamPeerTCP.STATUS_ERROR or status == StreamPeerTCP.STATUS_NONE:
		_fail("connection lost" if state == State.READY else "connection refused")
		return messages
	if status == StreamPeerTCP.STATUS_CONNECTING:
		_check_handshake_time()
		return messages
	if state == State.CONNECTING:
		# Nagle's algorithm would hold each small request until the previous segment's ACK,
		# which the server delays by up to 40 ms: the first request after connecting waited.
		_tcp.set_no_delay(true)
		_outbox.append_array(greeting())
		_set_state(State.GREETING)
	_receive()
	while state != State.CLOSED:
		var progressed := false
		if state == State.GREETING:
			progressed = _read_greeting()
		else:
			progressed = _read_frame(messages)
		if not progressed:
			break
	_drop_read()
	_flush()
	_check_handshake_time()
	return messages


## Reads the bytes that have come and returns the complete messages among them, as
## [method poll] does, without advancing the connection otherwise (no status check, nothing
## written): for a caller waiting on a reply, who calls [method poll] too, now and then.
func receive() -> Array:
	var messages := []
	if state != State.READY:
		return messages
	var available := _tcp.get_available_bytes()
	if available <= 0 or not _take(available):
		return messages
	while state == State.READY and _read_frame(messages):
		pass
	_drop_read()
	return messages


## Spins until the socket has bytes to read or the clock passes [param until_usec]
## ([method Time.get_ticks_usec]); true when there are bytes. For a caller that waits for a
## reply on the spot, then [method receive]s it: the loop makes no call but the socket's.
func wait_readable(until_usec: int) -> bool:
	while Time.get_ticks_usec() < until_usec:
		for i in 16:
			if _tcp.get_available_bytes() > 0:
				return true
	return _tcp.get_available_bytes() > 0


## Splits "tcp://HOST:PORT" into [code][host, port][/code]; empty when it is not one.
static func parse_endpoint(endpoint: String) -> Array:
	if not endpoint.begins_with("tcp://"):
		return []
	var rest := endpoint.substr(6)
	var colon := rest.rfind(":")
	if colon <= 0 or not rest.substr(colon + 1).is_valid_int():
		return []
	var host := rest.substr(0, colon).trim_prefix("[").trim_suffix("]")
	if host == "*" or host == "localhost":
		host = "127.0.0.1"
	return [host, rest.substr(colon + 1).to_int()]


## The 64-byte greeting a NULL-mechanism client sends.
static func greeting() -> PackedByteArray:
	var bytes := PackedByteArray([0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 0])
	bytes.append_array("NULL".to_ascii_buffer())
	bytes.resize(GREETING_SIZE)
	return bytes


## A READY command announcing this socket as a DEALER.
static func ready_command() -> PackedByteArray:
	var body := PackedByteArray([5])
	body.append_array("READY".to_ascii_buffer())
	body.append_array(encode_property("Socket-Type", "DEALER".to_ascii_buffer()))
	return encode_frame(body, false, true)


## One property of a READY command: a 1-byte name length, the name, a 4-byte big-endian value
## length and the value (libzmq puts no separator between them).
static func encode_property(name: String, value: PackedByteArray) -> PackedByteArray:
	var bytes := PackedByteArray([name.length()])
	bytes.append_array(name.to_ascii_buffer())
	bytes.append_array(_be(value.size(), 4))
	bytes.append_array(value)
	return bytes


## A frame: flags and a 1-byte length up to 255 bytes of body, else the long form with an
## 8-byte big-endian length.
static func encode_frame(body: PackedByteArray, more: bool, command: bool) -> PackedByteArray:
	var bytes := PackedByteArray()
	write_frame(bytes, body, more, command)
	return bytes


## Appends the frame [method encode_frame] makes to [param out].
static func write_frame(
	out: PackedByteArray, body: PackedByteArray, more: bool, command: bool
) -> void:
	var flags := (FLAG_MORE if more else 0) | (FLAG_COMMAND if command else 0)
	var size := body.size()
	if size <= 255:
		out.append(flags)
		out.append(size)
	else:
		out.append(flags | FLAG_LONG)
		out.append_array(_be(size, 8))
	out.append_array(body)


## Parses a READY command's properties into a Dictionary of name -> value bytes; null when
## they are malformed.
static func parse_properties(data: PackedByteArray, from: int) -> Variant:
	var properties := {}
	var pos := from
	while pos < data.size():
		var name_size := data[pos]
		if pos + 1 + name_size + 4 > data.size():
			return null
		var name := data.slice(pos + 1, pos + 1 + name_size).get_string_from_ascii()
		pos += 1 + name_size
		var value_size := 0
		for i in 4:
			value_size = (value_size << 8) | data[pos + i]
		pos += 4
		if pos + value_size > data.size():
			return null
		properties[name] = data.slice(pos, pos + value_size)
		pos += value_size
	return properties


static func _be(value: int, width: int) -> PackedByteArray:
	var bytes := PackedByteArray()
	for shift in range((width - 1) * 8, -1, -8):
		bytes.append((value >> shift) & 0xFF)
	return bytes


func _set_state(new_state: State) -> void:
	state = new_state
	_state_since_ms = Time.get_ticks_msec()


func _fail(reason: String) -> void:
	last_error = reason
	close()


func _check_handshake_time() -> void:
	if state == State.READY or state == State.CLOSED:
		return
	if Time.get_ticks_msec() - _state_since_ms > HANDSHAKE_TIMEOUT_MS:
		_fail("no ZMTP handshake within %d ms (is this a ZeroMQ ROUTER?)" % HANDSHAKE_TIMEOUT_MS)


func _receive() -> void:
	# Until the socket is empty: a large reply fills the socket buffer more than once, and
	# whatever came is handed out in this poll rather than the next frame's.
	var available := _tcp.get_available_bytes()
	while available > 0 and _take(available):
		available = _tcp.get_available_bytes()


## Reads [param available] bytes (the socket has them) into the inbox; false when that failed.
func _take(available: int) -> bool:
	var got := _tcp.get_partial_data(available)
	if got[0] != OK:
		_fail("receive failed: %s" % error_string(got[0]))
		return false
	if _inbox.is_empty():
		_inbox = got[1]
	else:
		_inbox.append_array(got[1])
	return true


func _flush() -> void:
	if _outbox.is_empty() or _tcp.get_status() != StreamPeerTCP.STATUS_CONNECTED:
		return
	# put_partial_data never waits: what the kernel does not take now goes out next frame.
	var sent := _tcp.put_partial_data(_outbox)
	if sent[0] != OK:
		_fail("send failed: %s" % error_string(sent[0]))
		return
	_outbox = PackedByteArray() if sent[1] == _outbox.size() else _outbox.slice(sent[1])


## Drops the bytes of the inbox read already.
func _drop_read() -> void:
	if _in_pos == 0:
		return
	_inbox = PackedByteArray() if _in_pos == _inbox.size() else _inbox.slice(_in_pos)
	_in_pos = 0


func _buffered() -> int:
	return _inbox.size() - _in_pos


func _consume(count: int) -> PackedByteArray:
	var bytes := _inbox.slice(_in_pos, _in_pos + count)
	_in_pos += count
	return bytes


func _read_greeting() -> bool:
	if _buffered() < GREETING_SIZE:
		return false
	var peer := _consume(GREETING_SIZE)
	# libzmq pads the signature with 0x01 and answers version 3.1: check only what matters.
	if peer[0] != 0xFF or peer[9] != 0x7F:
		_fail("the peer is not speaking ZMTP (bad greeting signature)")
		return false
	if peer[10] != 3:
		_fail("the peer speaks ZMTP %d.%d; 3.x is needed" % [peer[10], peer[11]])
		return false
	var mechanism := peer.slice(12, 32).get_string_from_ascii()
	if mechanism != "NULL":
		_fail("the peer wants the %s security mechanism; only NULL is supported" % mechanism)
		return false
	_outbox.append_array(ready_command())
	_set_state(State.HANDSHAKE)
	return true


func _read_frame(messages: Array) -> bool:
	if _buffered() < 2:
		return false
	var flags := _inbox[_in_pos]
	var header := 2
	var size := _inbox[_in_pos + 1]
	if flags & FLAG_LONG:
		header = 9
		if _buffered() < header:
			return false
		size = 0
		for i in 8:
			size = (size << 8) | _inbox[_in_pos + 1 + i]
		if size < 0:
			_fail("a frame longer than 2^63 bytes: not a ZMTP peer")
			return false
	if _buffered() < header + size:
		return false
	_in_pos += header
	var frame := _consume(size)
	if flags & FLAG_COMMAND:
		_on_command(frame)
	elif state != State.READY:
		_fail("the peer sent a message before the handshake completed")
	else:
		_frames.append(frame)
		if not (flags & FLAG_MORE):
			messages.append(_frames)
			_frames = []
	return state != State.CLOSED


func _on_command(frame: PackedByteArray) -> void:
	if frame.is_empty() or frame[0] + 1 > frame.size():
		_fail("malformed ZMTP command")
		return
	var name := frame.slice(1, 1 + frame[0]).get_string_from_ascii()
	var rest := 1 + frame[0]
	match name:
		"READY":
			var properties: Variant = parse_properties(frame, rest)
			if properties == null:
				_fail("malformed READY properties")
				return
			peer_properties = properties
			var socket_type: String = (
				peer_properties.get("Socket-Type", PackedByteArray()).get_string_from_ascii()
			)
			if socket_type != "ROUTER":
				_fail("the peer is a %s socket; a ROUTER is needed" % socket_type)
				return
			_set_state(State.READY)
		"PING":
			# PING carries a 2-byte TTL, then a context the PONG must echo.
			var pong := PackedByteArray([4])
			pong.append_array("PONG".to_ascii_buffer())
			pong.append_array(frame.slice(rest + 2))
			_outbox.append_array(encode_frame(pong, false, true))
			pings_answered += 1
		"ERROR":
			var reason_size := frame[rest] if frame.size() > rest else 0
			_fail(
				(
					"the peer closed: %s"
					% frame.slice(rest + 1, rest + 1 + reason_size).get_string_from_utf8()
				)
			)
		_:
			# PONG and commands from later ZMTP versions need no answer.
			pass
