// PathServerClient.MsgPack.cs: part of the pathserver C# client (PathServerClient.cs lists its
// files): MsgPack, the msgpack encoder and decoder.

using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;

namespace PathServer
{
    #region MsgPack

    /// <summary>A msgpack map that keeps its keys in insertion order (requests are encoded in this order).</summary>
    internal sealed class MsgPackMap : List<KeyValuePair<string, object>>
    {
        public void Add(string key, object value)
        {
            Add(new KeyValuePair<string, object>(key, value));
        }
    }

    /// <summary>An ext value (type, data), decoded opaquely: the protocol does not use ext types.</summary>
    internal sealed class MsgPackExtension
    {
        public sbyte Type { get; set; }
        public byte[] Data { get; set; }
    }

    /// <summary>
    /// The msgpack subset the protocol uses. Encode: null, bool, all integer types (smallest form,
    /// as msgpack-python does), float (float32), double (float64), string, byte[], maps
    /// (IDictionary or key/value pairs, in enumeration order), lists and arrays. Decode: nil -> null,
    /// bool, int -> long (ulong above long.MaxValue), float32 -> float, float64 -> double, str -> string,
    /// bin -> byte[], array -> object[], map -> Dictionary&lt;string, object&gt;, ext -> MsgPackExtension.
    /// </summary>
    internal static class MsgPack
    {
        public const int MaxDepth = 64;

        public static byte[] Encode(object value)
        {
            var output = new MemoryStream();
            Write(output, value, 0);
            return output.ToArray();
        }

        /// <summary>Appends the encoding of value to output.</summary>
        public static void Encode(MemoryStream output, object value)
        {
            Write(output, value, 0);
        }

        static void Write(MemoryStream output, object value, int depth)
        {
            if (depth > MaxDepth) throw new ArgumentException("msgpack: nesting deeper than " + MaxDepth);
            if (value == null) { output.WriteByte(0xc0); return; }
            if (value is bool) { output.WriteByte((bool)value ? (byte)0xc3 : (byte)0xc2); return; }
            if (value is string) { WriteString(output, (string)value); return; }
            if (value is byte[]) { WriteBinary(output, (byte[])value); return; }
            if (value is float) { output.WriteByte(0xca); WriteBigEndian(output, (uint)BitConverter.ToInt32(BitConverter.GetBytes((float)value), 0), 4); return; }
            if (value is double) { output.WriteByte(0xcb); WriteBigEndian(output, (ulong)BitConverter.DoubleToInt64Bits((double)value), 8); return; }
            if (value is decimal) { Write(output, (double)(decimal)value, depth); return; }
            if (value is sbyte || value is short || value is int || value is long) { WriteInteger(output, Convert.ToInt64(value, CultureInfo.InvariantCulture)); return; }
            if (value is byte || value is ushort || value is uint || value is ulong) { WriteUnsigned(output, Convert.ToUInt64(value, CultureInfo.InvariantCulture)); return; }
            if (value is Enum) throw new ArgumentException("msgpack: enums have no wire form here; send their snake_case name as a string");
            // Both map forms' loops are written out deliberately: a shared per-entry call measured slower.
            var pairs = value as IEnumerable<KeyValuePair<string, object>>;
            if (pairs != null)
            {
                var list = new List<KeyValuePair<string, object>>(pairs);
                WriteHeader(output, list.Count, 0x80, 16, 0xde, 0xdf);
                foreach (var pair in list)
                {
                    Write(output, pair.Key, depth + 1);
                    Write(output, pair.Value, depth + 1);
                }
                return;
            }
            var dictionary = value as IDictionary;
            if (dictionary != null)
            {
                WriteHeader(output, dictionary.Count, 0x80, 16, 0xde, 0xdf);
                foreach (DictionaryEntry entry in dictionary)
                {
                    Write(output, entry.Key, depth + 1);
                    Write(output, entry.Value, depth + 1);
                }
                return;
            }
            var sequence = value as IEnumerable;
            if (sequence != null)
            {
                var items = new List<object>();
                foreach (var item in sequence) items.Add(item);
                WriteHeader(output, items.Count, 0x90, 16, 0xdc, 0xdd);
                foreach (var item in items) Write(output, item, depth + 1);
                return;
            }
            throw new ArgumentException("msgpack: cannot encode a " + value.GetType().FullName);
        }

