// Tests.Bytes.cs: the C# client's tests (Tests.cs runs them) of bytes: msgpack and ZMTP
// offline, and the golden vectors of docs/protocol.md, offline and on the wire.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- offline: bytes

    // Generated with msgpack-python 1.x: msgpack.packb(value, use_bin_type=True).hex()
    static readonly object[][] MsgPackVectors =
    {
        new object[] { null, "c0" },
        new object[] { false, "c2" },
        new object[] { true, "c3" },
        new object[] { 0L, "00" },
        new object[] { 127L, "7f" },
        new object[] { 128L, "cc80" },
        new object[] { 255L, "ccff" },
        new object[] { 256L, "cd0100" },
        new object[] { 65535L, "cdffff" },
        new object[] { 65536L, "ce00010000" },
        new object[] { 4294967295L, "ceffffffff" },
        new object[] { 4294967296L, "cf0000000100000000" },
        new object[] { ulong.MaxValue, "cfffffffffffffffff" },
        new object[] { -1L, "ff" },
        new object[] { -32L, "e0" },
        new object[] { -33L, "d0df" },
        new object[] { -128L, "d080" },
        new object[] { -129L, "d1ff7f" },
        new object[] { -32768L, "d18000" },
        new object[] { -32769L, "d2ffff7fff" },
        new object[] { -2147483648L, "d280000000" },
        new object[] { -2147483649L, "d3ffffffff7fffffff" },
        new object[] { long.MinValue, "d38000000000000000" },
        new object[] { 1.5, "cb3ff8000000000000" },
        new object[] { -0.1, "cbbfb999999999999a" },
        new object[] { 1.5f, "ca3fc00000" },
        new object[] { "a", "a161" },
        new object[] { new string('x', 31), "bf" + string.Concat(Enumerable.Repeat("78", 31)) },
        new object[] { new string('x', 32), "d920" + string.Concat(Enumerable.Repeat("78", 32)) },
        new object[] { new string('y', 256), "da0100" + string.Concat(Enumerable.Repeat("79", 256)) },
        new object[] { "\u00e9\u2192", "a5c3a9e28692" },
        new object[] { new byte[] { 0, 1, 255 }, "c4030001ff" },
        new object[] { new object[] { 1L, new object[] { 2L, 3L }, new MsgPackMap() }, "930192020380" },
        new object[] { Enumerable.Range(0, 16).Select(i => (object)(long)i).ToArray(), "dc0010000102030405060708090a0b0c0d0e0f" },
        new object[] { new MsgPackMap { { "id", 7L }, { "op", "ping" } }, "82a2696407a26f70a470696e67" },
    };

    static async Task MsgPackEncodes()
    {
        await Task.Yield();
        foreach (var vector in MsgPackVectors)
            Equal((string)vector[1], Hex(MsgPack.Encode(vector[0])), "encoding " + MsgPack.ToDebugString(vector[0]));
        // Every integer width encodes by value, in the smallest form.
        Equal("cc80", Hex(MsgPack.Encode((byte)128)), "byte");
        Equal("d1ff7f", Hex(MsgPack.Encode((short)-129)), "short");
        Equal("cdffff", Hex(MsgPack.Encode((ushort)65535)), "ushort");
        Equal("05", Hex(MsgPack.Encode(5)), "int");
        Equal("ceffffffff", Hex(MsgPack.Encode(uint.MaxValue)), "uint");
        Equal("d0df", Hex(MsgPack.Encode((sbyte)-33)), "sbyte");
        var map16 = new MsgPackMap();
        for (int i = 0; i < 16; i++) map16.Add(i.ToString(CultureInfo.InvariantCulture), (long)i);
        Check(Hex(MsgPack.Encode(map16)).StartsWith("de0010a13000a13101"), "map16 header");
        Check(Hex(MsgPack.Encode(new byte[300])).StartsWith("c5012c"), "bin16 header");
    }

    static async Task MsgPackDecodes()
    {
        await Task.Yield();
        foreach (var vector in MsgPackVectors)
        {
            var decoded = MsgPack.Decode(FromHex((string)vector[1]));
            // Decoding normalizes: maps become dictionaries, arrays object[]; compare re-encoded bytes.
            Equal((string)vector[1], Hex(MsgPack.Encode(decoded)), "round trip of " + vector[1]);
        }
        Equal(300L, MsgPack.Decode(FromHex("cd012c")), "uint16 is a long");
        Equal(-1L, MsgPack.Decode(FromHex("d3ffffffffffffffff")), "int64");
        Equal(ulong.MaxValue, MsgPack.Decode(FromHex("cfffffffffffffffff")), "uint64 above long.MaxValue");
        Equal(1.5f, MsgPack.Decode(FromHex("ca3fc00000")), "float32 stays a float");
        Equal(-0.1, MsgPack.Decode(FromHex("cbbfb999999999999a")), "float64");
        // A reply the server might send: ints and floats mixed in coordinates.
        var reply = (IDictionary<string, object>)MsgPack.Decode(MsgPack.Encode(new MsgPackMap
        {
            { "id", 3L }, { "ok", true }, { "path", new object[] { new object[] { 1L, 2.5 }, new object[] { 3.25f, -4L } } },
        }));
        var path = (object[])reply["path"];
        Equal(2.5, MsgPack.ToDouble(((object[])path[0])[1]), "float coordinate");
        Equal(-4.0, MsgPack.ToDouble(((object[])path[1])[1]), "int coordinate");
        Equal(3L, MsgPack.ToLong(reply["id"]), "id");
        var extension = (MsgPackExtension)MsgPack.Decode(FromHex("d4ff01"));
        Equal((sbyte)-1, extension.Type, "ext type");
        var bin = (byte[])MsgPack.Decode(FromHex("c4030001ff"));
        Equal("0001ff", Hex(bin), "bin");
    }

    static async Task MsgPackRefusesBrokenInput()
    {
        await Task.Yield();
        foreach (var hex in new[] { "", "cd01", "a36162", "92", "dd7fffffff", "c1" })
        {
            Check(Throws<FormatException>(() => MsgPack.Decode(FromHex(hex))), "decoding \"" + hex + "\" should throw FormatException");
        }
        Check(Throws<FormatException>(() => MsgPack.Decode(FromHex("c0c0"))), "trailing bytes should throw");
        var deep = "";
        for (int i = 0; i < 100; i++) deep += "91";
        Check(Throws<FormatException>(() => MsgPack.Decode(FromHex(deep + "c0"))), "nesting deeper than MaxDepth should throw");
    }

    static async Task ZmtpBytes()
    {
        await Task.Yield();
        Equal("ff00000000000000007f03004e554c4c" + new string('0', 96), Hex(Zmtp.Greeting), "greeting (ENGINE-NOTES)");
        Equal("041c055245414459" + "0b536f636b65742d54797065" + "00000006" + "4445414c4552", Hex(Zmtp.ReadyCommand("DEALER")), "READY (ENGINE-NOTES)");
        // What libzmq sends back: padding byte 01 and version 3.1 are fine.
        var libzmq = FromHex("ff00000000000000017f03014e554c4c" + new string('0', 96));
        Zmtp.CheckGreeting(libzmq);
        // A ROUTER's READY carries an empty Identity too; properties parse generically.
        var router = Zmtp.DecodeFrames(FromHex("0429055245414459" + "0b536f636b65742d54797065" + "00000006" + "524f55544552" + "084964656e74697479" + "00000000"));
        Equal(1, router.Count, "one frame");
        Check(router[0].IsCommand, "READY is a command frame");
        var command = Zmtp.ParseCommand(router[0].Body);
        Equal("READY", command.Name, "command name");
        var properties = Zmtp.ParseProperties(command.Data);
        Equal("ROUTER", Encoding.ASCII.GetString(properties["Socket-Type"]), "Socket-Type");
        Equal(0, properties["Identity"].Length, "empty Identity");
        // Short frames: flags, 1-byte size. The empty delimiter is "01 00".
        Equal("0100" + "0003616263", Hex(Zmtp.EncodeMessage(Encoding.ASCII.GetBytes("abc"))), "delimiter + short frame");
        Equal("0003616263", Hex(Zmtp.EncodeMessage(Encoding.ASCII.GetBytes("abc"), false)), "short frame alone");
        // Long frames: flags | 0x02, 8-byte big-endian size.
        var body = new byte[300];
        var encoded = Zmtp.EncodeMessage(body);
        Equal("0100" + "02000000000000012c", Hex(encoded.Take(11).ToArray()), "long frame header");
        var frames = Zmtp.DecodeFrames(encoded);
        Equal(2, frames.Count, "two frames");
        Check(frames[0].More && frames[0].Body.Length == 0, "delimiter has MORE and no body");
        Check(!frames[1].More && frames[1].Body.Length == 300, "body is last, 300 bytes");
        // The first length bytes of a larger buffer (the client frames its encoder's buffer as is): 255 short, 256 long.
        var buffer = Enumerable.Range(0, 400).Select(i => (byte)i).ToArray();
        Equal("00ff" + Hex(buffer.Take(255).ToArray()), Hex(Zmtp.EncodeMessage(buffer, 255, false)), "255 bytes of a buffer: a short frame");
        Equal("0100" + "020000000000000100" + Hex(buffer.Take(256).ToArray()), Hex(Zmtp.EncodeMessage(buffer, 256, true)), "256 bytes of a buffer: a long frame");
        Equal("04070450494e47" + "0102", Hex(Zmtp.Command("PING", new byte[] { 1, 2 })), "PING command");
    }

    // ---------------------------------------------------------------- golden vectors

    /// <summary>A file of the package (engine_clients/csharp unless --package names it).</summary>
    static string PackageFile(params string[] parts)
    {
        string dir = _packageDir;
        if (dir == null)
        {
            Check(_protocolDoc != null, "the repository (found through docs/protocol.md; or pass --package DIR)");
            dir = Path.Combine(Path.Combine(RepositoryDir(), "engine_clients"), "csharp");
        }
        foreach (string part in parts) dir = Path.Combine(dir, part);
        return dir;
    }

    static string RepositoryDir()
    {
        Check(_protocolDoc != null, "the repository (found through docs/protocol.md)");
        return Path.GetDirectoryName(Path.GetDirectoryName(Path.GetFullPath(_protocolDoc)));
    }

    static string FindProtocolDoc()
    {
        var here = AppDomain.CurrentDomain.BaseDirectory;
        foreach (var start in new[] { Directory.GetCurrentDirectory(), here })
        {
            for (var dir = new DirectoryInfo(start); dir != null; dir = dir.Parent)
            {
                var candidate = Path.Combine(Path.Combine(dir.FullName, "docs"), "protocol.md");
                if (File.Exists(candidate)) return candidate;
            }
        }
        return null;
    }

    /// <summary>The blocks fenced "```hex name=NAME" in docs/protocol.md: name -> bytes.</summary>
    static Dictionary<string, byte[]> ReadGoldenVectors()
    {
        Check(_protocolDoc != null && File.Exists(_protocolDoc), "docs/protocol.md not found (pass --protocol-doc PATH)");
        var vectors = new Dictionary<string, byte[]>();
        var blocks = Regex.Matches(File.ReadAllText(_protocolDoc), @"^```hex\s+name=(\S+)[ \t]*\r?\n(.*?)^```", RegexOptions.Multiline | RegexOptions.Singleline);
        foreach (Match block in blocks) vectors[block.Groups[1].Value] = FromHex(block.Groups[2].Value);
        return vectors;
    }

    static byte[] Vector(Dictionary<string, byte[]> vectors, string name)
    {
        byte[] bytes;
        Check(vectors.TryGetValue(name, out bytes), "docs/protocol.md has no golden vector \"" + name + "\"");
        return bytes;
    }

    static void SameBytes(byte[] expected, byte[] actual, string what)
    {
        Equal(Hex(expected), Hex(actual), what);
    }

    static async Task GoldenVectors()
    {
        await Task.Yield();
        var vectors = ReadGoldenVectors();
        var used = new HashSet<string>();
        Func<string, byte[]> vector = name => { used.Add(name); return Vector(vectors, name); };

        // ping: the encoder writes the request, the decoder reads the reply.
        var pingRequest = new MsgPackMap { { "id", 1L }, { "op", "ping" } };
        SameBytes(vector("ping-request"), MsgPack.Encode(pingRequest), "ping-request");
        var pingReply = (IDictionary<string, object>)MsgPack.Decode(vector("ping-reply"));
        Equal(1L, pingReply["id"], "ping-reply id");
        Equal(true, pingReply["ok"], "ping-reply ok");
        Equal(1L, pingReply["protocol"], "ping-reply protocol");
        SameBytes(vector("ping-reply"), MsgPack.Encode(new MsgPackMap { { "id", 1L }, { "ok", true }, { "protocol", 1L } }), "ping-reply re-encoded");

        // The framer: with and without the empty delimiter; the reply's frames split back.
        SameBytes(vector("ping-request-zmtp-delimited"), Zmtp.EncodeMessage(vector("ping-request"), true), "ping-request-zmtp-delimited");
        SameBytes(vector("ping-request-zmtp-bare"), Zmtp.EncodeMessage(vector("ping-request"), false), "ping-request-zmtp-bare");
        var delimited = Zmtp.DecodeFrames(vector("ping-reply-zmtp-delimited"));
        Equal(2, delimited.Count, "ping-reply-zmtp-delimited frames");
        Check(delimited[0].More && delimited[0].Body.Length == 0 && !delimited[0].IsCommand, "first frame: the empty delimiter, MORE set");
        Check(!delimited[1].More, "last frame: MORE clear");
        SameBytes(vector("ping-reply"), delimited[1].Body, "ping-reply-zmtp-delimited body");
        var bare = Zmtp.DecodeFrames(vector("ping-reply-zmtp-bare"));
        Equal(1, bare.Count, "ping-reply-zmtp-bare frames");
        SameBytes(vector("ping-reply"), bare[0].Body, "ping-reply-zmtp-bare body");

        // malformed: our decoder refuses the request too, and reads the error reply.
        Check(Throws<FormatException>(() => MsgPack.Decode(vector("malformed-request"))), "malformed-request is not msgpack for this decoder either");
        var malformed = (IDictionary<string, object>)MsgPack.Decode(vector("malformed-reply"));
        Check(malformed.ContainsKey("id") && malformed["id"] == null, "malformed-reply id is nil");
        var malformedError = PathServerException.FromReply(malformed, null);
        Equal("malformed", malformedError.Code, "malformed-reply code");
        Equal(null, malformedError.At, "malformed-reply at");
        Equal(false, malformedError.Retryable, "malformed-reply retryable");
        SameBytes(vector("malformed-reply"), MsgPack.Encode(new MsgPackMap
        {
            { "id", null }, { "ok", false },
            { "error", new MsgPackMap { { "code", "malformed" }, { "message", "request is not valid msgpack" }, { "at", null } } },
            { "retryable", false },
        }), "malformed-reply re-encoded");

        // invalid_request: at names the field; the message is a str8.
        SameBytes(vector("invalid-request"), MsgPack.Encode(new MsgPackMap { { "id", 2L }, { "op", "ping" }, { "x", 1L } }), "invalid-request");
        var invalid = (IDictionary<string, object>)MsgPack.Decode(vector("invalid-reply"));
        var invalidError = PathServerException.FromReply(invalid, 2);
        Equal("invalid_request", invalidError.Code, "invalid-reply code");
        Equal("x", invalidError.At, "invalid-reply at");
        var message = (string)((IDictionary<string, object>)invalid["error"])["message"];
        SameBytes(vector("invalid-reply"), MsgPack.Encode(new MsgPackMap
        {
            { "id", 2L }, { "ok", false },
            { "error", new MsgPackMap { { "code", "invalid_request" }, { "message", message }, { "at", "x" } } },
            { "retryable", false },
        }), "invalid-reply re-encoded");

        // path-request: the generic encoder byte for byte, and the client's own request
        // builder: same keys in the same order, same values (it sends whole floats as ints).
        SameBytes(vector("path-request"), MsgPack.Encode(new MsgPackMap
        {
            { "id", 5L }, { "op", "path" }, { "map", "example" }, { "start", new object[] { 1.5, 2.0 } },
            { "goal", new object[] { 30L, 12L } }, { "unit_size", 2L }, { "space", "world" },
        }), "path-request");
        using (var client = new PathServerClient("tcp://127.0.0.1:1", "example"))
        {
            var built = client.PathRequestBody(new PathPoint(1.5f, 2f), new PathPoint(30, 12), 2, new PathOptions());
            built.Insert(0, new KeyValuePair<string, object>("id", 5L));
            var ours = (IDictionary<string, object>)MsgPack.Decode(MsgPack.Encode(built));
            var theirs = (IDictionary<string, object>)MsgPack.Decode(vector("path-request"));
            Equal(string.Join(",", theirs.Keys), string.Join(",", ours.Keys), "path request keys, in order");
            foreach (var key in theirs.Keys)
                Equal(Numeric(theirs[key]), Numeric(ours[key]), "path request field " + key);
        }

        // The map ops: the client's put_map builder byte for byte (cells as bin), the generic
        // encoder for the others, and every reply read as the client reads it.
        var putBody = PathServerClient.PutMapBody("yard", 3, 2, new byte[] { 1, 1, 0, 1, 2, 1 });
        putBody.Insert(0, new KeyValuePair<string, object>("id", 1L));
        SameBytes(vector("put-map-request"), MsgPack.Encode(putBody), "put-map-request (PutMapBody)");
        Equal(1L, PathServerClient.GenOf((IDictionary<string, object>)MsgPack.Decode(vector("put-map-reply")), 1), "put-map-reply gen");
        SameBytes(vector("get-map-request"), MsgPack.Encode(new MsgPackMap { { "id", 2L }, { "op", "get_map" }, { "map", "yard" } }), "get-map-request");
        var yard = PathServerClient.ParseMapData((IDictionary<string, object>)MsgPack.Decode(vector("get-map-reply")), 2);
        Equal("yard 3x2 gen 1 region 3x2 cells 010100010201 costs null", yard.Name + " " + yard.Width + "x" + yard.Height + " gen " + yard.Gen
            + " region " + yard.Region.Width + "x" + yard.Region.Height + " cells " + Hex(yard.Cells) + " costs " + (yard.Costs == null ? "null" : "set"),
            "get-map-reply as MapData");
        SameBytes(vector("conflict-request"), MsgPack.Encode(new MsgPackMap
        {
            { "id", 3L }, { "op", "update" }, { "map", "yard" }, { "cells", new object[] { new object[] { 0L, 0L } } },
            { "solid", true }, { "if_gen", 0L },
        }), "conflict-request");
        var conflict = PathServerException.FromReply((IDictionary<string, object>)MsgPack.Decode(vector("conflict-reply")), 3);
        Equal("conflict if_gen 1", conflict.Code + " " + conflict.At + " " + conflict.Gen, "conflict-reply: code, at, gen");
        SameBytes(vector("drop-map-request"), MsgPack.Encode(new MsgPackMap { { "id", 4L }, { "op", "drop_map" }, { "map", "yard" } }), "drop-map-request");
        Equal(1L, PathServerClient.GenOf((IDictionary<string, object>)MsgPack.Decode(vector("drop-map-reply")), 4), "drop-map-reply gen");

        GoldenQueryVectors(vector);
        GoldenPackedVectors(vector);

        var unused = vectors.Keys.Where(name => !used.Contains(name)).ToList();
        Check(unused.Count == 0, "golden vectors this test does not check yet: " + string.Join(", ", unused));
        Console.WriteLine("     | " + used.Count + " golden vectors from " + _protocolDoc);
    }

    /// <summary>
    /// The queries beyond one path, one session on the 4 x 3 map "court" (a wall at (1, 1)), then
    /// the 3 x 2 map "moat" (tags, tag names, a unit class): the client's own request builders
    /// byte for byte (FindPathToAnyAsync's, ReachableAsync's, ..., PutMapAsync's with classes),
    /// and every reply read by the client's own parser, with the values the doc states.
    /// </summary>
    static void GoldenQueryVectors(Func<string, byte[]> vector)
    {
        Func<MsgPackMap, long, byte[]> encoded = (body, id) =>
        {
            body.Insert(0, new KeyValuePair<string, object>("id", id));
            return MsgPack.Encode(body);
        };
        Func<string, IDictionary<string, object>> reply = name => (IDictionary<string, object>)MsgPack.Decode(vector(name));
        SameBytes(vector("court-put-request"), encoded(PathServerClient.PutMapBody("court", 4, 3, new byte[] { 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1 }), 1),
            "court-put-request (PutMapBody)");
        Equal(1L, PathServerClient.GenOf(reply("court-put-reply"), 1), "court-put-reply gen");
        using (var client = new PathServerClient("tcp://127.0.0.1:1", "court"))
        {
            var grid = new PathOptions { Space = CoordinateSpace.Grid };
            var goals = new[] { new PathPoint(3, 2), new PathPoint(0, 2) };
            SameBytes(vector("goals-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), default(PathPoint), goals, 1,
                new PathOptions { Space = CoordinateSpace.Grid, Smooth = "none" }), 2), "goals-request (FindPathToAnyAsync's body)");
            var path = PathServerClient.ParsePathReply(reply("goals-reply"), 2);
            Equal("Found (0, 0) (0, 1) (0, 2) cost 2 goal_index 1 gen 1",
                path.Status + " " + string.Join(" ", path.Path) + " cost " + path.Cost + " goal_index " + path.GoalIndex + " gen " + path.Gen, "goals-reply");

            SameBytes(vector("reachable-request"), encoded(client.ReachableBody(new PathPoint(0, 0), 2, 1, grid), 3), "reachable-request (ReachableAsync's body)");
            var reachable = PathServerClient.ParseReachable(reply("reachable-reply"), 3);
            Equal("5 cells 0,0,1,0,0,1,2,0,0,2 costs 0,1,1,2,2 gen 1", reachable.Count + " cells " + string.Join(",", reachable.Cells)
                + " costs " + string.Join(",", reachable.Costs) + " gen " + reachable.Gen, "reachable-reply");

            SameBytes(vector("field-request"), encoded(client.FieldBody(new[] { new PathPoint(3, 2) }, 1,
                new PathOptions { Space = CoordinateSpace.Grid, Region = new GridRect(0, 0, 2, 2) }), 4), "field-request (DistanceFieldAsync's body)");
            var field = PathServerClient.ParseField(reply("field-reply"), 4);
            Equal("2x2 at (0, 0)", field.Width + "x" + field.Height + " at (" + field.Region.X + ", " + field.Region.Y + ")", "field-reply region");
            float root2 = (float)Math.Sqrt(2);
            Check(field.Costs.SequenceEqual(new[] { 3 + root2, 2 + root2, 4f, float.PositiveInfinity }), "field-reply costs: " + string.Join(", ", field.Costs));
            Equal(float.PositiveInfinity, field[1, 1], "field-reply: the wall is +inf (the indexer in region coordinates)");

            var positions = PathServerClient.Float32Bytes(new[] { 0.5f, 0.5f, 3.5f, 0.5f });
            SameBytes(vector("next-steps-request"), encoded(client.NextStepsBody(new[] { new PathPoint(3, 2) }, 1, positions, grid), 5),
                "next-steps-request (NextStepsAsync's body)");
            var steps = new float[] { -1, -1, -1, -1, 99 };
            var remaining = new float[] { -1, -1, 99 };
            var next = PathServerClient.ParseNextSteps(reply("next-steps-reply"), 5, 2, steps, remaining);
            Check(ReferenceEquals(steps, next.Steps) && ReferenceEquals(remaining, next.Remaining), "next-steps-reply is written into the caller's arrays");
            Check(steps.SequenceEqual(new[] { 1f, 0f, 3f, 1f, 99f }) && remaining.SequenceEqual(new[] { 3 + root2, 2f, 99f }),
                "next-steps-reply: steps " + string.Join(",", steps) + ", remaining " + string.Join(",", remaining) + " (only the first 2 units' items written)");

            SameBytes(vector("check-block-request"), encoded(client.CheckBlockBody(new[] { new PathPoint(0, 0), new PathPoint(3, 0), new PathPoint(0, 2) },
                new[] { new GridRect(2, 0, 1, 3) }, null, 1, grid), 6), "check-block-request (CheckBlockAsync's body)");
            var block = PathServerClient.ParseCheckBlock(reply("check-block-reply"), 6);
            Equal("[0, 1] [1, 2]", string.Join(" ", block.Disconnected), "check-block-reply");

            // The same session goes on with a request's own blockers and with unit classes.
            var avoid = new PathOptions { Space = CoordinateSpace.Grid, Smooth = "none", Avoid = new AvoidSet().AddCell(0, 1) };
            SameBytes(vector("avoid-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), new PathPoint(0, 2), 1, avoid), 7),
                "avoid-request (FindPathAsync's body, Avoid)");
            SameBytes(vector("avoid-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), new PathPoint(0, 2), 1,
                new PathOptions { Space = CoordinateSpace.Grid, Smooth = "none", Avoid = new AvoidSet().AddCells(new[] { 0, 1 }) }), 7),
                "avoid-request (Avoid from AddCells)");
            path = PathServerClient.ParsePathReply(reply("avoid-reply"), 7);
            Equal("Found (0, 0) (1, 0) (2, 0) (2, 1) (2, 2) (1, 2) (0, 2) cost 6 gen 1",
                path.Status + " " + string.Join(" ", path.Path) + " cost " + path.Cost + " gen " + path.Gen, "avoid-reply: round the wall");

            avoid.AvoidCost = 3;
            SameBytes(vector("avoid-cost-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), new PathPoint(0, 2), 1, avoid), 8),
                "avoid-cost-request (FindPathAsync's body, Avoid and AvoidCost)");
            path = PathServerClient.ParsePathReply(reply("avoid-cost-reply"), 8);
            Equal("Found (0, 0) (0, 1) (0, 2) cost 4 gen 1",
                path.Status + " " + string.Join(" ", path.Path) + " cost " + path.Cost + " gen " + path.Gen, "avoid-cost-reply: through the dear cell");
        }

        // The moat: tags, tag names and a unit class that cannot swim, uploaded as PutMapAsync does.
        SameBytes(vector("moat-put-request"), encoded(PathServerClient.PutMapBody("moat", 3, 2, new byte[] { 1, 1, 1, 1, 1, 1 },
            tags: new byte[] { 0, 1, 0, 0, 1, 0 }, tagNames: new Dictionary<string, int> { { "water", 1 } },
            classes: new Dictionary<string, TraversalRules> { { "walker", new TraversalRules { { "water", null } } } }), 9),
            "moat-put-request (PutMapBody with tags, tag names and classes)");
        Equal(2L, PathServerClient.GenOf(reply("moat-put-reply"), 9), "moat-put-reply gen");
        using (var client = new PathServerClient("tcp://127.0.0.1:1", "moat"))
        {
            SameBytes(vector("traversal-class-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), new PathPoint(2, 0), 1,
                new PathOptions { Space = CoordinateSpace.Grid, Traversal = "walker" }), 10), "traversal-class-request (FindPathAsync's body, a unit class)");
            var path = PathServerClient.ParsePathReply(reply("traversal-class-reply"), 10);
            Equal("NoPath 0 waypoints cost 0 gen 2", path.Status + " " + path.Path.Length + " waypoints cost " + path.Cost + " gen " + path.Gen,
                "traversal-class-reply: a walker cannot cross");

            SameBytes(vector("traversal-rules-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), new PathPoint(2, 0), 1,
                new PathOptions { Space = CoordinateSpace.Grid, Smooth = "none", Traversal = new TraversalRules { { "water", 2.5 } } }), 11),
                "traversal-rules-request (FindPathAsync's body, rules of its own)");
            path = PathServerClient.ParsePathReply(reply("traversal-rules-reply"), 11);
            Equal("Found (0, 0) (1, 0) (2, 0) cost 3.5 gen 2",
                path.Status + " " + string.Join(" ", path.Path) + " cost " + path.Cost.ToString(CultureInfo.InvariantCulture) + " gen " + path.Gen,
                "traversal-rules-reply: wading at 2.5 times the cost");
        }
    }

    /// <summary>
    /// Packed answers on the court (still generation 1): the client's own request builders byte for
    /// byte (FindPath's packed body, FindPathsPackedAsync's), and the packed replies read by its
    /// parsers straight into PathPoint arrays, grid (int32 pairs) and world (float32 pairs).
    /// </summary>
    static void GoldenPackedVectors(Func<string, byte[]> vector)
    {
        Func<MsgPackMap, long, byte[]> encoded = (body, id) =>
        {
            body.Insert(0, new KeyValuePair<string, object>("id", id));
            return MsgPack.Encode(body);
        };
        Func<string, IDictionary<string, object>> reply = name => (IDictionary<string, object>)MsgPack.Decode(vector(name));
        const string trip = "(0, 0) (1, 0) (2, 0) (3, 1) (3, 2)";
        using (var client = new PathServerClient("tcp://127.0.0.1:1", "court"))
        {
            SameBytes(vector("packed-path-request"), encoded(client.PathRequestBody(new PathPoint(0, 0), new PathPoint(3, 2), null, 1,
                new PathOptions { Space = CoordinateSpace.Grid, Smooth = "none" }, true), 12), "packed-path-request (FindPath's body)");
            var path = PathServerClient.ParsePathReply(reply("packed-path-reply"), 12, CoordinateSpace.Grid);
            Equal("Found " + trip + " cost 4.414 gen 1", path.Status + " " + string.Join(" ", path.Path) + " cost "
                + path.Cost.ToString("0.###", CultureInfo.InvariantCulture) + " gen " + path.Gen, "packed-path-reply");
            Check(Throws(() => PathServerClient.ParsePathReply(reply("packed-path-reply"), 12)) == PathServerErrorCodes.BadReply,
                "a packed path read without its request's space is refused");

            SameBytes(vector("packed-world-path-request"), encoded(client.PathRequestBody(new PathPoint(0.5f, 0.5f), new PathPoint(3.5f, 2.5f), null, 1,
                new PathOptions { Space = CoordinateSpace.World, Smooth = "none" }, true), 13), "packed-world-path-request (FindPath's body, world)");
            var world = PathServerClient.ParsePathReply(reply("packed-world-path-reply"), 13, CoordinateSpace.World);
            Equal(trip, string.Join(" ", world.Path.Select(p => new PathPoint(p.X - 0.5f, p.Y - 0.5f))), "packed-world-path-reply: the cell centres");

            var starts = new[] { new PathPoint(0, 0), new PathPoint(0, 0), new PathPoint(3, 0) };
            var goals = new[] { new PathPoint(0, 2), new PathPoint(9, 9), new PathPoint(3, 2) };
            SameBytes(vector("packed-paths-request"), encoded(client.PackedPathsBody(starts, goals, 1,
                new PathOptions { Space = CoordinateSpace.Grid, Smooth = "none" }), 14), "packed-paths-request (FindPathsPackedAsync's body)");
            var batch = PathServerClient.ParsePackedPaths(reply("packed-paths-reply"), 14, CoordinateSpace.Grid, 3);
            Equal("Found Failed Found; costs 2 0 2; counts 3 0 3; offsets 0 3 3 6; gen 1",
                string.Join(" ", batch.Status) + "; costs " + string.Join(" ", batch.Costs) + "; counts " + string.Join(" ", batch.Counts)
                + "; offsets " + string.Join(" ", batch.Offsets) + "; gen " + batch.Gen, "packed-paths-reply: the columns");
            Equal("(0, 0) (0, 1) (0, 2) | (3, 0) (3, 1) (3, 2)", string.Join(" ", batch.PathOf(0)) + " | " + string.Join(" ", batch.PathOf(2)),
                "packed-paths-reply: each entry's points");
            Equal("out_of_bounds goals[1]", batch.Errors[1].Code + " " + batch.Errors[1].At, "packed-paths-reply: the failed entry's error");
            // PackedStatus is the table of docs/protocol.md, byte for byte.
            var table = Regex.Match(File.ReadAllText(_protocolDoc), "<!-- packed statuses:.*?<!-- end of packed statuses -->", RegexOptions.Singleline).Value;
            var rows = Regex.Matches(table, @"\| `(\d+)` \| `(\w+)` \|").Cast<Match>().Select(m => m.Groups[2].Value + "=" + m.Groups[1].Value);
            Equal("found=" + PackedStatus.Found + " partial=" + PackedStatus.Partial + " no_path=" + PackedStatus.NoPath + " error=" + PackedStatus.Error,
                string.Join(" ", rows), "PackedStatus: the docs' table of packed statuses");
            var results = PathServerClient.PackedResults(batch);
            Equal("Found Failed Found; 3 0 3; " + (results[1].Error == null ? "no error" : results[1].Error.Code),
                string.Join(" ", results.Select(r => r.Status)) + "; " + string.Join(" ", results.Select(r => r.Path.Length)) + "; "
                + (results[1].Error == null ? "no error" : results[1].Error.Code), "packed-paths-reply as FindPathsAsync's results");
        }
    }

    static string Throws(Action action)
    {
        try
        {
            action();
        }
        catch (PathServerException e)
        {
            return e.Code;
        }
        return null;
    }

    /// <summary>A decoded value as text with every number as a double: 2 and 2.0 compare equal.</summary>
    static string Numeric(object value)
    {
        if (MsgPack.IsNumber(value)) return MsgPack.ToDouble(value).ToString("R", CultureInfo.InvariantCulture);
        var items = value as object[];
        if (items != null) return "[" + string.Join(", ", items.Select(Numeric)) + "]";
        return MsgPack.ToDebugString(value);
    }

    /// <summary>
    /// The ZMTP vectors against the live server, byte for byte: a raw DEALER session (our
    /// greeting and READY) sends each request exactly as the doc writes it and compares what
    /// comes back with the doc's reply, skipping the server's heartbeat commands.
    /// </summary>
    static async Task GoldenVectorsOnTheWire()
    {
        await RequireServer();
        var vectors = ReadGoldenVectors();
        var match = Regex.Match(_endpoint, @"^tcp://\[?([^\]]+)\]?:(\d+)$");
        using (var tcp = new TcpClient())
        {
            tcp.Connect(match.Groups[1].Value, int.Parse(match.Groups[2].Value, CultureInfo.InvariantCulture));
            tcp.ReceiveTimeout = 5000;
            var stream = tcp.GetStream();
            stream.Write(Zmtp.Greeting, 0, 64);
            var greeting = new byte[64];
            for (int got = 0; got < 64;)
            {
                int n = stream.Read(greeting, got, 64 - got);
                Check(n > 0, "server closed during the greeting");
                got += n;
            }
            Zmtp.CheckGreeting(greeting);
            var ready = Zmtp.ReadyCommand("DEALER");
            stream.Write(ready, 0, ready.Length);
            var reader = new Zmtp.FrameReader(stream);
            var serverReady = reader.ReadFrame();
            Check(serverReady.IsCommand && Zmtp.ParseCommand(serverReady.Body).Name == "READY", "the server's READY");
            Func<byte[]> readMessage = () =>
            {
                var bytes = new MemoryStream();
                while (true)
                {
                    var frame = reader.ReadFrame();
                    if (frame.IsCommand) continue;  // a heartbeat PING; this session is short
                    bytes.WriteByte((byte)(frame.More ? 1 : 0));
                    bytes.WriteByte((byte)frame.Body.Length);
                    bytes.Write(frame.Body, 0, frame.Body.Length);
                    if (!frame.More) return bytes.ToArray();
                }
            };
            foreach (var pair in new[] { "delimited", "bare" })
            {
                var request = Vector(vectors, "ping-request-zmtp-" + pair);
                stream.Write(request, 0, request.Length);
                SameBytes(Vector(vectors, "ping-reply-zmtp-" + pair), readMessage(), "ping reply on the wire, " + pair);
            }
            // The malformed and invalid requests, sent with the delimiter: the doc's replies exactly.
            foreach (var name in new[] { "malformed", "invalid" })
            {
                var request = Zmtp.EncodeMessage(Vector(vectors, name + "-request"), true);
                stream.Write(request, 0, request.Length);
                var reply = Zmtp.DecodeFrames(readMessage());
                SameBytes(Vector(vectors, name + "-reply"), reply[reply.Count - 1].Body, name + " reply on the wire");
            }
        }
    }
}
