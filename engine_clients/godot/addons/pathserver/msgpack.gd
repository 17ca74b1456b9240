class_name PathServerMsgPack
extends RefCounted
## A MessagePack encoder and decoder for the subset pathserver speaks: nil, bool, int, float,
## str, bin, array and map.
##
## Encoding picks the smallest form for ints, strings, arrays and maps, as msgpack-python does,
## so the bytes equal what the server's Python side produces for the same values in the same
## key order. Floats always go out as float64. [Vector2] and [Vector2i] become two-element
## arrays; [Vector3] and [Vector3i] are points on a floor, the wire's
## [code][x, y, floor][/code] (the floor an int: [code]z[/code] rounded); [Rect2] and
## [Rect2i] the wire's [code][x, y, w, h][/code], packed arrays become arrays,
## [PackedByteArray] becomes bin and [StringName] str.
## [codeblock]
## var bytes := PathServerMsgPack.encode({"id": 1, "op": "ping"})
## print(bytes.hex_encode())  # 82a2696401a26f70a470696e67
## var decoded := PathServerMsgPack.decode(bytes)
## print(decoded)  # [{ "id": 1, "op": "ping" }, ""]
## [/codeblock]

## Nesting deeper than this is refused when decoding (a hostile or corrupt reply).
const MAX_DEPTH := 64
## Types written as a msgpack array.
const SEQUENCE_TYPES: Array[int] = [
	TYPE_ARRAY,
	TYPE_PACKED_INT32_ARRAY,
	TYPE_PACKED_INT64_ARRAY,
	TYPE_PACKED_FLOAT32_ARRAY,
	TYPE_PACKED_FLOAT64_ARRAY,
	TYPE_PACKED_STRING_ARRAY,
	TYPE_PACKED_VECTOR2_ARRAY,
	TYPE_PACKED_VECTOR3_ARRAY,
]


## Returns [param value] as MessagePack bytes. Types outside the subset are encoded as nil and
## reported with push_error, so a caller's mistake shows up without breaking the stream.
static func encode(value: Variant) -> PackedByteArray:
	var out := PackedByteArray()
	_write(out, value)
	return out


## Appends [param value]'s MessagePack bytes to [param out] (as [method encode] makes them).
static func write(out: PackedByteArray, value: Variant) -> void:
	_write(out, value)


## Decodes one MessagePack value that fills [param data] entirely. Returns
## [code][value, error][/code]: error is "" on success, otherwise a message saying what is wrong
## and at which byte offset (and value is null).
static func decode(data: PackedByteArray) -> Array:
	var reader := _Reader.new(data)
	var value: Variant = reader.read_value(0)
	if not reader.failed and reader.pos != data.size():
		reader.fail("%d trailing bytes after the value" % (data.size() - reader.pos))
	if reader.failed:
		return [null, "msgpack: %s (at byte %d)" % [reader.error, reader.pos]]
	return [value, ""]


static func _write(out: PackedByteArray, value: Variant) -> void:
	match typeof(value):
		TYPE_NIL:
			out.append(0xC0)
		TYPE_BOOL:
			out.append(0xC3 if value else 0xC2)
		TYPE_INT:
			_write_int(out, value)
		TYPE_FLOAT:
			# encode_double writes little-endian: the tag after the value, the whole reversed.
			var raw := PackedByteArray()
			raw.resize(9)
			raw.encode_double(0, value)
			raw[8] = 0xCB
			raw.reverse()
			out.append_array(raw)
		TYPE_STRING, TYPE_STRING_NAME, TYPE_NODE_PATH:
			var utf8 := str(value).to_utf8_buffer()
			_write_header(out, utf8.size(), 0xA0, 32, 0xD9, 0xDA)  # fixstr, str 8, 16, 32
			out.append_array(utf8)
		TYPE_PACKED_BYTE_ARRAY:
			_write_header(out, value.size(), 0, 0, 0xC4, 0xC5)  # bin 8, 16, 32
			out.append_array(value)
		TYPE_VECTOR2:
			# [x, y] as two float64, reversed as a float is (y first): one reversal.
			var raw := PackedByteArray()
			raw.resize(19)
			raw.encode_double(0, value.y)
			raw[8] = 0xCB
			raw.encode_double(9, value.x)
			raw[17] = 0xCB
			raw[18] = 0x92
			raw.reverse()
			out.append_array(raw)
		TYPE_VECTOR2I:
			out.append(0x92)  # a fixarray of 2
			_write_int(out, value.x)
			_write_int(out, value.y)
		TYPE_VECTOR3:
			out.append(0x93)  # a fixarray of 3
			_write(out, value.x)
			_write(out, value.y)
			_write_int(out, roundi(value.z))
		TYPE_VECTOR3I:
			out.append(0x93)
			_write_int(out, value.x)
			_write_int(out, value.y)
			_write_int(out, value.z)
		TYPE_RECT2, TYPE_RECT2I:
			# The wire's rectangle: [x, y, w, h].
			_write(out, [value.position.x, value.position.y, value.size.x, value.size.y])
		TYPE_DICTIONARY:
			_write_header(out, value.size(), 0x80, 16, -1, 0xDE)  # fixmap, map 16, 32
			for key: Variant in value:
				_write(out, key)
				_write(out, value[key])
		_:
			if value is Encoded:
				out.append_array(value.bytes)
			elif typeof(value) in SEQUENCE_TYPES:
				_write_header(out, value.size(), 0x90, 16, -1, 0xDC)  # fixarray, array 16, 32
				for item: Variant in value:
					_write(out, item)
			else:
				push_error(
					"PathServerMsgPack: cannot encode a %s; sent nil" % type_string(typeof(value))
				)
				out.append(0xC0)