        static void WriteHeader(MemoryStream output, int count, byte fixBase, int fixLimit, byte code16, byte code32)
        {
            if (count < fixLimit) output.WriteByte((byte)(fixBase | count));
            else if (count <= 0xffff) { output.WriteByte(code16); WriteBigEndian(output, (ulong)count, 2); }
            else { output.WriteByte(code32); WriteBigEndian(output, (ulong)count, 4); }
        }

        static void WriteString(MemoryStream output, string value)
        {
            var bytes = Encoding.UTF8.GetBytes(value);
            int n = bytes.Length;
            if (n < 32) output.WriteByte((byte)(0xa0 | n));
            else if (n <= 0xff) { output.WriteByte(0xd9); output.WriteByte((byte)n); }
            else if (n <= 0xffff) { output.WriteByte(0xda); WriteBigEndian(output, (ulong)n, 2); }
            else { output.WriteByte(0xdb); WriteBigEndian(output, (ulong)n, 4); }
            output.Write(bytes, 0, n);
        }

        static void WriteBinary(MemoryStream output, byte[] bytes)
        {
            int n = bytes.Length;
            if (n <= 0xff) { output.WriteByte(0xc4); output.WriteByte((byte)n); }
            else if (n <= 0xffff) { output.WriteByte(0xc5); WriteBigEndian(output, (ulong)n, 2); }
            else { output.WriteByte(0xc6); WriteBigEndian(output, (ulong)n, 4); }
            output.Write(bytes, 0, n);
        }

        static void WriteInteger(MemoryStream output, long value)
        {
            if (value >= 0) { WriteUnsigned(output, (ulong)value); return; }
            if (value >= -32) output.WriteByte((byte)(sbyte)value);
            else if (value >= sbyte.MinValue) { output.WriteByte(0xd0); output.WriteByte((byte)(sbyte)value); }
            else if (value >= short.MinValue) { output.WriteByte(0xd1); WriteBigEndian(output, (ulong)value, 2); }
            else if (value >= int.MinValue) { output.WriteByte(0xd2); WriteBigEndian(output, (ulong)value, 4); }
            else { output.WriteByte(0xd3); WriteBigEndian(output, (ulong)value, 8); }
        }

        static void WriteUnsigned(MemoryStream output, ulong value)
        {
            if (value <= 0x7f) output.WriteByte((byte)value);
            else if (value <= 0xff) { output.WriteByte(0xcc); output.WriteByte((byte)value); }
            else if (value <= 0xffff) { output.WriteByte(0xcd); WriteBigEndian(output, value, 2); }
            else if (value <= 0xffffffff) { output.WriteByte(0xce); WriteBigEndian(output, value, 4); }
            else { output.WriteByte(0xcf); WriteBigEndian(output, value, 8); }
        }

        static void WriteBigEndian(MemoryStream output, ulong value, int size)
        {
            for (int shift = (size - 1) * 8; shift >= 0; shift -= 8) output.WriteByte((byte)(value >> shift));
        }

        /// <summary>Decodes exactly one value that fills data; throws FormatException otherwise.</summary>
        public static object Decode(byte[] data)
        {
            int offset = 0;
            var value = Decode(data, ref offset);
            if (offset != data.Length) throw new FormatException("msgpack: " + (data.Length - offset) + " bytes after the value");
            return value;
        }

        public static object Decode(byte[] data, ref int offset)
        {
            return Read(data, ref offset, 0);
        }