static func _write_int(out: PackedByteArray, value: int) -> void:
	if value >= 0:
		if value < 0x80:
			out.append(value)
		elif value <= 0xFF:
			out.append(0xCC)
			out.append(value)
		elif value <= 0xFFFF:
			out.append(0xCD)
			_write_be(out, value, 2)
		elif value <= 0xFFFFFFFF:
			out.append(0xCE)
			_write_be(out, value, 4)
		else:
			out.append(0xCF)
			_write_be(out, value, 8)
	elif value >= -32:
		out.append(value & 0xFF)
	elif value >= -0x80:
		out.append(0xD0)
		_write_be(out, value, 1)
	elif value >= -0x8000:
		out.append(0xD1)
		_write_be(out, value, 2)
	elif value >= -0x80000000:
		out.append(0xD2)
		_write_be(out, value, 4)
	else:
		out.append(0xD3)
		_write_be(out, value, 8)


static func _write_be(out: PackedByteArray, value: int, width: int) -> void:
	for shift in range((width - 1) * 8, -1, -8):
		out.append((value >> shift) & 0xFF)


## The header of a str, bin, array or map of [param size] bytes or items: [param fix] | size
## when it is below [param fix_below], else [param tag8] (-1: the type has none) and one byte,
## [param tag16] and two bytes, or the tag after [param tag16] and four bytes.
static func _write_header(
	out: PackedByteArray, size: int, fix: int, fix_below: int, tag8: int, tag16: int
) -> void:
	if size < fix_below:
		out.append(fix | size)
	elif size <= 0xFF and tag8 >= 0:
		out.append(tag8)
		out.append(size)
	elif size <= 0xFFFF:
		out.append(tag16)
		_write_be(out, size, 2)
	else:
		out.append(tag16 + 1)
		_write_be(out, size, 4)