        static object Read(byte[] data, ref int at, int depth)
        {
            if (depth > MaxDepth) throw new FormatException("msgpack: nesting deeper than " + MaxDepth);
            if (at >= data.Length) throw new FormatException("msgpack: truncated data");
            byte code = data[at++];
            int start;
            if (code <= 0x7f) return (long)code;
            if (code >= 0xe0) return (long)(sbyte)code;
            if (code >= 0xa0 && code <= 0xbf) return ReadString(data, ref at, code & 0x1f);
            if (code >= 0x90 && code <= 0x9f) return ReadArray(data, ref at, code & 0x0f, depth);
            if (code >= 0x80 && code <= 0x8f) return ReadMap(data, ref at, code & 0x0f, depth);
            switch (code)
            {
                case 0xc0: return null;
                case 0xc2: return false;
                case 0xc3: return true;
                case 0xc4: return ReadBytes(data, ref at, (int)ReadUnsigned(data, ref at, 1));
                case 0xc5: return ReadBytes(data, ref at, (int)ReadUnsigned(data, ref at, 2));
                case 0xc6: return ReadBytes(data, ref at, Length(ReadUnsigned(data, ref at, 4)));
                case 0xc7: return ReadExtension(data, ref at, (int)ReadUnsigned(data, ref at, 1));
                case 0xc8: return ReadExtension(data, ref at, (int)ReadUnsigned(data, ref at, 2));
                case 0xc9: return ReadExtension(data, ref at, Length(ReadUnsigned(data, ref at, 4)));
                case 0xca:
                    start = at;
                    Take(data, ref at, 4);
                    return BitConverter.ToSingle(BitConverter.GetBytes((int)ReadBigEndianAt(data, start, 4)), 0);
                case 0xcb:
                    start = at;
                    Take(data, ref at, 8);
                    return BitConverter.Int64BitsToDouble((long)ReadBigEndianAt(data, start, 8));
                case 0xcc: return (long)ReadUnsigned(data, ref at, 1);
                case 0xcd: return (long)ReadUnsigned(data, ref at, 2);
                case 0xce: return (long)ReadUnsigned(data, ref at, 4);
                case 0xcf:
                    ulong big = ReadUnsigned(data, ref at, 8);
                    return big <= long.MaxValue ? (object)(long)big : big;
                case 0xd0: return (long)(sbyte)ReadUnsigned(data, ref at, 1);
                case 0xd1: return (long)(short)ReadUnsigned(data, ref at, 2);
                case 0xd2: return (long)(int)ReadUnsigned(data, ref at, 4);
                case 0xd3: return (long)ReadUnsigned(data, ref at, 8);
                case 0xd4: return ReadExtension(data, ref at, 1);
                case 0xd5: return ReadExtension(data, ref at, 2);
                case 0xd6: return ReadExtension(data, ref at, 4);
                case 0xd7: return ReadExtension(data, ref at, 8);
                case 0xd8: return ReadExtension(data, ref at, 16);
                case 0xd9: return ReadString(data, ref at, (int)ReadUnsigned(data, ref at, 1));
                case 0xda: return ReadString(data, ref at, (int)ReadUnsigned(data, ref at, 2));
                case 0xdb: return ReadString(data, ref at, Length(ReadUnsigned(data, ref at, 4)));
                case 0xdc: return ReadArray(data, ref at, (int)ReadUnsigned(data, ref at, 2), depth);
                case 0xdd: return ReadArray(data, ref at, Length(ReadUnsigned(data, ref at, 4)), depth);
                case 0xde: return ReadMap(data, ref at, (int)ReadUnsigned(data, ref at, 2), depth);
                case 0xdf: return ReadMap(data, ref at, Length(ReadUnsigned(data, ref at, 4)), depth);
                default: throw new FormatException("msgpack: 0xc1 is never used");
            }
        }

        static int Length(ulong length)
        {
            if (length > int.MaxValue) throw new FormatException("msgpack: length " + length + " is too large");
            return (int)length;
        }

        // Bounds-checks and advances; callers read from the old offset.
        static void Take(byte[] data, ref int at, int count)
        {
            if (count < 0 || count > data.Length - at) throw new FormatException("msgpack: truncated data");
            at += count;
        }

        static ulong ReadUnsigned(byte[] data, ref int at, int size)
        {
            int start = at;
            Take(data, ref at, size);
            return ReadBigEndianAt(data, start, size);
        }

        static ulong ReadBigEndianAt(byte[] data, int start, int size)
        {
            ulong value = 0;
            for (int i = 0; i < size; i++) value = (value << 8) | data[start + i];
            return value;
        }