## Reads values from a byte buffer; the first problem found is kept in [member error] and every
## later read returns null, so callers check once at the end. The forms a reply is made of
## (fixint, fixstr, maps with fixstr keys, fixarray, bool, float64) are read inline: a call
## costs more in GDScript than the byte work.
class _Reader:
	extends RefCounted

	var data: PackedByteArray
	var size := 0
	var pos := 0
	var error := ""
	## True once [member error] is set: what the reads test.
	var failed := false

	func _init(bytes: PackedByteArray) -> void:
		data = bytes
		size = bytes.size()

	func read_value(depth: int) -> Variant:
		if failed:
			return null
		if depth > MAX_DEPTH:
			fail("nested deeper than %d" % MAX_DEPTH)
			return null
		if pos >= size:
			_need(1)
			return null
		var tag := data[pos]
		pos += 1
		var value: Variant = null
		if tag < 0x80:
			value = tag
		elif tag >= 0xE0:
			value = tag - 0x100
		elif tag >= 0xA0 and tag < 0xC0:
			var end := pos + (tag & 0x1F)
			if end <= size:
				value = data.slice(pos, end).get_string_from_utf8()
				pos = end
			else:
				_need(tag & 0x1F)
		elif tag < 0x90:
			value = _read_map(tag & 0x0F, depth)
		elif tag < 0xA0:
			value = _read_array(tag & 0x0F, depth)
		elif tag == 0xC2 or tag == 0xC3:
			value = tag == 0xC3
		elif tag == 0xCB:
			value = _read_float(8)
		else:
			value = _read_tagged(tag, depth)
		return value

	func _read_tagged(tag: int, depth: int) -> Variant:
		var value: Variant = null
		if tag >= 0xC4 and tag <= 0xC6:
			value = _read_bin(_read_uint(1 << (tag - 0xC4)))
		elif tag == 0xCA:
			value = _read_float(4)
		elif tag >= 0xCC and tag <= 0xCF:
			value = _read_uint(1 << (tag - 0xCC))
			if value < 0:
				fail("uint64 above 2^63 does not fit a Godot int")
		elif tag >= 0xD0 and tag <= 0xD3:
			value = _read_int(1 << (tag - 0xD0))
		elif tag >= 0xD9 and tag <= 0xDB:
			value = _read_str(_read_uint(1 << (tag - 0xD9)))
		elif tag == 0xDC or tag == 0xDD:
			value = _read_array(_read_uint(2 if tag == 0xDC else 4), depth)
		elif tag == 0xDE or tag == 0xDF:
			value = _read_map(_read_uint(2 if tag == 0xDE else 4), depth)
		elif tag != 0xC0:
			pos -= 1
			fail("unsupported type byte 0x%02x" % tag)
		return null if failed else value

	func fail(message: String) -> void:
		if not failed:
			error = message
			failed = true

	func _need(count: int) -> bool:
		if pos + count > size:
			fail("truncated: %d more bytes needed" % (pos + count - size))
			return false
		return true

	func _read_uint(width: int) -> int:
		if not _need(width):
			return 0
		var value := 0
		for i in width:
			value = (value << 8) | data[pos + i]
		pos += width
		return value

	func _read_int(width: int) -> int:
		var value := _read_uint(width)
		if width < 8 and value >= 1 << (width * 8 - 1):
			value -= 1 << (width * 8)
		return value

	func _read_float(width: int) -> float:
		if not _need(width):
			return 0.0
		var raw := data.slice(pos, pos + width)
		raw.reverse()
		pos += width
		return raw.decode_float(0) if width == 4 else raw.decode_double(0)

	func _read_str(count: int) -> Variant:
		if failed or not _need(count):
			return null
		var text := data.slice(pos, pos + count).get_string_from_utf8()
		pos += count
		return text

	func _read_bin(count: int) -> Variant:
		if failed or not _need(count):
			return null
		var bytes := data.slice(pos, pos + count)
		pos += count
		return bytes

	func _read_array(count: int, depth: int) -> Variant:
		# Every element takes at least one byte: refuse sizes the buffer cannot hold before
		# allocating anything.
		if failed or not _need(count):
			return null
		var items := []
		items.resize(count)
		for i in count:
			items[i] = read_value(depth + 1)
		return null if failed else items

	func _read_map(count: int, depth: int) -> Variant:
		if failed or not _need(count * 2):
			return null
		var result := {}
		var inner := depth + 1
		if inner > MAX_DEPTH:
			# Too deep for any entry: read_value says so.
			for i in count:
				result[read_value(inner)] = read_value(inner)
			return null if failed else result
		for i in count:
			# A fixstr key and the scalars of a reply (fixint, bool, fixstr, float64) read here,
			# anything else as any value.
			var key: Variant = null
			var tag := data[pos] if pos < size else 0
			var end := pos + 1 + (tag & 0x1F)
			if tag >= 0xA0 and tag < 0xC0 and end <= size:
				key = data.slice(pos + 1, end).get_string_from_utf8()
				pos = end
			else:
				key = read_value(inner)
			tag = data[pos] if pos < size else 0xC1
			if tag < 0x80:
				result[key] = tag
				pos += 1
			elif tag == 0xC3 or tag == 0xC2:
				result[key] = tag == 0xC3
				pos += 1
			elif tag >= 0xA0 and tag < 0xC0 and pos + 1 + (tag & 0x1F) <= size:
				end = pos + 1 + (tag & 0x1F)
				result[key] = data.slice(pos + 1, end).get_string_from_utf8()
				pos = end
			elif tag == 0xCB and pos + 9 <= size:
				var raw := data.slice(pos + 1, pos + 9)
				raw.reverse()
				result[key] = raw.decode_double(0)
				pos += 9
			else:
				result[key] = read_value(inner)
		return null if failed else result


## A value encoded already, written as it is: what a caller sending the same large value on
## every request (a flow field's goals, each frame) keeps instead of encoding it again.
class Encoded:
	extends RefCounted

	var bytes: PackedByteArray

	func _init(value: Variant) -> void:
		bytes = PathServerMsgPack.encode(value)