        static string ReadString(byte[] data, ref int at, int length)
        {
            int start = at;
            Take(data, ref at, length);
            return Encoding.UTF8.GetString(data, start, length);
        }

        static byte[] ReadBytes(byte[] data, ref int at, int length)
        {
            int start = at;
            Take(data, ref at, length);
            var bytes = new byte[length];
            Buffer.BlockCopy(data, start, bytes, 0, length);
            return bytes;
        }

        static MsgPackExtension ReadExtension(byte[] data, ref int at, int length)
        {
            var type = (sbyte)ReadUnsigned(data, ref at, 1);
            return new MsgPackExtension { Type = type, Data = ReadBytes(data, ref at, length) };
        }

        static object[] ReadArray(byte[] data, ref int at, int count, int depth)
        {
            // Every element takes at least one byte: a larger count is a lie, not an allocation.
            if (count > data.Length - at) throw new FormatException("msgpack: array of " + count + " items in " + (data.Length - at) + " bytes");
            var items = new object[count];
            for (int i = 0; i < count; i++) items[i] = Read(data, ref at, depth + 1);
            return items;
        }

        static Dictionary<string, object> ReadMap(byte[] data, ref int at, int count, int depth)
        {
            if (count > (data.Length - at) / 2) throw new FormatException("msgpack: map of " + count + " entries in " + (data.Length - at) + " bytes");
            var map = new Dictionary<string, object>(count);
            for (int i = 0; i < count; i++)
            {
                var key = Read(data, ref at, depth + 1);
                var name = key as string ?? Convert.ToString(key, CultureInfo.InvariantCulture);
                map[name] = Read(data, ref at, depth + 1);
            }
            return map;
        }

        // ------------------------------------------------------------ helpers for decoded values

        public static object Get(IDictionary<string, object> map, string key)
        {
            object value;
            return map != null && map.TryGetValue(key, out value) ? value : null;
        }

        public static bool IsNumber(object value)
        {
            return value is long || value is ulong || value is double || value is float || value is int;
        }

        public static double ToDouble(object value)
        {
            return Convert.ToDouble(value, CultureInfo.InvariantCulture);
        }

        public static long ToLong(object value)
        {
            if (value is double || value is float)
            {
                double d = ToDouble(value);
                if (d != Math.Floor(d)) throw new FormatException("msgpack: " + d + " is not a whole number");
                return (long)d;
            }
            return Convert.ToInt64(value, CultureInfo.InvariantCulture);
        }

        /// <summary>A compact JSON-like rendering, for logs and test output.</summary>
        public static string ToDebugString(object value)
        {
            var text = new StringBuilder();
            AppendDebug(text, value);
            return text.ToString();
        }

        static void AppendDebug(StringBuilder text, object value)
        {
            if (value == null) { text.Append("nil"); return; }
            if (value is bool) { text.Append((bool)value ? "true" : "false"); return; }
            if (value is string) { text.Append('"').Append(((string)value).Replace("\"", "\\\"")).Append('"'); return; }
            if (value is byte[]) { text.Append("bin(").Append(((byte[])value).Length).Append(')'); return; }
            if (value is double) { text.Append(((double)value).ToString("R", CultureInfo.InvariantCulture)); return; }
            if (value is float) { text.Append(((float)value).ToString("R", CultureInfo.InvariantCulture)); return; }
            var pairs = value as IEnumerable<KeyValuePair<string, object>>;
            if (pairs != null)
            {
                text.Append('{');
                bool first = true;
                foreach (var pair in pairs)
                {
                    if (!first) text.Append(", ");
                    first = false;
                    AppendDebug(text, pair.Key);
                    text.Append(": ");
                    AppendDebug(text, pair.Value);
                }
                text.Append('}');
                return;
            }
            var items = value as IEnumerable;
            if (items != null)
            {
                text.Append('[');
                bool first = true;
                foreach (var item in items)
                {
                    if (!first) text.Append(", ");
                    first = false;
                    AppendDebug(text, item);
                }
                text.Append(']');
                return;
            }
            text.Append(Convert.ToString(value, CultureInfo.InvariantCulture));
        }
    }
    #endregion
}
