// Tests.cs: the C# client's test program, run against a real `pathserver serve`.
//
//     mcs -target:library -out:PathServer.Client.dll Runtime/*.cs      (the package's assembly)
//     mcs -out:PathServer.Client.Tests.exe -r:PathServer.Client.dll 'Tests~/Tests.cs'
//     mono PathServer.Client.Tests.exe tcp://127.0.0.1:5555 [--protocol-doc docs/protocol.md]
//         [--map NAME] [--conformance engine_clients/conformance.json]
//         [--silent-endpoint tcp://HOST:PORT] [--options OPTIONS.json] [--package DIR]
//         [--python PYTHON] [--bundle DIR]
//
// (run_tests.sh does all of it.) The assembly name matters: Runtime/AssemblyInfo.cs lets
// PathServer.Client.Tests read the internal Zmtp and MsgPack.
//
// Offline checks first (msgpack and ZMTP bytes, the golden vectors of docs/protocol.md), then
// the server: pipelined requests matched by id, a batch, error codes, events, a live edit, and
// connection trouble staged through an in-process TCP proxy in front of the real server (a
// timeout, a reconnect that re-sends what was in flight, connecting before the server is up, a
// restart, a silent server caught by heartbeats), the queries beyond one path (goals, reachable,
// field, next_steps into the caller's buffers, check_block, avoid and traversal, their errors).
// Then the shared conformance scenarios (their timeout scenario goes to --silent-endpoint, a
// peer that never answers) and the client's options, op by op, against the server's list
// (--options: the output of `pathserver options --json`).
// Last, the Unity package (--package, default engine_clients/csharp: package.json, the asmdef,
// a .meta for every file Unity imports) and EmbeddedServer: Python (--python, with pathserver)
// as the fallback, a stand-in bundle script preferred to it, its failures, and a real bundle
// from `pathserver bundle` when --bundle names its folder.
// The last line is exactly "N passed, N failed"; the exit code is non-zero when anything failed.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using PathServer;

static class Tests
{
    static int _passed;
    static int _failed;
    static string _endpoint;
    static string _protocolDoc;
    static string _conformance;
    static string _silentEndpoint;
    static string _optionsFile;
    static string _packageDir;
    static string _python = EmbeddedServer.DefaultPython;
    static string _bundle;
    static string _mapName;
    static MapInfo _map;
    static bool _serverUp;
    static string _only;
    static bool _verbose;
    static readonly System.Collections.Concurrent.ConcurrentQueue<string> _log = new System.Collections.Concurrent.ConcurrentQueue<string>();
    static readonly Stopwatch _clock = Stopwatch.StartNew();

    static int Main(string[] args)
    {
        if (args.Length < 1 || args[0].StartsWith("-"))
        {
            Console.Error.WriteLine("usage: mono PathServer.Client.Tests.exe tcp://HOST:PORT [--protocol-doc PATH] [--map NAME] [--conformance PATH]"
                + " [--silent-endpoint tcp://HOST:PORT] [--options PATH] [--package DIR] [--python PYTHON] [--bundle DIR] [--only TEXT] [--verbose]");
            return 2;
        }
        _endpoint = args[0];
        for (int i = 1; i < args.Length; i++)
        {
            if (args[i] == "--protocol-doc" && i + 1 < args.Length) _protocolDoc = args[++i];
            else if (args[i] == "--map" && i + 1 < args.Length) _mapName = args[++i];
            else if (args[i] == "--conformance" && i + 1 < args.Length) _conformance = args[++i];
            else if (args[i] == "--silent-endpoint" && i + 1 < args.Length) _silentEndpoint = args[++i];
            else if (args[i] == "--options" && i + 1 < args.Length) _optionsFile = args[++i];
            else if (args[i] == "--package" && i + 1 < args.Length) _packageDir = args[++i];
            else if (args[i] == "--python" && i + 1 < args.Length) _python = args[++i];
            else if (args[i] == "--bundle" && i + 1 < args.Length) _bundle = args[++i];
            else if (args[i] == "--only" && i + 1 < args.Length) _only = args[++i];
            else if (args[i] == "--verbose") _verbose = true;
            else
            {
                Console.Error.WriteLine("unknown argument: " + args[i]);
                return 2;
            }
        }
        _protocolDoc = _protocolDoc ?? FindProtocolDoc();

        Run("msgpack: encodes every type like msgpack-python", MsgPackEncodes);
        Run("msgpack: decodes every type, ints and floats", MsgPackDecodes);
        Run("msgpack: refuses truncated and trailing bytes", MsgPackRefusesBrokenInput);
        Run("zmtp: greeting, READY and frames", ZmtpBytes);
        Run("golden vectors of docs/protocol.md", GoldenVectors);
        Run("client: AvoidSet's cells go as a bin of little-endian int32 pairs; AddCells is AddCell pair by pair", AvoidCellsEncoding);

        Run("server: connects and answers ping", ConnectsAndPings);
        Run("server: maps lists the map under test", ListsMaps);
        Run("server: golden vectors byte for byte on the wire", GoldenVectorsOnTheWire);
        Run("server: the first path after connecting takes under 20 ms", FirstPathLatency);
        Run("readme: the example prints what README.md shows", ReadmeExample);
        Run("server: a path in grid space", GridPath);
        Run("server: world space is the grid path scaled and shifted", WorldPath);
        Run("server: 200 pipelined requests matched by id", PipelinedRequests);
        Run("server: a batch answers in order, one bad entry fails alone", Batch);
        Run("server: packed answers are the plain ones (FindPath, FindPathsPacked, PackedAnswers; grid and world)", PackedAnswers);
        Run("client: the synchronous FindPath returns Failed with the reason, never throws", SynchronousFailures);
        Run("server: error codes with their field", ErrorCodes);
        Run("server: events wait for DrainMainThreadQueue", Events);
        Run("server: no path is a result (NoPath, empty Path), awaited, by event and in a batch", NoPathIsAResult);
        Run("client: the event queue keeps the newest EventQueueCapacity events", EventQueueIsBounded);
        Run("server: update makes a new generation the next path sees", LiveEdit);
        Run("msgpack: byte[] is bin, float[] goes out as little-endian float32", UploadEncoding);
        Run("server: PutMapAsync, GetMapAsync (every layer, a region, an update with ifGen), DropMapAsync", UploadRoundTrip);
        Run("server: upload errors: wrong sizes, a map file's name, a stale ifGen", UploadErrors);
        Run("server: the queries on an uploaded court answer as docs/protocol.md's session (goals, reachable, field, next_steps, check_block; grid and world)", QueriesOnCourt);
        Run("server: next_steps writes into the caller's buffers, call after call (Span, a slice, offset and count)", NextStepsReusesBuffers);
        Run("server: the queries' errors, with code and at; misuse refused before sending", QueryErrors);
        Run("server: tag names and unit classes of an upload, traversal and avoid on every query", TraversalAndAvoid);
        Run("client: cancelling through a CancellationToken", Cancellation);
        Run("client: a request fails with \"timeout\" when no reply comes", RequestTimeout);
        Run("client: \"disconnected\" when nothing listens", NothingListening);
        Run("client: re-sends in-flight requests after a reconnect", ResendsAfterReconnect);
        Run("client: connects before the server is up", ConnectsBeforeServerIsUp);
        Run("client: survives a server restart", SurvivesRestart);
        Run("client: heartbeats catch a silent server", HeartbeatCatchesSilentServer);
        Run("client: 2000 requests from 8 threads while the connection is cut 5 times", RequestsSurviveCuts);
        Run("client: heartbeats keep an idle connection", HeartbeatKeepsIdleConnection);
        RunConformance();
        Run("options: PathOptions names and defaults, and the requests each option goes with, are the server's (pathserver options --json)", OptionsMatchTheServer);
        Run("options: each PathOptions property writes its own field, of the server's kind, for each request that takes it", OptionsWriteTheirOwnFields);
        Run("options: each option goes out with each request the client sends it for, and is refused before sending for the others", OptionsPerRequestOnTheWire);

        Run("package: package.json, the asmdef, a .meta with a unique GUID for each file and folder Unity imports", PackageLayout);
        Run("embedded: platform folders, the bundle's executable, quoted arguments", EmbeddedNames);
        Run("embedded: failures are errors with the server's output, never a hang", EmbeddedFailures, 60);
        Run("embedded: no bundle, so python -m pathserver serve; a path; Dispose stops it", EmbeddedFallsBackToPython, 240);
        Run("embedded: the bundle in BundleRoot/<platform>/ is preferred (a stand-in script)", EmbeddedPrefersTheBundle, 240);
        if (_bundle != null)
            Run("embedded: the real bundle (--bundle) starts, answers and stops", EmbeddedRealBundle, 240);
        else if (_only == null)
            Console.WriteLine("skip embedded: the real bundle (no --bundle: PATHSERVER_BUNDLE was not set)");

        Console.WriteLine(_passed + " passed, " + _failed + " failed");
        return _failed == 0 ? 0 : 1;
    }

    // ---------------------------------------------------------------- harness

    static void Run(string name, Func<Task> test, int seconds = 40)
    {
        bool needed = _only == null || name.Contains(_only) || name == "server: connects and answers ping" || name.StartsWith("server: maps");
        if (!needed) return;
        string line;
        while (_log.TryDequeue(out line)) { }
        var clock = Stopwatch.StartNew();
        try
        {
            var task = Task.Run(test);
            if (!task.Wait(TimeSpan.FromSeconds(seconds))) throw new TimeoutException("did not finish within " + seconds + " s");
            _passed++;
            Console.WriteLine("ok   " + name + " (" + clock.ElapsedMilliseconds + " ms)");
            if (_verbose) { while (_log.TryDequeue(out line)) Console.WriteLine("     | " + line); }
        }
        catch (Exception e)
        {
            while (e is AggregateException && e.InnerException != null) e = e.InnerException;
            _failed++;
            Console.WriteLine("FAIL " + name + ": " + e.GetType().Name + ": " + e.Message);
            // The clients' diagnostics, shown only for a failed test.
            while (_log.TryDequeue(out line)) Console.WriteLine("     | " + line);
        }
    }

    sealed class TestFailure : Exception
    {
        public TestFailure(string message) : base(message) { }
    }

    static void Check(bool condition, string message)
    {
        if (!condition) throw new TestFailure(message);
    }

    static void Equal<T>(T expected, T actual, string what)
    {
        if (!EqualityComparer<T>.Default.Equals(expected, actual))
            throw new TestFailure(what + ": expected " + Show(expected) + ", got " + Show(actual));
    }

    static string Show(object value)
    {
        if (value is byte[]) return Hex((byte[])value);
        return value == null ? "null" : Convert.ToString(value, CultureInfo.InvariantCulture);
    }

    static async Task<PathServerException> Throws(Func<Task> action, string code)
    {
        try
        {
            await action();
        }
        catch (PathServerException e)
        {
            Equal(code, e.Code, "error code (" + e.Message + ")");
            return e;
        }
        throw new TestFailure("expected a PathServerException with code " + code + ", got no exception");
    }

    static string Hex(byte[] bytes)
    {
        var text = new StringBuilder(bytes.Length * 2);
        foreach (var b in bytes) text.Append(b.ToString("x2"));
        return text.ToString();
    }

    static byte[] FromHex(string hex)
    {
        hex = Regex.Replace(hex, "[^0-9a-fA-F]", "");
        var bytes = new byte[hex.Length / 2];
        for (int i = 0; i < bytes.Length; i++) bytes[i] = byte.Parse(hex.Substring(2 * i, 2), NumberStyles.HexNumber);
        return bytes;
    }

    static PathServerClient NewClient(string endpoint = null)
    {
        return new PathServerClient(endpoint ?? _endpoint, _mapName)
        {
            DispatchEventsOnMainThread = false,
            Log = message => _log.Enqueue(string.Format(CultureInfo.InvariantCulture, "{0,7:0.000} s  {1}", _clock.Elapsed.TotalSeconds, message)),
        };
    }

    static async Task RequireServer()
    {
        if (!_serverUp) throw new TestFailure("no server at " + _endpoint + " (see the first server test)");
        await Task.Yield();
    }

    static async Task Eventually(Func<bool> condition, string what, int timeoutMs = 10000)
    {
        var clock = Stopwatch.StartNew();
        while (!condition())
        {
            if (clock.ElapsedMilliseconds > timeoutMs) throw new TestFailure("timed out waiting for " + what);
            await Task.Delay(10);
        }
    }

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
            bool threw = false;
            try
            {
                MsgPack.Decode(FromHex(hex));
            }
            catch (FormatException)
            {
                threw = true;
            }
            Check(threw, "decoding \"" + hex + "\" should throw FormatException");
        }
        bool trailing = false;
        try
        {
            MsgPack.Decode(FromHex("c0c0"));
        }
        catch (FormatException)
        {
            trailing = true;
        }
        Check(trailing, "trailing bytes should throw");
        var deep = "";
        for (int i = 0; i < 100; i++) deep += "91";
        bool tooDeep = false;
        try
        {
            MsgPack.Decode(FromHex(deep + "c0"));
        }
        catch (FormatException)
        {
            tooDeep = true;
        }
        Check(tooDeep, "nesting deeper than MaxDepth should throw");
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
        bool refused = false;
        try
        {
            MsgPack.Decode(vector("malformed-request"));
        }
        catch (FormatException)
        {
            refused = true;
        }
        Check(refused, "malformed-request is not msgpack for this decoder either");
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

    // ---------------------------------------------------------------- server

    static async Task ConnectsAndPings()
    {
        using (var client = NewClient())
        {
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(10)), "no connection to " + _endpoint + " within 10 s");
            var latency = await client.PingAsync();
            Check(latency < TimeSpan.FromSeconds(5), "ping took " + latency);
            _serverUp = true;
        }
    }

    static async Task ListsMaps()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var maps = await client.MapsAsync();
            Check(maps.Length > 0, "the server serves no maps");
            if (_mapName == null) _mapName = maps.Any(m => m.Name == "example") ? "example" : maps[0].Name;
            _map = maps.FirstOrDefault(m => m.Name == _mapName);
            Check(_map != null, "map " + _mapName + " is not served; served: " + string.Join(", ", maps.Select(m => m.Name)));
            Check(_map.Width > 0 && _map.Height > 0 && _map.CellSize > 0, "map size and cell size: " + _map);
            Console.WriteLine("     | testing on " + _map + ", origin " + _map.Origin);
        }
    }

    static PathOptions Grid(Action<PathOptions> configure = null)
    {
        var options = new PathOptions { Space = CoordinateSpace.Grid, Snap = true, AllowPartial = true };
        if (configure != null) configure(options);
        return options;
    }

    static PathPoint Corner(int index)
    {
        int x = index % 2 == 0 ? 0 : _map.Width - 1;
        int y = index / 2 == 0 ? 0 : _map.Height - 1;
        return new PathPoint(x, y);
    }

    static void SamePath(PathResult expected, PathResult actual, string what)
    {
        Equal(expected.StatusText, actual.StatusText, what + " status");
        Equal(expected.Start, actual.Start, what + " start");
        Equal(expected.Goal, actual.Goal, what + " goal");
        Equal(string.Join(" ", expected.Path), string.Join(" ", actual.Path), what + " path");
    }

    // The first request on a new connection used to wait ~40 ms for Nagle's algorithm (the
    // server delays its ACK); the client sets NoDelay. Three fresh connections, after a warm-up
    // one so that JIT compilation is not measured; the median must be well under 40 ms.
    static async Task FirstPathLatency()
    {
        await RequireServer();
        var figures = new List<double>();
        for (int i = 0; i < 4; i++)
        {
            using (var client = NewClient())
            {
                Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "a fresh client connects");
                var clock = Stopwatch.StartNew();
                await client.FindPathAsync(Corner(0), Corner(3), 1, Grid());
                double ms = clock.Elapsed.TotalMilliseconds;
                if (i == 0) continue;
                figures.Add(ms);
                Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "     first path after connect: {0:0.0} ms", ms));
            }
        }
        figures.Sort();
        Check(figures[1] < 20, string.Format(CultureInfo.InvariantCulture, "median first path {0:0.0} ms, not under 20 ms", figures[1]));
    }

    // The README's example with its output: the same calls as its ```csharp block, and what they
    // print must be its ```text block, line for line. On the sample map "example", before any
    // test edits it.
    static async Task ReadmeExample()
    {
        await RequireServer();
        var readme = PackageFile("README.md");
        var shown = Regex.Match(File.ReadAllText(readme), "```text\n(.*?)```", RegexOptions.Singleline);
        Check(shown.Success, "a ```text block in " + readme);
        var printed = new List<string>();
        using (var client = new PathServerClient(_endpoint, "example"))
        {
            PathResult result = await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(60.5f, 60.5f), 1);
            printed.Add(result.Status + ", " + result.Path.Length + " waypoints, cost " + result.Cost.ToString("0.00", CultureInfo.InvariantCulture));
            printed.Add(string.Join(" ", result.Path));
            result = await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(60.5f, 60.5f), 2);
            printed.Add(result.Status + ", " + result.Path.Length + " waypoints");
            try { await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(99, 99), 1); }
            catch (PathServerException e) { printed.Add(e.Code + " / " + e.At + " / " + e.Message); }
        }
        Equal(shown.Groups[1].Value.TrimEnd('\n'), string.Join("\n", printed), "README's output");

        // The uploads example, the second output block.
        shown = shown.NextMatch();
        Check(shown.Success, "a second ```text block (uploads) in " + readme);
        printed.Clear();
        using (var client = new PathServerClient(_endpoint))
        {
            var room = new byte[] { 1, 1, 1, 1, 1,   1, 0, 0, 0, 1,   1, 1, 1, 0, 1 };
            long gen = await client.PutMapAsync("room", 5, 3, room, cellSize: 16);
            PathResult path = await client.FindPathAsync(new PathPoint(8, 40), new PathPoint(72, 40), 1, new PathOptions { Map = "room" });
            printed.Add(path.Status + ": " + string.Join(" ", path.Path));
            MapData back = await client.GetMapAsync("room", new GridRect(0, 1, 5, 2));
            printed.Add(back.Width + "x" + back.Height + ", region " + back.Region.Width + "x" + back.Region.Height + ": " + string.Join(",", back.Cells));
            try { await client.UpdateAsync("room", new[] { new GridRect(1, 0, 1, 1) }, solid: true, ifGen: gen + 1); }
            catch (PathServerException e) { printed.Add(e.Code + " at " + e.At + ", the current generation is the upload's: " + (e.Gen == gen)); }
            try { await client.PutMapAsync("room", 5, 3, new byte[] { 1, 1 }); }
            catch (PathServerException e) { printed.Add(e.Code + " / " + e.At + " / " + e.Message); }
            printed.Add("dropped the upload's generation: " + (await client.DropMapAsync("room") == gen));
        }
        Equal(shown.Groups[1].Value.TrimEnd('\n'), string.Join("\n", printed), "README's uploads output");

        // The queries example, the third output block.
        shown = shown.NextMatch();
        Check(shown.Success, "a third ```text block (queries) in " + readme);
        printed.Clear();
        using (var client = new PathServerClient(_endpoint, "court"))
        {
            // The court of docs/protocol.md, 4 x 3 with a wall at (1, 1), and water (tag 1) down column 2.
            var court = new byte[] { 1, 1, 1, 1,   1, 0, 1, 1,   1, 1, 1, 1 };
            var water = new byte[] { 0, 0, 1, 0,   0, 0, 1, 0,   0, 0, 1, 0 };
            await client.PutMapAsync("court", 4, 3, court, tags: water, tagNames: new Dictionary<string, int> { { "water", 1 } },
                classes: new Dictionary<string, TraversalRules> { { "tank", new TraversalRules { { "water", null } } } });
            var grid = new PathOptions { Space = CoordinateSpace.Grid };

            PathResult nearest = await client.FindPathToAnyAsync(new PathPoint(0, 0), new[] { new PathPoint(3, 2), new PathPoint(0, 2) }, 1, grid);
            printed.Add("nearest: goal " + nearest.GoalIndex + ", cost " + nearest.Cost);

            ReachableResult range = await client.ReachableAsync(new PathPoint(0, 0), 2, 1, grid);
            printed.Add("in range: " + string.Join(" ", Enumerable.Range(0, range.Count).Select(i => "(" + range.Cells[2 * i] + ", " + range.Cells[2 * i + 1] + ") " + range.Costs[i])));

            DistanceField field = await client.DistanceFieldAsync(new[] { new PathPoint(3, 2) }, 1,
                new PathOptions { Space = CoordinateSpace.Grid, Region = new GridRect(0, 0, 2, 2) });
            printed.Add("field " + field.Width + "x" + field.Height + ": " + string.Join(" ", field.Costs.Select(c => c.ToString("0.00", CultureInfo.InvariantCulture))));

            float[] positions = { 0.5f, 0.5f, 3.5f, 0.5f };
            float[] steps = new float[4], remaining = new float[2];
            await client.NextStepsAsync(new[] { new PathPoint(3, 2) }, 1, positions, steps, remaining, grid);
            printed.Add("steps: " + string.Join(" ", steps) + ", remaining " + string.Join(" ", remaining.Select(r => r.ToString("0.00", CultureInfo.InvariantCulture))));

            CheckBlockResult cut = await client.CheckBlockAsync(new[] { new PathPoint(0, 0), new PathPoint(3, 0), new PathPoint(0, 2) },
                new[] { new GridRect(2, 0, 1, 3) }, null, 1, grid);
            printed.Add("a wall down column 2 cuts " + string.Join(" ", cut.Disconnected));

            PathResult tank = await client.FindPathAsync(new PathPoint(0, 0), new PathPoint(3, 0), 1,
                new PathOptions { Space = CoordinateSpace.Grid, Traversal = "tank" });
            PathResult boat = await client.FindPathAsync(new PathPoint(0, 0), new PathPoint(3, 0), 1,
                new PathOptions { Space = CoordinateSpace.Grid, Traversal = new TraversalRules { { "water", 3 } } });
            printed.Add("tank: " + tank.Status + ", boat: " + boat.Status + " at cost " + boat.Cost);

            var others = new AvoidSet().AddCell(1, 0);
            PathResult around = await client.FindPathAsync(new PathPoint(0, 0), new PathPoint(2, 0), 1,
                new PathOptions { Space = CoordinateSpace.Grid, Avoid = others });
            printed.Add("with a unit standing on (1, 0): " + around.Status + ", " + around.Path.Length + " waypoints, cost " + around.Cost.ToString("0.00", CultureInfo.InvariantCulture));
            await client.DropMapAsync("court");
        }
        Equal(shown.Groups[1].Value.TrimEnd('\n'), string.Join("\n", printed), "README's queries output");
    }

    static async Task GridPath()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var result = await client.FindPathAsync(Corner(0), Corner(3), 1, Grid());
            Check(result.Status == PathStatus.Found || result.Status == PathStatus.Partial, "status " + result.StatusText);
            Check(result.Path.Length >= 2, "a path of at least two points");
            Equal(result.Start, result.Path[0], "path starts at the (snapped) start");
            Equal(result.Goal, result.Path[result.Path.Length - 1], "path ends at the (snapped) goal");
            Check(result.Gen > 0, "gen names the generation");
            Check(result.Cost > 0 && result.Expanded > 0, "cost and expanded are filled");
            Console.WriteLine("     | " + result.Start + " -> " + result.Goal + ": " + result.Path.Length + " points, cost "
                + result.Cost.ToString("0.##", CultureInfo.InvariantCulture) + ", gen " + result.Gen);
        }
    }

    static async Task WorldPath()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var grid = await client.FindPathAsync(Corner(1), Corner(2), 1, Grid());
            Func<PathPoint, PathPoint> toWorld = p => new PathPoint(
                (float)(_map.Origin.X + (p.X + 0.5) * _map.CellSize), (float)(_map.Origin.Y + (p.Y + 0.5) * _map.CellSize));
            var options = Grid(o => o.Space = CoordinateSpace.World);
            var world = await client.FindPathAsync(toWorld(grid.Start), toWorld(grid.Goal), 1, options);
            Equal(grid.StatusText, world.StatusText, "status");
            Equal(grid.Path.Length, world.Path.Length, "points");
            for (int i = 0; i < grid.Path.Length; i++)
            {
                var expected = toWorld(grid.Path[i]);
                Check(Math.Abs(expected.X - world.Path[i].X) < 1e-3 && Math.Abs(expected.Y - world.Path[i].Y) < 1e-3,
                    "point " + i + ": expected " + expected + ", got " + world.Path[i]);
            }
        }
    }

    static async Task PackedAnswers()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var requests = RandomRequests(60, 7);
            requests.Add(new PathRequest(Corner(0), new PathPoint(_map.Width + 5, 0)));  // off the map: one failed entry
            foreach (var space in new[] { CoordinateSpace.Grid, CoordinateSpace.World })
            {
                Func<PathPoint, PathPoint> inSpace = p => space == CoordinateSpace.Grid ? p : new PathPoint(
                    (float)(_map.Origin.X + (p.X + 0.5) * _map.CellSize), (float)(_map.Origin.Y + (p.Y + 0.5) * _map.CellSize));
                var spaced = requests.Select(r => new PathRequest(inSpace(r.Start), inSpace(r.Goal))).ToList();
                var options = Grid(o => { o.Space = space; o.Smooth = "none"; });
                var plain = await client.FindPathsAsync(spaced, 1, options);
                var starts = spaced.Select(r => r.Start).ToList();
                var goals = spaced.Select(r => r.Goal).ToList();
                var packed = client.FindPathsPacked(starts, goals, 1, options);
                Check(packed.Error == null, "FindPathsPacked: " + packed.Error);
                Equal(spaced.Count, packed.Count, space + ": entries");
                client.PackedAnswers = true;
                var packedResults = await client.FindPathsAsync(spaced, 1, options);
                client.PackedAnswers = false;
                for (int i = 0; i < spaced.Count; i++)
                {
                    string what = space + " entry " + i;
                    Equal(plain[i].Status, packed.Status[i], what + " status");
                    Equal(plain[i].Status, packedResults[i].Status, what + " status (PackedAnswers)");
                    Equal(string.Join(" ", plain[i].Path), string.Join(" ", packed.PathOf(i)), what + " path");
                    Equal(string.Join(" ", plain[i].Path), string.Join(" ", packedResults[i].Path), what + " path (PackedAnswers)");
                    Equal((float)plain[i].Cost, packed.Costs[i], what + " cost");
                    if (plain[i].Status == PathStatus.Failed)
                        Equal(plain[i].Error.Code, packed.Errors[i].Code, what + " error");
                    if (i % 6 != 0) continue;
                    var alone = client.FindPath(spaced[i].Start, spaced[i].Goal, 1, options);
                    if (plain[i].Status == PathStatus.Failed)
                    {
                        Equal(PathStatus.Failed, alone.Status, what + ": FindPath fails too");
                        Equal(plain[i].Error.Code, alone.Error.Code, what + ": FindPath's error");
                        continue;
                    }
                    SamePath(plain[i], alone, what + ": FindPath");
                    Equal(plain[i].Cost, alone.Cost, what + ": FindPath's cost");
                }
                Console.WriteLine("     | " + space + ": " + packed.Count + " entries, " + packed.Points.Length + " points, "
                    + packed.Errors.Count + " failed, the same as the plain batch");
            }
        }
    }

    static async Task SynchronousFailures()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var result = client.FindPath(Corner(0), Corner(3), 1, Grid(o => o.Map = "no-such-map"));
            Equal("Failed unknown_map map 0", result.Status + " " + result.Error.Code + " " + result.Error.At + " " + result.Path.Length,
                "an unknown map, as a result");
            var batch = client.FindPathsPacked(new[] { Corner(0) }, new[] { Corner(3) }, 1, Grid(o => o.Map = "no-such-map"));
            Equal("unknown_map 0", batch.Error.Code + " " + batch.Count, "a batch on an unknown map, as a result");
        }
        using (var client = NewClient("tcp://127.0.0.1:" + FreePort()))
        {
            var clock = Stopwatch.StartNew();
            var result = client.FindPath(new PathPoint(0, 0), new PathPoint(1, 1), 1, Grid(o => o.Timeout = TimeSpan.FromMilliseconds(300)));
            Check(clock.ElapsedMilliseconds >= 250 && clock.ElapsedMilliseconds < 3000, "gave up after " + clock.ElapsedMilliseconds + " ms");
            Equal(PathStatus.Failed, result.Status, "nothing listening: Failed");
            Check(result.Error.Code == PathServerErrorCodes.Disconnected || result.Error.Code == PathServerErrorCodes.Timeout,
                "the reason: " + result.Error.Code);
            Console.WriteLine("     | " + result.Error.Message);
        }
        await Task.Yield();
    }

    static List<PathRequest> RandomRequests(int count, int seed)
    {
        var random = new Random(seed);
        var requests = new List<PathRequest>();
        for (int i = 0; i < count; i++)
        {
            requests.Add(new PathRequest(new PathPoint(random.Next(_map.Width), random.Next(_map.Height)),
                new PathPoint(random.Next(_map.Width), random.Next(_map.Height))));
        }
        return requests;
    }

    static async Task PipelinedRequests()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var requests = RandomRequests(200, 1);
            var sizes = new UnitSize[] { 1, 2, new UnitSize(1, 2) };
            var tasks = new List<Task<PathResult>>();
            int peak = 0;
            for (int i = 0; i < requests.Count; i++)
            {
                tasks.Add(client.FindPathAsync(requests[i].Start, requests[i].Goal, sizes[i % sizes.Length], Grid()));
                peak = Math.Max(peak, client.InFlightCount);
            }
            var results = await Task.WhenAll(tasks);
            Check(peak > 1, "requests should be in flight together, peak was " + peak);
            Equal(requests.Count, results.Select(r => r.Id).Distinct().Count(), "distinct ids");
            // Ask the same questions one at a time: every pipelined answer must be the one for its request.
            for (int i = 0; i < requests.Count; i++)
            {
                var alone = await client.FindPathAsync(requests[i].Start, requests[i].Goal, sizes[i % sizes.Length], Grid());
                SamePath(alone, results[i], "request " + i);
                Equal(results[i].Id, MsgPack.ToLong(results[i].Raw["id"]), "reply id");
            }
            Console.WriteLine("     | " + requests.Count + " requests, " + peak + " in flight at the peak, "
                + results.Count(r => r.Status == PathStatus.Found) + " found");
        }
    }

    static async Task Batch()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var requests = RandomRequests(40, 2);
            requests.Add(new PathRequest(new PathPoint(0, 0), new PathPoint(_map.Width + 5, 0)));
            var results = await client.FindPathsAsync(requests, 2, Grid());
            Equal(requests.Count, results.Length, "one result per request");
            for (int i = 0; i < requests.Count - 1; i++)
            {
                var alone = await client.FindPathAsync(requests[i].Start, requests[i].Goal, 2, Grid());
                SamePath(alone, results[i], "entry " + i);
                Equal(i, results[i].Index, "index");
            }
            var bad = results[requests.Count - 1];
            Equal(PathStatus.Failed, bad.Status, "the out-of-bounds entry's status");
            Equal("out_of_bounds", bad.Error.Code, "the out-of-bounds entry's code");
            Check(bad.Error.At != null && bad.Error.At.StartsWith("requests[" + (requests.Count - 1) + "]"), "at names the entry: " + bad.Error.At);
            // 500 entries: long frames both ways.
            var many = await client.FindPathsAsync(RandomRequests(500, 3), 1, Grid());
            Equal(500, many.Length, "500 results");
        }
    }

    static async Task ErrorCodes()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var error = await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Map = "no_such_map")), "unknown_map");
            Equal("map", error.At, "unknown_map at");
            Check(error.RequestId.HasValue && !error.Retryable, "request id set, not retryable");
            error = await Throws(() => client.FindPathAsync(Corner(0), new PathPoint(_map.Width, 0), 1, Grid(o => o.Snap = false)), "out_of_bounds");
            Equal("goal", error.At, "out_of_bounds at");
            error = await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 0, Grid()), "bad_unit_size");
            Equal("unit_size", error.At, "bad_unit_size at");
            error = await Throws(() => client.FindPathAsync(new PathPoint(float.NaN, 0), Corner(3), 1, Grid()), "non_finite");
            Equal("start[0]", error.At, "non_finite at");
            error = await Throws(() => client.RequestAsync("teleport"), "unknown_op");
            Equal("op", error.At, "unknown_op at");
            await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Extra = new Dictionary<string, object> { { "colour", "red" } })), "invalid_request");
            // The connection is still good after errors.
            await client.PingAsync();
        }
    }

    static async Task Events()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            client.DispatchEventsOnMainThread = true;
            var found = new List<PathFoundEventArgs>();
            var failed = new List<PathFailedEventArgs>();
            int drainingThread = Thread.CurrentThread.ManagedThreadId;
            var threads = new HashSet<int>();
            client.PathFound += (sender, e) => { found.Add(e); threads.Add(Thread.CurrentThread.ManagedThreadId); };
            client.PathFailed += (sender, e) => { failed.Add(e); threads.Add(Thread.CurrentThread.ManagedThreadId); };
            var unit = new object();
            long goodId = client.RequestPath(Corner(0), Corner(3), 1, Grid(), unit);
            long badId = client.RequestPath(Corner(0), Corner(3), 1, Grid(o => o.Map = "no_such_map"), "bad");
            await Eventually(() => client.InFlightCount == 0, "both replies");
            Equal(0, found.Count + failed.Count, "no event before DrainMainThreadQueue");
            // Event handlers run where DrainMainThreadQueue is called; in a game, once a frame.
            drainingThread = Thread.CurrentThread.ManagedThreadId;
            int ran = client.DrainMainThreadQueue();
            Check(ran >= 2, "drained " + ran + " actions");
            Equal(1, found.Count, "PathFound events");
            Equal(1, failed.Count, "PathFailed events");
            Equal(goodId, found[0].RequestId, "PathFound id");
            Check(ReferenceEquals(unit, found[0].State) && ReferenceEquals(unit, found[0].Result.State), "state comes back");
            Equal(badId, failed[0].RequestId, "PathFailed id");
            Equal("unknown_map", failed[0].Error.Code, "PathFailed code");
            Equal("bad", (string)failed[0].State, "PathFailed state");
            Check(threads.Count == 1 && threads.Contains(drainingThread), "handlers ran on the draining thread");
            Equal(0, client.DrainMainThreadQueue(), "queue is empty afterwards");
            // FindPathAsync raises the events too.
            await client.FindPathAsync(Corner(0), Corner(3), 1, Grid());
            client.DrainMainThreadQueue();
            Equal(2, found.Count, "PathFound after FindPathAsync");
        }
    }

    // No path is an answer, as in AStarGrid2D: Status NoPath, an empty Path, no exception, and
    // PathFound (never PathFailed), awaited, by callback and in a batch alike.
    static async Task NoPathIsAResult()
    {
        await RequireServer();
        using (var client = new PathServerClient(_endpoint, "example") { DispatchEventsOnMainThread = false })
        {
            var completed = new List<PathFoundEventArgs>();
            var failed = new List<PathFailedEventArgs>();
            client.PathFound += (sender, e) => { lock (completed) completed.Add(e); };
            client.PathFailed += (sender, e) => { lock (failed) failed.Add(e); };
            var start = new PathPoint(2, 2);
            var walledOff = new PathPoint(60, 60);  // behind a one-cell door: no way for a 2x2 unit
            var options = new PathOptions { Space = CoordinateSpace.Grid };
            var result = await client.FindPathAsync(start, walledOff, 2, options);
            Equal(PathStatus.NoPath, result.Status, "awaited status");
            Equal("no_path", result.StatusText, "status text");
            Equal(0, result.Path.Length, "no waypoints");
            Check(!result.HasPath && result.Error == null, "no path and no error");
            Equal(0.0, result.Cost, "cost");
            long id = client.RequestPath(start, walledOff, 2, options, "unit");
            await Eventually(() => { lock (completed) return completed.Count == 2; }, "two PathFound events");
            lock (completed)
            {
                Equal(id, completed[1].RequestId, "the callback's id");
                Equal(PathStatus.NoPath, completed[1].Result.Status, "the callback's status");
                Equal("unit", (string)completed[1].State, "the callback's state");
            }
            lock (failed) Equal(0, failed.Count, "PathFailed events");
            var batch = await client.FindPathsAsync(new[] { new PathRequest(start, walledOff), new PathRequest(start, new PathPoint(10, 2)) }, 2, options);
            Equal(PathStatus.NoPath, batch[0].Status, "a batch entry with no path");
            Check(batch[0].Error == null, "the entry has no error");
            Equal(PathStatus.Found, batch[1].Status, "the next entry");
        }
    }

    // The event queue is bounded: nothing drains it, 10 answers arrive, capacity 4: the 4 newest
    // stay, the 6 oldest are dropped and counted, and the log says so once.
    static async Task EventQueueIsBounded()
    {
        await RequireServer();
        var logged = new List<string>();
        using (var client = new PathServerClient(_endpoint, _mapName) { EventQueueCapacity = 4 })
        {
            client.Log = message => { lock (logged) logged.Add(message); };
            Equal(PathServerClient.DefaultEventQueueCapacity, new PathServerClient(_endpoint).EventQueueCapacity, "the default capacity");
            bool refused = false;
            try
            {
                client.EventQueueCapacity = 0;
            }
            catch (ArgumentOutOfRangeException)
            {
                refused = true;
            }
            Check(refused, "a capacity below 1 is refused");
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected");
            client.DrainMainThreadQueue();  // the ConnectionChanged event
            var ids = new List<long>();
            for (int i = 0; i < 10; i++)
            {
                // One at a time, so the answers (and their events) arrive in id order.
                ids.Add(client.RequestPath(Corner(0), Corner(i % 4), 1, Grid()));
                await Eventually(() => client.InFlightCount == 0, "answer " + i);
            }
            Equal(6L, client.DroppedEventCount, "dropped events");
            var heard = new List<long>();
            client.PathFound += (sender, e) => heard.Add(e.RequestId);
            Equal(4, client.DrainMainThreadQueue(), "queued events");
            Equal(string.Join(",", ids.Skip(6)), string.Join(",", heard), "the newest events stay");
            lock (logged) Equal(1, logged.Count(line => line.Contains("event queue is full")), "log lines about the full queue");
        }
    }

    static async Task LiveEdit()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var options = Grid(o => o.Smooth = "none");
            var before = await client.FindPathAsync(Corner(0), Corner(3), 1, options);
            Check(before.Path.Length >= 3, "need a path of 3+ cells to block its middle, got " + before.Path.Length);
            var middle = before.Path[before.Path.Length / 2];
            var cell = new GridRect((int)middle.X, (int)middle.Y, 1, 1);
            long blockedGen = await client.UpdateAsync(_mapName, new[] { cell }, solid: true);
            Check(blockedGen > before.Gen, "update makes a new generation: " + before.Gen + " -> " + blockedGen);
            try
            {
                var after = await client.FindPathAsync(Corner(0), Corner(3), 1, options);
                Equal(blockedGen, after.Gen, "the next path is computed on the new generation");
                Check(!after.Path.Contains(middle), "the new path avoids the blocked cell " + middle);
            }
            finally
            {
                // Leave the shared server's map as we found it (the cell was walkable).
                long reopenedGen = await client.UpdateAsync(_mapName, new[] { cell }, solid: false);
                Check(reopenedGen > blockedGen, "reopening makes another generation");
            }
        }
    }

    static async Task UploadEncoding()
    {
        await Task.Yield();
        Equal("c403010200", Hex(MsgPack.Encode(new byte[] { 1, 2, 0 })), "byte[] as bin 8");
        Equal("0000803f0000c03f", Hex(PathServerClient.Float32Bytes(new[] { 1f, 1.5f })), "float32 little-endian");
        var big = new byte[70000];
        Equal("c600011170", Hex(MsgPack.Encode(big)).Substring(0, 10), "a long byte[] as bin 32");
        var decoded = (Dictionary<string, object>)MsgPack.Decode(MsgPack.Encode(new MsgPackMap { { "cells", new byte[] { 0, 255 } } }));
        Equal("00ff", Hex((byte[])decoded["cells"]), "bin decodes to byte[]");
        Check(PathServerClient.Float32Values(PathServerClient.Float32Bytes(new[] { 2.25f, 300f })).SequenceEqual(new[] { 2.25f, 300f }),
            "float32 bytes back to float[]");
    }

    static async Task AvoidCellsEncoding()
    {
        await Task.Yield();
        Func<AvoidSet, string> wire = avoid => Hex(MsgPack.Encode(avoid.ToWire()));
        Equal("81a563656c6c73c410ffffffff0001000000000080ffffff7f", wire(new AvoidSet().AddCell(-1, 256).AddCell(int.MinValue, int.MaxValue)),
            "cells as bin 8 of int32 x, y little-endian, whatever this machine's order (negative, past a byte, the extremes)");
        Equal("81a572656374739194000102ff", wire(new AvoidSet().AddRect(new GridRect(0, 1, 2, -1))), "rects stay [x, y, w, h] arrays");
        Equal("80", wire(new AvoidSet()), "an empty set: neither key");

        // Units' cells as a game keeps them: x, y pairs in one array.
        var xy = new[] { 7, 7, 3, -2, 70000, 5, 0, 0, 9, 9 };
        var oneByOne = new AvoidSet().AddRect(new GridRect(1, 1, 2, 2)).AddCell(3, -2).AddCell(70000, 5).AddCell(0, 0);
        var bulk = new AvoidSet().AddRect(new GridRect(1, 1, 2, 2)).AddCells(new ReadOnlySpan<int>(xy, 2, 6));
        Equal(wire(oneByOne), wire(bulk), "AddCells(a Span slice) is AddCell on each pair");
        Equal("3 1", bulk.CellCount + " " + bulk.RectCount, "AddCells: CellCount and RectCount");
        Equal(wire(oneByOne), wire(new AvoidSet().AddRect(new GridRect(1, 1, 2, 2)).AddCells(xy, 2, 3)), "AddCells(xy, offset, count) is AddCell on each pair");
        Equal(wire(oneByOne.AddCell(9, 9)), wire(bulk.AddCells(xy, 8, 1).AddCells(new int[0]).AddCells(xy, 10, 0)),
            "AddCells after AddCells appends; nothing to add is fine at the array's end");
        var big = new int[2 * 40000];
        for (int i = 0; i < big.Length; i++) big[i] = i * 37 - 1000;
        var many = new AvoidSet();
        for (int i = 0; i < big.Length; i += 2) many.AddCell(big[i], big[i + 1]);
        var manyBytes = MsgPack.Encode(new AvoidSet().AddCells(big).ToWire());
        SameBytes(MsgPack.Encode(many.ToWire()), manyBytes, "40 000 cells: AddCells is AddCell on each pair");
        Equal("c60004e200", Hex(manyBytes).Substring(14, 10), "40 000 cells as bin 32 of 320 000 bytes");

        // An odd count, or a range past the array, throws before anything is added.
        var untouched = new AvoidSet().AddCell(1, 2);
        bool threw = false;
        try { untouched.AddCells(new[] { 4, 5, 6 }); }
        catch (ArgumentException) { threw = true; }
        Check(threw, "AddCells of an odd number of ints: ArgumentException");
        threw = false;
        try { untouched.AddCells(new ReadOnlySpan<int>(xy, 1, 4).Slice(1)); }
        catch (ArgumentException) { threw = true; }
        Check(threw, "AddCells of an odd Span slice: ArgumentException");
        foreach (var range in new[] { new[] { 0, 6 }, new[] { 9, 1 }, new[] { -1, 1 }, new[] { 0, -1 }, new[] { 11, 0 }, new[] { 2, int.MaxValue } })
        {
            threw = false;
            try { untouched.AddCells(xy, range[0], range[1]); }
            catch (ArgumentOutOfRangeException) { threw = true; }
            Check(threw, "AddCells(xy of 10 ints, " + range[0] + ", " + range[1] + "): ArgumentOutOfRangeException");
        }
        threw = false;
        try { untouched.AddCells(null, 0, 0); }
        catch (ArgumentNullException) { threw = true; }
        Check(threw, "AddCells(null, 0, 0): ArgumentNullException");
        Equal(wire(new AvoidSet().AddCell(1, 2)), wire(untouched), "a refused AddCells added nothing");
    }

    static async Task UploadRoundTrip()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var cells = new byte[] { 1, 1, 0, 1, 1, 2, 1, 0, 1, 1, 4, 1 };
            var costs = new float[] { 1, 1, 0, 1, 1, 1.5f, 1, 0, 1, 1, 4, 300 };
            var heights = new float[] { 0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4, 4.5f, 5, 5.5f };
            var tags = new byte[] { 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3 };
            long gen = await client.PutMapAsync("csharp_grid", 4, 3, cells, costs, heights, tags, new PathPoint(-8, 16), 4);
            try
            {
                MapData map = await client.GetMapAsync("csharp_grid");
                Equal(gen, map.Gen, "get_map's generation is the upload's");
                Equal("csharp_grid 4x3 (-8, 16) 4", map.Name + " " + map.Width + "x" + map.Height + " " + map.Origin + " "
                    + map.CellSize.ToString(CultureInfo.InvariantCulture), "name, size, origin, cell size");
                Equal("0101000101020100010104ff", Hex(map.Cells), "cells (a cost of 300 is the byte 255)");
                Check(map.Costs.SequenceEqual(costs) && map.Heights.SequenceEqual(heights) && map.Tags.SequenceEqual(tags),
                    "costs, heights and tags come back as uploaded");
                var path = await client.FindPathAsync(new PathPoint(0, 0), new PathPoint(3, 2), 1,
                    new PathOptions { Map = "csharp_grid", Space = CoordinateSpace.Grid });
                Equal(PathStatus.Found, path.Status, "a path on the uploaded map");
                long edited = await client.UpdateAsync("csharp_grid", new[] { new GridRect(1, 1, 1, 1) }, solid: true, ifGen: gen);
                MapData region = await client.GetMapAsync("csharp_grid", new GridRect(1, 1, 2, 2));
                Equal("00010104", Hex(region.Cells), "a region, with the update in it");
                Equal(edited, region.Gen, "the region's generation is the update's");
                Equal(2, region.Region.Width, "the region's width");
                Equal(4, region.Width, "the whole map's width");
                Equal((byte)4, region[1, 1], "the indexer reads region coordinates");
            }
            finally
            {
                long dropped = await client.DropMapAsync("csharp_grid");
                Check(dropped > gen, "drop_map names the generation dropped (" + dropped + ")");
            }
            await Throws(() => client.FindPathAsync(new PathPoint(0, 0), new PathPoint(1, 0), 1,
                new PathOptions { Map = "csharp_grid", Space = CoordinateSpace.Grid }), PathServerErrorCodes.UnknownMap);
        }
    }

    static async Task UploadErrors()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var e = await Throws(() => client.PutMapAsync("csharp_bad", 3, 2, new byte[] { 1, 1, 1 }), PathServerErrorCodes.InvalidRequest);
            Equal("cells", e.At, "cells of the wrong size");
            e = await Throws(() => client.PutMapAsync("csharp_bad", 2, 1, new byte[] { 1, 1 }, new float[] { 1 }), PathServerErrorCodes.InvalidRequest);
            Equal("costs", e.At, "costs of the wrong size");
            e = await Throws(() => client.PutMapAsync("csharp_bad", 2, 1, new byte[] { 1, 1 }, new[] { 1f, float.NaN }), PathServerErrorCodes.NonFinite);
            Equal("costs", e.At, "a NaN cost");
            await Throws(() => client.PutMapAsync(_mapName, 1, 1, new byte[] { 1 }), PathServerErrorCodes.Conflict);
            await Throws(() => client.DropMapAsync(_mapName), PathServerErrorCodes.Conflict);
            await Throws(() => client.DropMapAsync("csharp_never"), PathServerErrorCodes.UnknownMap);
            e = await Throws(() => client.GetMapAsync(_mapName, new GridRect(0, 0, 100000, 1)), PathServerErrorCodes.OutOfBounds);
            Equal("region", e.At, "a region not inside the map");
            long gen = await client.PutMapAsync("csharp_bad", 2, 1, new byte[] { 1, 1 });
            try
            {
                e = await Throws(() => client.UpdateAsync("csharp_bad", new[] { new GridRect(0, 0, 1, 1) }, solid: true, ifGen: gen + 100),
                    PathServerErrorCodes.Conflict);
                Equal((long?)gen, e.Gen, "a conflict names the map's current generation");
            }
            finally
            {
                await client.DropMapAsync("csharp_bad");
            }
        }
    }

    static readonly byte[] CourtCells = { 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1 };

    static string Floats(IEnumerable<float> values)
    {
        return string.Join(" ", values.Select(v => float.IsPositiveInfinity(v) ? "inf" : v.ToString("0.####", CultureInfo.InvariantCulture)));
    }

    // The court of the golden vectors (4 x 3, a wall at (1, 1)) uploaded with a world transform
    // (origin (10, 0), cells of 2 units): grid requests must answer exactly as the doc's session,
    // world ones the same cells in world units (points in, cell centres out).
    static async Task QueriesOnCourt()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            await client.PutMapAsync("csharp_court", 4, 3, CourtCells, origin: new PathPoint(10, 0), cellSize: 2);
            try
            {
                var grid = new PathOptions { Map = "csharp_court", Space = CoordinateSpace.Grid };
                var world = new PathOptions { Map = "csharp_court" };
                var goals = new[] { new PathPoint(3, 2), new PathPoint(0, 2) };
                var path = await client.FindPathToAnyAsync(new PathPoint(0, 0), goals, 1,
                    new PathOptions { Map = "csharp_court", Space = CoordinateSpace.Grid, Smooth = "none" });
                Equal("Found (0, 0) (0, 1) (0, 2) cost 2 goal_index 1", path.Status + " " + string.Join(" ", path.Path) + " cost " + path.Cost
                    + " goal_index " + path.GoalIndex, "FindPathToAnyAsync: the second goal is the cheaper");
                var plain = await client.FindPathAsync(new PathPoint(0, 0), new PathPoint(0, 2), 1, grid);
                Equal(null, plain.GoalIndex, "GoalIndex without goals");
                var batch = await client.FindPathsAsync(new[] { new PathRequest(new PathPoint(0, 0), goals), new PathRequest(new PathPoint(3, 0), new PathPoint(3, 2)),
                    new PathRequest(new PathPoint(3, 0), new[] { new PathPoint(0, 0), new PathPoint(3, 1) }) }, 1, grid);
                Equal("1 - 1", string.Join(" ", batch.Select(r => r.GoalIndex.HasValue ? r.GoalIndex.ToString() : "-")), "a batch: goals per entry, GoalIndex per result");

                var found = new TaskCompletionSource<PathFoundEventArgs>();
                client.PathFound += (sender, e) => { if (Equals(e.State, "any")) found.TrySetResult(e); };
                long id = client.RequestPathToAny(new PathPoint(0, 0), goals, 1, grid, "any");
                Check(await Task.WhenAny(found.Task, Task.Delay(5000)) == found.Task, "PathFound for RequestPathToAny within 5 s");
                Equal(id + " 1", found.Task.Result.RequestId + " " + found.Task.Result.Result.GoalIndex, "RequestPathToAny: the event's id and GoalIndex");

                var reachable = await client.ReachableAsync(new PathPoint(0, 0), 2, 1, grid);
                Equal("5: 0,0 1,0 0,1 2,0 0,2 at 0 1 1 2 2", reachable.Count + ": " + string.Join(" ", Enumerable.Range(0, reachable.Count)
                    .Select(i => reachable.Cells[2 * i] + "," + reachable.Cells[2 * i + 1])) + " at " + Floats(reachable.Costs), "ReachableAsync");
                var reachableWorld = await client.ReachableAsync(new PathPoint(11, 1), 2, 1, world);
                Check(reachable.Cells.SequenceEqual(reachableWorld.Cells), "ReachableAsync from a world point: the same grid cells");

                var field = await client.DistanceFieldAsync(new[] { new PathPoint(3, 2) }, 1,
                    new PathOptions { Map = "csharp_court", Space = CoordinateSpace.Grid, Region = new GridRect(0, 0, 2, 2) });
                float root2 = (float)Math.Sqrt(2);
                Equal("2x2 at 0,0: " + Floats(new[] { 3 + root2, 2 + root2, 4f, float.PositiveInfinity }),
                    field.Width + "x" + field.Height + " at " + field.Region.X + "," + field.Region.Y + ": " + Floats(field.Costs), "DistanceFieldAsync, a region");
                var whole = await client.DistanceFieldAsync(new[] { new PathPoint(17, 5) }, 1, world);
                Equal("4x3 0 inf", whole.Width + "x" + whole.Height + " " + Floats(new[] { whole[3, 2], whole[1, 1] }), "the whole field to a world goal (17, 5) = cell (3, 2)");
                Check(whole[0, 0] == field[0, 0], "the same cost at (0, 0)");
                var near = await client.DistanceFieldAsync(new[] { new PathPoint(3, 2) }, 1,
                    new PathOptions { Map = "csharp_court", Space = CoordinateSpace.Grid, MaxCost = 1.5 });
                Equal(4, near.Costs.Count(c => !float.IsInfinity(c)), "MaxCost 1.5: the goal, two neighbours and a diagonal (1.414); the rest +inf");

                var steps = new float[4];
                var remaining = new float[2];
                var next = await client.NextStepsAsync(new[] { new PathPoint(3, 2) }, 1, new float[] { 0.5f, 0.5f, 3.5f, 0.5f }, steps, remaining, grid);
                Equal("1 0 3 1 / " + Floats(new[] { 3 + root2, 2f }), Floats(steps) + " / " + Floats(remaining), "NextStepsAsync (grid)");
                Check(next.Count == 2 && next.Gen > 0, "NextStepsResult: Count and Gen");
                await client.NextStepsAsync(new[] { new PathPoint(17, 5) }, 1, new float[] { 11, 1, 17.5f, 1 }, steps, remaining, world);
                Equal("13 1 17 3", Floats(steps), "NextStepsAsync (world): the next cells' centres");

                var points = new[] { new PathPoint(0, 0), new PathPoint(3, 0), new PathPoint(0, 2) };
                var block = await client.CheckBlockAsync(points, new[] { new GridRect(2, 0, 1, 3) }, null, 1, grid);
                Equal("[0, 1] [1, 2] True", string.Join(" ", block.Disconnected) + " " + block.CutsAnything, "CheckBlockAsync, a rectangle");
                block = await client.CheckBlockAsync(points, null, new[] { new PathPoint(2, 0), new PathPoint(2, 1), new PathPoint(2, 2) }, 1, grid);
                Equal("[0, 1] [1, 2]", string.Join(" ", block.Disconnected), "CheckBlockAsync, cells");
                block = await client.CheckBlockAsync(points, new[] { new GridRect(3, 2, 1, 1) }, null, 1, grid);
                Equal("False", block.CutsAnything.ToString(), "CheckBlockAsync, a corner cuts nothing");
                var map = await client.GetMapAsync("csharp_court");
                Equal(Hex(CourtCells), Hex(map.Cells), "check_block left the map as it was");
            }
            finally
            {
                await client.DropMapAsync("csharp_court");
            }
        }
    }

    // A game's frame loop: the same positions, steps and remaining arrays every call.
    static async Task NextStepsReusesBuffers()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var options = new PathOptions { Space = CoordinateSpace.Grid };
            var goals = new[] { new PathPoint(60, 60) };
            var random = new Random(7);
            const int units = 1000;
            var positions = new float[2 * units];
            for (int i = 0; i < positions.Length; i++) positions[i] = (float)(random.NextDouble() * 63);
            var steps = new float[2 * units];
            var remaining = new float[units];
            float[] before = null;
            var clock = Stopwatch.StartNew();
            for (int frame = 0; frame < 5; frame++)
            {
                var result = await client.NextStepsAsync(goals, 1, new ReadOnlySpan<float>(positions), steps, remaining, options);
                Check(ReferenceEquals(steps, result.Steps) && ReferenceEquals(remaining, result.Remaining) && result.Count == units,
                    "frame " + frame + ": the answer is in the caller's arrays");
                if (before != null)
                {
                    // Every unit walked one cell downhill since the last frame (or stood on the goal, or cannot reach it).
                    for (int i = 0; i < units; i++)
                        Check(before[i] == 0 ? remaining[i] == 0 : float.IsInfinity(before[i]) ? float.IsInfinity(remaining[i]) : remaining[i] < before[i],
                            "frame " + frame + ", unit " + i + ": remaining " + before[i] + " then " + remaining[i]);
                }
                before = (float[])remaining.Clone();
                // Move every unit to its step, as a game would, for the next frame.
                Array.Copy(steps, positions, steps.Length);
            }
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "     | 5 frames of {0} units: {1:0.0} ms a frame", units, clock.Elapsed.TotalMilliseconds / 5));
            Check(remaining.Count(r => !float.IsInfinity(r)) > units / 2, "most units reach the goal");
            var again = new float[2 * units];
            await client.NextStepsAsync(goals, 1, new ReadOnlySpan<float>(positions), again, before, options);
            await client.NextStepsAsync(goals, 1, new ReadOnlySpan<float>(positions), steps, remaining, options);
            Check(again.SequenceEqual(steps) && before.SequenceEqual(remaining), "the same positions, the same answer");

            // Units 10 and 11 alone: a Span slice, and the offset/count overload, into small buffers.
            for (int i = 0; i < positions.Length; i++) positions[i] = (float)(random.NextDouble() * 63);
            await client.NextStepsAsync(goals, 1, positions, steps, remaining, options);
            var two = new float[4];
            var twoRemaining = new float[2];
            await client.NextStepsAsync(goals, 1, new ReadOnlySpan<float>(positions, 20, 4), two, twoRemaining, options);
            Check(two.SequenceEqual(steps.Skip(20).Take(4)) && twoRemaining.SequenceEqual(remaining.Skip(10).Take(2)), "a Span slice: units 10 and 11");
            Array.Clear(two, 0, 4);
            await client.NextStepsAsync(goals, 1, positions, 20, 2, two, twoRemaining, options);
            Check(two.SequenceEqual(steps.Skip(20).Take(4)), "offset (in floats) 20 and count 2: units 10 and 11");
            var fresh = await client.NextStepsAsync(goals, 1, new[] { positions[20], positions[21] }, options);
            Check(fresh.Steps.Length == 2 && fresh.Steps[0] == steps[20] && fresh.Remaining[0] == remaining[10], "the allocating overload");

            // Buffers too small, or an odd number of floats: refused before anything is sent.
            bool threw = false;
            try { await client.NextStepsAsync(goals, 1, positions, new float[10], remaining, options); }
            catch (ArgumentException) { threw = true; }
            Check(threw, "steps too small: ArgumentException");
            threw = false;
            try { await client.NextStepsAsync(goals, 1, new ReadOnlySpan<float>(positions, 0, 3), steps, remaining, options); }
            catch (ArgumentException) { threw = true; }
            Check(threw, "an odd number of floats: ArgumentException");
            Equal(0, client.InFlightCount, "nothing in flight");
        }
    }

    static async Task QueryErrors()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var grid = new PathOptions { Space = CoordinateSpace.Grid };
            var goals = new[] { Corner(3) };
            var e = await Throws(() => client.ReachableAsync(Corner(0), -1, 1, grid), PathServerErrorCodes.InvalidRequest);
            Equal("budget", e.At, "a negative budget");
            e = await Throws(() => client.ReachableAsync(new PathPoint(_map.Width, 0), 5, 1, new PathOptions { Space = CoordinateSpace.Grid, Snap = false }),
                PathServerErrorCodes.OutOfBounds);
            Equal("start", e.At, "a start off the map");
            e = await Throws(() => client.DistanceFieldAsync(goals, 1, new PathOptions { Space = CoordinateSpace.Grid, Region = new GridRect(0, 0, 100000, 1) }),
                PathServerErrorCodes.OutOfBounds);
            Equal("region", e.At, "a region not inside the map");
            e = await Throws(() => client.DistanceFieldAsync(new PathPoint[0], 1, grid), PathServerErrorCodes.InvalidRequest);
            Equal("goals", e.At, "no goals");
            e = await Throws(() => client.NextStepsAsync(goals, 1, new float[] { 1, 1, float.NaN, 2 }, grid), PathServerErrorCodes.NonFinite);
            Equal("positions[1]", e.At, "a NaN position");
            e = await Throws(() => client.NextStepsAsync(goals, 0, new float[] { 1, 1 }, grid), PathServerErrorCodes.BadUnitSize);
            Equal("unit_size", e.At, "unit size 0");
            e = await Throws(() => client.CheckBlockAsync(new[] { Corner(0) }, null, null, 1, grid), PathServerErrorCodes.InvalidRequest);
            Equal("rects", e.At, "check_block with nothing placed");
            e = await Throws(() => client.FindPathToAnyAsync(Corner(0), new[] { new PathPoint(_map.Width + 5, 0) }, 1, new PathOptions { Space = CoordinateSpace.Grid, Snap = false }),
                PathServerErrorCodes.OutOfBounds);
            Equal("goals[0]", e.At, "a goal off the map");
            e = await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 1, new PathOptions { Space = CoordinateSpace.Grid,
                Avoid = new AvoidSet().AddRect(new GridRect(1, 1, 0, 1)) }), PathServerErrorCodes.InvalidRequest);
            Equal("avoid.rects[0]", e.At, "an avoided rectangle of width 0");
            e = await Throws(() => client.ReachableAsync(Corner(0), 5, 1, new PathOptions { Space = CoordinateSpace.Grid,
                Avoid = new AvoidSet().AddCell(3, 3), AvoidCost = 0.5 }), PathServerErrorCodes.InvalidRequest);
            Equal("avoid_cost", e.At, "avoid_cost below 1");
            e = await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 1, new PathOptions { Space = CoordinateSpace.Grid, Traversal = "boat" }),
                PathServerErrorCodes.InvalidRequest);
            Equal("traversal", e.At, "a unit class the map does not have");
            e = await Throws(() => client.NextStepsAsync(goals, 1, new float[] { 1, 1 }, new PathOptions { Space = CoordinateSpace.Grid, Lookahead = "far" }),
                PathServerErrorCodes.InvalidRequest);
            Equal("lookahead", e.At, "a lookahead out of its choices");
            var batch = await client.FindPathsAsync(new[] { new PathRequest(new PathPoint(1, 1), new PathPoint(2, 2)), new PathRequest(new PathPoint(1, 1), new[] { new PathPoint(-50, 0) }) }, 1,
                new PathOptions { Space = CoordinateSpace.Grid, Snap = false });
            Equal("Found Failed requests[1].goals[0]", batch[0].Status + " " + batch[1].Status + " " + batch[1].Error.At, "a batch entry's goals fail alone");

            // Misuse the client can see: refused before sending, nothing in flight.
            bool threw = false;
            try { await client.FindPathAsync(Corner(0), Corner(3), 1, new PathOptions { Lookahead = "los" }); }
            catch (ArgumentException) { threw = true; }
            Check(threw, "Lookahead on a path request: ArgumentException");
            threw = false;
            try { await client.FindPathToAnyAsync(Corner(0), null, 1); }
            catch (ArgumentNullException) { threw = true; }
            Check(threw, "FindPathToAnyAsync without goals: ArgumentNullException");
            Equal(0, client.InFlightCount, "nothing in flight");
            await client.PingAsync();
        }
    }

    // A 4 x 3 upload with water at (1, 1) and (2, 1), named, and two unit classes.
    static async Task TraversalAndAvoid()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            var cells = Enumerable.Repeat((byte)1, 12).ToArray();
            var tags = new byte[] { 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0 };
            var classes = new Dictionary<string, TraversalRules>
            {
                { "tank", new TraversalRules { { "water", null } } },
                { "boat", new TraversalRules { { "water", 2 } } },
            };
            var e = await Throws(() => client.PutMapAsync("csharp_tags", 4, 3, cells, tagNames: new Dictionary<string, int> { { "water", 1 } }),
                PathServerErrorCodes.InvalidRequest);
            Equal("tag_names", e.At, "tag names without tags");
            e = await Throws(() => client.PutMapAsync("csharp_tags", 4, 3, cells, tags: tags, tagNames: new Dictionary<string, int> { { "water", 1 } },
                classes: new Dictionary<string, TraversalRules> { { "tank", new TraversalRules { { "lava", null } } } }), PathServerErrorCodes.InvalidRequest);
            Check(e.At != null && e.At.StartsWith("classes.tank"), "a class naming an unknown tag: at " + e.At);
            await client.PutMapAsync("csharp_tags", 4, 3, cells, tags: tags, tagNames: new Dictionary<string, int> { { "water", 1 } }, classes: classes);
            try
            {
                var map = await client.GetMapAsync("csharp_tags");
                Equal("water=1 boat:water=2 tank:water=null", string.Join(" ", map.TagNames.Select(p => p.Key + "=" + p.Value)) + " "
                    + string.Join(" ", map.Classes.OrderBy(c => c.Key).Select(c => c.Key + ":" + string.Join(",", c.Value.Select(r => r.Key + "=" + (r.Value.HasValue ? r.Value.ToString() : "null"))))),
                    "GetMapAsync: TagNames and Classes as uploaded");

                Func<Traversal, Task<string>> cost = async traversal =>
                {
                    var result = await client.FindPathAsync(new PathPoint(0, 1), new PathPoint(3, 1), 1,
                        new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Smooth = "none", Traversal = traversal });
                    return result.Cost.ToString("0.###", CultureInfo.InvariantCulture);
                };
                Equal("3 5 3.828 5 3.828", await cost(null) + " " + await cost("tank") + " " + await cost("boat")
                    + " " + await cost(new TraversalRules { { "water", null } }) + " " + await cost(new TraversalRules { { "water", 5 } }),
                    "path costs: no rules, tank, boat, rules blocking water, rules pricing it");
                e = await Throws(() => cost(new TraversalRules { { "lava", null } }), PathServerErrorCodes.InvalidRequest);
                Equal("traversal.lava", e.At, "a rule for a tag the map does not name");
                var tank = await client.ReachableAsync(new PathPoint(0, 1), 1, 1, new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Traversal = "tank" });
                Equal(3, tank.Count, "a tank's range of 1 from (0, 1): water blocks (1, 1)");
                var tankBlock = await client.CheckBlockAsync(new[] { new PathPoint(0, 1), new PathPoint(3, 1) }, new[] { new GridRect(1, 0, 1, 1), new GridRect(2, 2, 1, 1) }, null, 1,
                    new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Traversal = "tank" });
                Equal("[0, 1]", string.Join(" ", tankBlock.Disconnected), "check_block for a tank: around the water is cut");

                // Other units standing in the way: blocked for this request, or priced.
                var avoid = new AvoidSet().AddRect(new GridRect(0, 1, 4, 1));
                var blocked = await client.FindPathToAnyAsync(new PathPoint(0, 0), new[] { new PathPoint(3, 2) }, 1,
                    new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Avoid = avoid });
                Equal("NoPath -", blocked.Status + " " + (blocked.GoalIndex.HasValue ? blocked.GoalIndex.ToString() : "-"), "a row of avoided cells cuts the map");
                var priced = await client.FindPathToAnyAsync(new PathPoint(0, 0), new[] { new PathPoint(3, 2) }, 1,
                    new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Avoid = avoid, AvoidCost = 10 });
                Check(priced.Status == PathStatus.Found && priced.Cost >= 10 && priced.GoalIndex == 0, "AvoidCost: through at a price, cost " + priced.Cost);
                avoid.Clear();
                Equal("0 0", avoid.CellCount + " " + avoid.RectCount, "AvoidSet.Clear");
                var field = await client.DistanceFieldAsync(new[] { new PathPoint(3, 2) }, 1,
                    new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Avoid = avoid.AddCell(2, 2).AddCell(3, 1) });
                Equal(float.PositiveInfinity, field[3, 0], "a field around avoided cells: (3, 0) is closed in");
                var bulkField = await client.DistanceFieldAsync(new[] { new PathPoint(3, 2) }, 1,
                    new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Avoid = new AvoidSet().AddCells(new[] { 2, 2, 3, 1 }) });
                Check(bulkField.Costs.SequenceEqual(field.Costs), "the same field with the cells from AddCells: " + string.Join(",", bulkField.Costs));
                var bulkRange = await client.ReachableAsync(new PathPoint(0, 0), 10, 1,
                    new PathOptions { Map = "csharp_tags", Space = CoordinateSpace.Grid, Avoid = new AvoidSet().AddCells(new[] { 9, 9, 1, 0, 0, 1 }, 2, 2) });
                Equal("1 0,0", bulkRange.Count + " " + string.Join(",", bulkRange.Cells.Take(2 * bulkRange.Count)), "reachable boxed in by AddCells' two cells: the start alone");
                var map2 = await client.GetMapAsync("csharp_tags");
                Equal(Hex(cells), Hex(map2.Cells), "avoid left the map as it was");
            }
            finally
            {
                await client.DropMapAsync("csharp_tags");
            }
        }
    }

    static async Task Cancellation()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            proxy.Start();
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected through the proxy");
            proxy.DropReplies = true;
            var cancel = new CancellationTokenSource();
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(), cancel.Token);
            await Task.Delay(50);
            cancel.Cancel();
            bool cancelled = false;
            try
            {
                await task;
            }
            catch (OperationCanceledException)
            {
                cancelled = true;
            }
            Check(cancelled, "the task is cancelled");
            Equal(0, client.InFlightCount, "nothing left in flight");
        }
    }

    static async Task RequestTimeout()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            client.HeartbeatTimeout = TimeSpan.FromSeconds(30);
            proxy.Start();
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected through the proxy");
            proxy.DropReplies = true;
            var clock = Stopwatch.StartNew();
            var error = await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 1,
                Grid(o => o.Timeout = TimeSpan.FromMilliseconds(300))), "timeout");
            Check(clock.ElapsedMilliseconds >= 250 && clock.ElapsedMilliseconds < 3000, "timed out after " + clock.ElapsedMilliseconds + " ms");
            Check(error.Message.Contains("within 0.3 s"), "the message says how long: " + error.Message);
            Equal(0, client.InFlightCount, "nothing left in flight");
            Console.WriteLine("     | " + error.Message);
        }
    }

    static async Task NothingListening()
    {
        int port = FreePort();
        using (var client = NewClient("tcp://127.0.0.1:" + port))
        {
            client.RequestTimeout = TimeSpan.FromSeconds(1);
            var error = await Throws(() => client.PingAsync(), "disconnected");
            Check(error.Message.IndexOf("refused", StringComparison.OrdinalIgnoreCase) >= 0, "the message gives the cause: " + error.Message);
            Console.WriteLine("     | " + error.Message);
        }
    }

    static async Task ResendsAfterReconnect()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            proxy.Start();
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected through the proxy");
            proxy.DropReplies = true;
            var tasks = Enumerable.Range(0, 20).Select(i => client.FindPathAsync(Corner(i % 4), Corner((i + 1) % 4), 1, Grid())).ToList();
            await Eventually(() => proxy.BytesToServer > 0 && proxy.BytesDropped > 0, "the requests to reach the server");
            await Task.Delay(100);
            Check(tasks.All(t => !t.IsCompleted), "no reply got through yet");
            // The connection dies with 20 requests answered by the server but never delivered.
            proxy.DropReplies = false;
            proxy.KillConnections();
            var results = await Task.WhenAll(tasks);
            Check(results.All(r => r.Path.Length > 0), "every request answered after the reconnect");
            Equal(2, client.ConnectionCount, "connections");
        }
    }

    static async Task ConnectsBeforeServerIsUp()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Timeout = TimeSpan.FromSeconds(15)));
            await Task.Delay(700);
            Check(!task.IsCompleted && !client.IsConnected, "waiting for the server");
            proxy.Start();
            var result = await task;
            Check(result.Path.Length > 0, "answered once the server is up");
        }
    }

    static async Task SurvivesRestart()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            var changes = new List<bool>();
            client.ConnectionChanged += (sender, e) => { lock (changes) changes.Add(e.IsConnected); };
            proxy.Start();
            await client.PingAsync();
            proxy.Stop();  // the "server" goes away: connection closed, port refusing
            await Eventually(() => !client.IsConnected, "the client to notice");
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Timeout = TimeSpan.FromSeconds(15)));
            await Task.Delay(500);
            Check(!task.IsCompleted, "no answer while the server is down");
            proxy.Start();  // "restarted" on the same port
            var result = await task;
            Check(result.Path.Length > 0, "answered after the restart");
            await Eventually(() => { lock (changes) return changes.Count >= 3; }, "ConnectionChanged events");
            lock (changes) Equal("True,False,True", string.Join(",", changes.Take(3)), "ConnectionChanged sequence");
        }
    }

    static async Task HeartbeatCatchesSilentServer()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            client.HeartbeatInterval = TimeSpan.FromMilliseconds(100);
            client.HeartbeatTimeout = TimeSpan.FromMilliseconds(800);
            proxy.Start();
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected through the proxy");
            // The server "hangs": the TCP connection stays open but nothing comes back.
            proxy.DropReplies = true;
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Timeout = TimeSpan.FromSeconds(15)));
            await Eventually(() => !client.IsConnected, "the heartbeat timeout", 5000);
            proxy.DropReplies = false;
            var result = await task;
            Check(result.Path.Length > 0, "answered on the new connection");
            Check(client.ConnectionCount >= 2, "reconnected");
        }
    }

    static async Task RequestsSurviveCuts()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            proxy.Start();
            var requests = RandomRequests(250, 4);
            var expected = await client.FindPathsAsync(requests, 1, Grid());
            var tasks = new Task<PathResult>[8 * requests.Count];
            var cutter = Task.Run(async () =>
            {
                for (int cut = 0; cut < 5; cut++)
                {
                    await Task.Delay(40);
                    proxy.KillConnections();
                }
            });
            var senders = Enumerable.Range(0, 8).Select(thread => Task.Run(() =>
            {
                for (int i = 0; i < requests.Count; i++)
                {
                    tasks[thread * requests.Count + i] = client.FindPathAsync(requests[i].Start, requests[i].Goal, 1,
                        Grid(o => o.Timeout = TimeSpan.FromSeconds(30)));
                    if (i % 50 == 0) Thread.Sleep(5);
                }
            })).ToArray();
            await Task.WhenAll(senders);
            await cutter;
            var results = await Task.WhenAll(tasks);
            for (int i = 0; i < results.Length; i++) SamePath(expected[i % requests.Count], results[i], "request " + i);
            Equal(0, client.InFlightCount, "in flight at the end");
            Check(client.ConnectionCount >= 2, "the connection was cut and re-made (" + client.ConnectionCount + " connections)");
            Console.WriteLine("     | " + results.Length + " answers over " + client.ConnectionCount + " connections");
        }
    }

    static async Task HeartbeatKeepsIdleConnection()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            client.HeartbeatInterval = TimeSpan.FromMilliseconds(100);
            client.HeartbeatTimeout = TimeSpan.FromMilliseconds(600);
            await client.PingAsync();
            await Task.Delay(2000);  // idle: only our PINGs and the server's PONGs
            await client.PingAsync();
            Equal(1, client.ConnectionCount, "connections after 2 s idle");
        }
    }

    // ---------------------------------------------------------------- conformance and options

    /// <summary>
    /// The shared scenarios of engine_clients/conformance.json, one test each, through the public
    /// API (FindPathAsync, RequestAsync): the outcome must be the scenario's expectation, as for
    /// the Python and GDScript clients (engine_clients/conformance.py describes its shape).
    /// </summary>
    static void RunConformance()
    {
        string path = _conformance ?? (_protocolDoc == null ? null
            : Path.Combine(Path.Combine(Path.GetDirectoryName(Path.GetDirectoryName(_protocolDoc)), "engine_clients"), "conformance.json"));
        List<object> scenarios = null;
        string problem = null;
        try
        {
            scenarios = (List<object>)((Dictionary<string, object>)Json.Parse(File.ReadAllText(path)))["scenarios"];
        }
        catch (Exception e)
        {
            problem = "cannot read the scenarios from " + (path ?? "(no path: pass --conformance)") + ": " + e.Message;
        }
        if (scenarios == null)
        {
            Run("conformance: the scenarios", () => { throw new TestFailure(problem); });
            return;
        }
        foreach (Dictionary<string, object> scenario in scenarios)
        {
            Run("conformance: " + (string)scenario["name"], async () =>
            {
                var wrong = ConformanceMismatches((Dictionary<string, object>)scenario["expect"], await ConformanceOutcome(scenario));
                Check(wrong.Count == 0, string.Join("; ", wrong));
            });
        }
    }

    /// <summary>What this client reports for one scenario (its before requests, its request, its after requests), in the shape of its expectation.</summary>
    static async Task<Dictionary<string, object>> ConformanceOutcome(Dictionary<string, object> scenario)
    {
        await RequireServer();
        var request = (Dictionary<string, object>)scenario["request"];
        string endpoint = _endpoint;
        if (Equals(JsonGet(scenario, "server"), "silent"))
        {
            Check(_silentEndpoint != null, "this scenario needs --silent-endpoint (a peer that never answers)");
            endpoint = _silentEndpoint;
        }
        using (var client = NewClient(endpoint))
        {
            // A scenario's timeout is about a server that does not answer, not one not there yet.
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected to " + endpoint);
            Dictionary<string, object> got = null;
            try
            {
                foreach (Dictionary<string, object> step in (List<object>)JsonGet(scenario, "before") ?? new List<object>())
                {
                    got = await ConformanceStep(client, step);
                    if (got.ContainsKey("error")) return got;
                }
                return await ConformanceStep(client, request);
            }
            finally
            {
                foreach (Dictionary<string, object> step in (List<object>)JsonGet(scenario, "after") ?? new List<object>())
                    await ConformanceStep(client, step);
            }
        }
    }

    /// <summary>One request of a scenario through this client's public API.</summary>
    static async Task<Dictionary<string, object>> ConformanceStep(PathServerClient client, Dictionary<string, object> request)
    {
        string op = (string)JsonGet(request, "op") ?? "path";
        try
        {
            // An op alone goes out as it is, required fields missing included.
            switch (op != "path" && request.Count == 1 ? "" : op)
            {
                case "path":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    if (request.ContainsKey("timeout_ms")) options.Timeout = TimeSpan.FromMilliseconds((double)request["timeout_ms"]);
                    var unitSize = ScenarioUnitSize(request);
                    var goals = JsonGet(request, "goals");
                    var result = goals == null
                        ? await client.FindPathAsync(ScenarioPoint(request["start"]), ScenarioPoint(request["goal"]), unitSize, options)
                        : await client.FindPathToAnyAsync(ScenarioPoint(request["start"]), ScenarioPoints(goals), unitSize, options);
                    var got = new Dictionary<string, object>
                    {
                        { "status", result.StatusText }, { "cost", result.Cost },
                        { "start", new List<object> { (double)result.Start.X, (double)result.Start.Y } },
                        { "goal", new List<object> { (double)result.Goal.X, (double)result.Goal.Y } },
                        { "waypoints", (double)result.Path.Length },
                        { "start_snapped", result.StartSnapped }, { "goal_snapped", result.GoalSnapped },
                    };
                    if (goals != null) got["goal_index"] = result.GoalIndex.HasValue ? (object)(double)result.GoalIndex.Value : null;
                    return got;
                }
                case "reachable":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var reply = await client.ReachableAsync(ScenarioPoint(request["start"]), (double)request["budget"], ScenarioUnitSize(request), options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" }, { "count", (double)reply.Count },
                        { "first", reply.Count == 0 ? null : new List<object> { (double)reply.Cells[0], (double)reply.Cells[1] } },
                        { "last_cost", reply.Count == 0 ? null : (object)(double)reply.Costs[reply.Count - 1] },
                    };
                }
                case "field":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var field = await client.DistanceFieldAsync(ScenarioPoints(request["goals"]), ScenarioUnitSize(request), options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" }, { "width", (double)field.Width }, { "height", (double)field.Height },
                        { "origin", new List<object> { (double)field.Region.X, (double)field.Region.Y } },
                        { "cost", ScenarioListed(field.Costs, field.Costs.Length) },
                    };
                }
                case "next_steps":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var positions = ScenarioPoints(request["positions"]).SelectMany(p => new[] { p.X, p.Y }).ToArray();
                    int count = positions.Length / 2;
                    var steps = new float[2 * count];
                    var remaining = new float[count];
                    await client.NextStepsAsync(ScenarioPoints(request["goals"]), ScenarioUnitSize(request), positions, steps, remaining, options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" },
                        { "steps", Enumerable.Range(0, count).Select(i => (object)new List<object> { (double)steps[2 * i], (double)steps[2 * i + 1] }).ToList() },
                        { "remaining", ScenarioListed(remaining, count) },
                    };
                }
                case "check_block":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var rects = JsonGet(request, "rects") == null ? null : ScenarioRects(request["rects"]);
                    var cells = JsonGet(request, "cells") == null ? null : ScenarioPoints(request["cells"]);
                    var block = await client.CheckBlockAsync(ScenarioPoints(request["points"]), rects, cells, ScenarioUnitSize(request), options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" },
                        { "disconnected", block.Disconnected.Select(pair => (object)new List<object> { (double)pair.First, (double)pair.Second }).ToList() },
                    };
                }
                case "put_map":
                {
                    int width = (int)(double)request["width"], height = (int)(double)request["height"];
                    var cells = ((List<object>)request["cells"]).Select(v => (byte)(double)v).ToArray();
                    var origin = JsonGet(request, "origin") == null ? (PathPoint?)null : ScenarioPoint(request["origin"]);
                    var cellSize = JsonGet(request, "cell_size") == null ? (double?)null : (double)request["cell_size"];
                    var tags = JsonGet(request, "tags") == null ? null : ((List<object>)request["tags"]).Select(v => (byte)(double)v).ToArray();
                    var tagNames = JsonGet(request, "tag_names") == null ? null
                        : ((Dictionary<string, object>)request["tag_names"]).ToDictionary(pair => pair.Key, pair => (int)(double)pair.Value);
                    var classes = JsonGet(request, "classes") == null ? null
                        : ((Dictionary<string, object>)request["classes"]).ToDictionary(pair => pair.Key, pair => ScenarioRules(pair.Value));
                    await client.PutMapAsync((string)request["map"], width, height, cells, ScenarioFloats(JsonGet(request, "costs")),
                        ScenarioFloats(JsonGet(request, "heights")), tags, origin, cellSize, tagNames: tagNames, classes: classes);
                    return new Dictionary<string, object> { { "status", "ok" }, { "width", (double)width }, { "height", (double)height } };
                }
                case "get_map":
                {
                    var region = (List<object>)JsonGet(request, "region");
                    GridRect? rect = null;
                    if (region != null) rect = new GridRect((int)(double)region[0], (int)(double)region[1], (int)(double)region[2], (int)(double)region[3]);
                    MapData map = await client.GetMapAsync((string)request["map"], rect);
                    var got = new Dictionary<string, object>
                    {
                        { "status", "ok" }, { "width", (double)map.Width }, { "height", (double)map.Height },
                        { "region", new List<object> { (double)map.Region.X, (double)map.Region.Y, (double)map.Region.Width, (double)map.Region.Height } },
                        { "cells", map.Cells.Select(b => (object)(double)b).ToList() },
                    };
                    if (map.Costs != null) got["costs"] = map.Costs.Select(c => (object)(double)c).ToList();
                    return got;
                }
                case "drop_map":
                    await client.DropMapAsync((string)request["map"]);
                    return new Dictionary<string, object> { { "status", "ok" } };
                case "update":
                {
                    var rects = ((List<object>)request["rects"]).Select(r => (List<object>)r)
                        .Select(r => new GridRect((int)(double)r[0], (int)(double)r[1], (int)(double)r[2], (int)(double)r[3])).ToList();
                    await client.UpdateAsync((string)request["map"], rects, (bool?)JsonGet(request, "solid"),
                        (double?)JsonGet(request, "cost"), default(CancellationToken),
                        JsonGet(request, "if_gen") == null ? (long?)null : (long)(double)request["if_gen"]);
                    return new Dictionary<string, object> { { "status", "ok" } };
                }
                default:
                    await client.RequestAsync(op);
                    return new Dictionary<string, object> { { "status", "ok" } };
            }
        }
        catch (PathServerException e)
        {
            return new Dictionary<string, object> { { "error", e.Code }, { "at", e.At } };
        }
    }

    /// <summary>A scenario's list of numbers ("nan" and "inf" included) as float32, or null.</summary>
    static float[] ScenarioFloats(object values)
    {
        var list = values as List<object>;
        if (list == null) return null;
        return list.Select(v => v is string ? float.Parse((string)v == "nan" ? "NaN" : ((string)v).Replace("inf", "Infinity"), CultureInfo.InvariantCulture) : (float)(double)v).ToArray();
    }

    /// <summary>
    /// A scenario's wire options as PathOptions: the known ones typed, the rest in Extra. A
    /// scenario speaks the wire, so no "space" is the wire's default, Grid (not this client's World).
    /// </summary>
    static PathOptions ScenarioOptions(Dictionary<string, object> wire)
    {
        var options = new PathOptions { Space = CoordinateSpace.Grid };
        foreach (var pair in wire)
        {
            object value = pair.Value;
            switch (pair.Key)
            {
                case "space": options.Space = (string)value == "grid" ? CoordinateSpace.Grid : CoordinateSpace.World; break;
                case "smooth": options.Smooth = (string)value; break;
                case "diagonal": options.Diagonal = (string)value; break;
                case "heuristic": options.Heuristic = (string)value; break;
                case "algorithm": options.Algorithm = (string)value; break;
                case "snap": options.Snap = (bool)value; break;
                case "allow_partial": options.AllowPartial = (bool)value; break;
                case "line_of_sight": options.LineOfSight = (bool)value; break;
                case "max_expansions": options.MaxExpansions = (int)(double)value; break;
                case "weight": options.Weight = (double)value; break;
                case "max_climb": options.MaxClimb = (double)value; break;
                case "max_cost": options.MaxCost = (double)value; break;
                case "lookahead": options.Lookahead = (string)value; break;
                case "avoid_cost": options.AvoidCost = (double)value; break;
                case "region":
                {
                    var rect = ScenarioRects(new List<object> { value })[0];
                    options.Region = rect;
                    break;
                }
                case "avoid":
                {
                    var avoid = new AvoidSet();
                    var map = (Dictionary<string, object>)value;
                    foreach (var cell in ScenarioPoints(JsonGet(map, "cells") ?? new List<object>())) avoid.AddCell((int)cell.X, (int)cell.Y);
                    foreach (var rect in ScenarioRects(JsonGet(map, "rects") ?? new List<object>())) avoid.AddRect(rect);
                    options.Avoid = avoid;
                    break;
                }
                case "traversal":
                    options.Traversal = value is string ? (Traversal)(string)value : ScenarioRules(value);
                    break;
                default:
                    if (options.Extra == null) options.Extra = new Dictionary<string, object>();
                    options.Extra[pair.Key] = value;
                    break;
            }
        }
        return options;
    }

    static UnitSize ScenarioUnitSize(Dictionary<string, object> request)
    {
        var size = JsonGet(request, "unit_size") ?? 1.0;
        var sizes = size as List<object>;
        return sizes != null ? new UnitSize((int)(double)sizes[0], (int)(double)sizes[1]) : new UnitSize((int)(double)size, (int)(double)size);
    }

    static List<PathPoint> ScenarioPoints(object rows)
    {
        return ((List<object>)rows).Select(ScenarioPoint).ToList();
    }

    static List<GridRect> ScenarioRects(object rows)
    {
        return ((List<object>)rows).Select(row => ((List<object>)row).Select(v => (int)(double)v).ToArray())
            .Select(r => new GridRect(r[0], r[1], r[2], r[3])).ToList();
    }

    static TraversalRules ScenarioRules(object value)
    {
        var rules = new TraversalRules();
        foreach (var pair in (Dictionary<string, object>)value) rules[pair.Key] = pair.Value == null ? (double?)null : (double)pair.Value;
        return rules;
    }

    /// <summary>Floats as a scenario lists them: "inf" for +infinity (conformance.py's _listed).</summary>
    static List<object> ScenarioListed(float[] values, int count)
    {
        return values.Take(count).Select(v => float.IsPositiveInfinity(v) ? (object)"inf" : (double)v).ToList();
    }

    /// <summary>A scenario's [x, y]: numbers, or "nan" / "inf" / "-inf" (JSON has no such floats).</summary>
    static PathPoint ScenarioPoint(object pair)
    {
        var xy = ((List<object>)pair).Select(v => v is string ? float.Parse((string)v == "nan" ? "NaN" : ((string)v).Replace("inf", "Infinity"), CultureInfo.InvariantCulture) : (float)(double)v).ToArray();
        return new PathPoint(xy[0], xy[1]);
    }

    /// <summary>How got differs from expect: numbers to 1e-6, the rest exactly; for a path, start_snapped and goal_snapped are false unless expected true.</summary>
    static List<string> ConformanceMismatches(Dictionary<string, object> expect, Dictionary<string, object> got)
    {
        var keys = expect.Keys.ToList();
        if (new[] { "found", "partial", "no_path" }.Contains(JsonGet(expect, "status") as string)) keys.AddRange(new[] { "start_snapped", "goal_snapped" }.Where(key => !expect.ContainsKey(key)));
        var wrong = new List<string>();
        foreach (var key in keys)
        {
            object wanted = expect.ContainsKey(key) ? expect[key] : false;
            object value = got.ContainsKey(key) ? got[key] : null;
            if (!SameValue(wanted, value)) wrong.Add(key + ": expected " + Json.Write(wanted) + ", got " + Json.Write(value));
        }
        return wrong;
    }

    static bool SameValue(object wanted, object value)
    {
        if (wanted is double) return value is double && Math.Abs((double)wanted - (double)value) <= 1e-6;
        var items = wanted as List<object>;
        if (items != null)
        {
            var others = value as List<object>;
            return others != null && others.Count == items.Count && items.Zip(others, SameValue).All(same => same);
        }
        return Equals(wanted, value);
    }

    static object JsonGet(Dictionary<string, object> map, string key)
    {
        object value;
        return map.TryGetValue(key, out value) ? value : null;
    }

    /// <summary>PascalCase to the wire's snake_case: AllowPartial -> allow_partial.</summary>
    static string SnakeCase(string name)
    {
        return Regex.Replace(name, "(?<=[a-z])([A-Z])", "_$1").ToLowerInvariant();
    }

    /// <summary>
    /// The options this client exposes and documents, against the server's one definition
    /// (`pathserver options --json`): every PathOptions property that is a wire option must be one
    /// of the server's and every server option a property or one of the methods' parameters
    /// (unit_size, goals, budget); the choices each property's documentation lists must be the
    /// server's; PathOptions.Defaults must hold the server's wire_default, but for Space, the
    /// client's own default (World), which must be one of the server's choices; and, op by op,
    /// the options PathOptions.Requests sends with each request must be the ones the server lists
    /// for it (its "ops"), but update's space (UpdateAsync sends grid cells only).
    /// </summary>
    static async Task OptionsMatchTheServer()
    {
        await Task.Yield();
        var server = ServerOptions();
        var clientSide = new HashSet<string> { "Map", "Timeout", "Extra" };
        var properties = typeof(PathOptions).GetProperties().Where(p => !clientSide.Contains(p.Name)).ToList();
        var names = properties.Select(p => SnakeCase(p.Name)).ToList();
        var unknown = names.Where(name => !server.ContainsKey(name)).ToList();
        Check(unknown.Count == 0, "PathOptions properties the server does not know: " + string.Join(", ", unknown));
        var parameters = new[] { "unit_size", "goals", "budget" };
        var missing = server.Keys.Where(name => !parameters.Contains(name) && !names.Contains(name)).ToList();
        Check(missing.Count == 0, "server options PathOptions lacks: " + string.Join(", ", missing));
        foreach (var name in parameters) Check(server.ContainsKey(name), "the server's options include " + name + " (a parameter here)");
        Equal(string.Join(",", names.OrderBy(n => n)), string.Join(",", PathOptions.Defaults.Keys.OrderBy(n => n)), "PathOptions.Defaults covers every option");

        foreach (var pair in PathOptions.Defaults)
        {
            var option = server[pair.Key];
            var choices = JsonGet(option, "choices") as List<object>;
            if (pair.Key == "space")
            {
                Equal("world", (string)pair.Value, "the client's own default for space");
                Equal(CoordinateSpace.World, new PathOptions().Space, "the Space a new PathOptions holds");
                Check(choices == null || choices.Contains(pair.Value), "space's default is one of the server's choices");
                continue;
            }
            object wanted = JsonGet(option, "wire_default");
            object ours = pair.Value is int || pair.Value is long ? (object)Convert.ToDouble(pair.Value) : pair.Value;
            Check(SameValue(wanted, ours), "PathOptions.Defaults[\"" + pair.Key + "\"] is " + Json.Write(ours) + ", the server's wire_default " + Json.Write(wanted));
        }
        var spaces = ((List<object>)JsonGet(server["space"], "choices") ?? new List<object> { "grid", "world" }).Cast<string>().ToList();
        foreach (CoordinateSpace space in Enum.GetValues(typeof(CoordinateSpace)))
            Check(spaces.Contains(space.ToString().ToLowerInvariant()), "CoordinateSpace." + space + " is one of the server's spaces");

        // The choices each property's summary lists ("los", "corners" or "none") are the server's.
        var source = File.ReadAllText(PackageFile("Runtime", "PathServerClient.Options.cs"));
        var optionsClass = Regex.Match(source, @"public sealed class PathOptions\b(.*?)internal void WriteTo", RegexOptions.Singleline).Groups[1].Value;
        int listed = 0;
        foreach (Match documented in Regex.Matches(optionsClass, @"/// <summary>(.*?)</summary>\s*public \S+ (\w+) \{ get; set; \}", RegexOptions.Singleline))
        {
            string name = SnakeCase(documented.Groups[2].Value);
            var choices = server.ContainsKey(name) ? JsonGet(server[name], "choices") as List<object> : null;
            if (choices == null || (string)server[name]["kind"] != "enum") continue;
            var quoted = Regex.Matches(documented.Groups[1].Value, "\"([a-z_]+)\"").Cast<Match>().Select(m => m.Groups[1].Value).ToList();
            Equal(string.Join(",", choices.Cast<string>().OrderBy(c => c)), string.Join(",", quoted.OrderBy(c => c)), "the choices PathOptions." + documented.Groups[2].Value + " documents");
            listed++;
        }
        Equal(server.Values.Count(o => (string)o["kind"] == "enum"), listed, "enum options whose choices PathOptions documents");

        // Op by op: the options the server takes for each request, and the ones this client sends with it.
        Equal(string.Join(",", server.Keys.OrderBy(n => n)), string.Join(",", PathOptions.Requests.Keys.OrderBy(n => n)), "PathOptions.Requests covers every option");
        var ops = server.Values.SelectMany(o => ((List<object>)o["ops"]).Cast<string>()).Distinct().Where(op => op != "update").OrderBy(op => op).ToList();
        Equal(string.Join(",", ops), string.Join(",", PathOptions.Requests.Values.SelectMany(v => v).Distinct().OrderBy(op => op)), "the requests options go with");
        foreach (var op in ops)
        {
            var theirs = server.Values.Where(o => ((List<object>)o["ops"]).Contains(op)).Select(o => (string)o["name"]).OrderBy(n => n);
            var ours = PathOptions.Requests.Where(pair => pair.Value.Contains(op)).Select(pair => pair.Key).OrderBy(n => n);
            Equal(string.Join(", ", theirs), string.Join(", ", ours), "the options of \"" + op + "\" requests");
        }
        var update = server.Values.Where(o => ((List<object>)o["ops"]).Contains("update")).Select(o => (string)o["name"]).ToList();
        Equal("space", string.Join(",", update), "update's options (UpdateAsync sends grid cells, no space)");
        Console.WriteLine("     | " + names.Count + " options checked against " + _optionsFile);
    }

    // ---------------------------------------------------------------- the Unity package

    // Unity imports every file and folder of a package except hidden ones (".name") and those
    // ending in "~" (Samples~, Tests~), and ignores an asset without a .meta in an immutable
    // (git or registry) package, with a warning: each needs a committed .meta with a fixed GUID.
    static async Task PackageLayout()
    {
        await Task.Yield();
        string root = PackageFile();
        var manifest = (Dictionary<string, object>)Json.Parse(File.ReadAllText(Path.Combine(root, "package.json")));
        string name = JsonGet(manifest, "name") as string;
        Check(name != null && Regex.IsMatch(name, @"^com(\.[a-z0-9][a-z0-9_-]*){2,}$"), "package.json name is a lower-case reverse domain: " + Show(name));
        string version = JsonGet(manifest, "version") as string;
        var pyproject = Regex.Match(File.ReadAllText(Path.Combine(RepositoryDir(), "pyproject.toml")), "^version = \"([^\"]+)\"", RegexOptions.Multiline);
        Check(pyproject.Success, "pyproject.toml has a version");
        Equal(pyproject.Groups[1].Value, version, "package.json version (the server's, pyproject.toml)");
        Check(Regex.IsMatch((JsonGet(manifest, "unity") as string) ?? "", @"^\d{4}\.\d+$"), "package.json unity is YEAR.MINOR");
        Check(!string.IsNullOrEmpty(JsonGet(manifest, "displayName") as string) && !string.IsNullOrEmpty(JsonGet(manifest, "description") as string),
            "package.json has a displayName and a description");
        var samples = (JsonGet(manifest, "samples") as List<object>) ?? new List<object>();
        Check(samples.Count > 0, "package.json lists a sample");
        foreach (Dictionary<string, object> sample in samples)
        {
            string path = (string)JsonGet(sample, "path");
            Check(path.StartsWith("Samples~/") && Directory.Exists(Path.Combine(root, path)), "sample folder " + path + " exists under Samples~/");
            Check(Directory.GetFiles(Path.Combine(root, path), "*.cs").Length > 0, "sample " + path + " has a script");
        }

        var assembly = (Dictionary<string, object>)Json.Parse(File.ReadAllText(Path.Combine(Path.Combine(root, "Runtime"), "PathServer.Client.asmdef")));
        Equal("PathServer.Client", (string)assembly["name"], "asmdef name");
        Equal(true, JsonGet(assembly, "noEngineReferences"), "the asmdef references no engine assembly");
        Equal(0, ((List<object>)assembly["references"]).Count, "asmdef references");
        string friends = File.ReadAllText(Path.Combine(Path.Combine(root, "Runtime"), "AssemblyInfo.cs"));
        Check(friends.Contains("InternalsVisibleTo(\"" + typeof(Tests).Assembly.GetName().Name + "\")"),
            "Runtime/AssemblyInfo.cs names this program's assembly, " + typeof(Tests).Assembly.GetName().Name);

        var guids = new Dictionary<string, string>();
        int assets = 0;
        foreach (string asset in ImportedAssets(root))
        {
            assets++;
            string relative = asset.Substring(root.Length + 1);
            string metaFile = asset + ".meta";
            Check(File.Exists(metaFile), relative + " has no .meta (Unity ignores it in a git package)");
            string meta = File.ReadAllText(metaFile);
            var guid = Regex.Match(meta, "^guid: ([0-9a-f]{32})$", RegexOptions.Multiline);
            Check(meta.StartsWith("fileFormatVersion: 2\n") && guid.Success, relative + ".meta: fileFormatVersion 2 and a guid of 32 hex digits");
            string other;
            Check(!guids.TryGetValue(guid.Groups[1].Value, out other), relative + ".meta has the GUID of " + other + ".meta");
            guids[guid.Groups[1].Value] = relative;
            string importer = Directory.Exists(asset) ? "DefaultImporter" : relative.EndsWith(".cs") ? "MonoImporter"
                : relative.EndsWith(".asmdef") ? "AssemblyDefinitionImporter" : Path.GetFileName(relative) == "package.json" ? "PackageManifestImporter"
                : relative.EndsWith(".md") ? "TextScriptImporter" : "DefaultImporter";
            Check(Regex.IsMatch(meta, "^" + importer + ":$", RegexOptions.Multiline), relative + ".meta has a " + importer);
            Equal(Directory.Exists(asset), meta.Contains("\nfolderAsset: yes\n"), relative + ".meta folderAsset");
        }
        foreach (string metaFile in Directory.GetFiles(root, "*.meta", SearchOption.AllDirectories))
        {
            string asset = metaFile.Substring(0, metaFile.Length - ".meta".Length);
            Check(File.Exists(asset) || Directory.Exists(asset), metaFile.Substring(root.Length + 1) + " belongs to nothing");
        }
        Console.WriteLine("     | " + assets + " files and folders, each with its .meta");
    }

    static IEnumerable<string> ImportedAssets(string dir)
    {
        foreach (string entry in Directory.GetFileSystemEntries(dir).OrderBy(e => e, StringComparer.Ordinal))
        {
            string name = Path.GetFileName(entry);
            if (name.StartsWith(".") || name.EndsWith("~") || name.EndsWith(".meta")) continue;
            yield return entry;
            if (Directory.Exists(entry))
                foreach (string inner in ImportedAssets(entry)) yield return inner;
        }
    }

    // ---------------------------------------------------------------- EmbeddedServer

    static async Task EmbeddedNames()
    {
        await Task.Yield();
        Equal("linux-x86_64", EmbeddedServer.PlatformFolderName("linux", System.Runtime.InteropServices.Architecture.X64), "Linux on x86-64");
        Equal("windows-x86_64", EmbeddedServer.PlatformFolderName("windows", System.Runtime.InteropServices.Architecture.X64), "Windows on x86-64");
        Equal("macos-arm64", EmbeddedServer.PlatformFolderName("macos", System.Runtime.InteropServices.Architecture.Arm64), "macOS on Apple silicon");
        Equal("macos-x86_64", EmbeddedServer.PlatformFolderName("macos", System.Runtime.InteropServices.Architecture.X64), "macOS on Intel");
        Equal("windows-arm64", EmbeddedServer.PlatformFolderName("windows", System.Runtime.InteropServices.Architecture.Arm64), "Windows on ARM");
        Equal(null, EmbeddedServer.PlatformFolderName("linux", System.Runtime.InteropServices.Architecture.X86), "no bundle for 32-bit");
        Equal(null, EmbeddedServer.PlatformFolderName(null, System.Runtime.InteropServices.Architecture.X64), "no bundle for another system");
        if (System.Runtime.InteropServices.RuntimeInformation.IsOSPlatform(System.Runtime.InteropServices.OSPlatform.Linux)
            && System.Runtime.InteropServices.RuntimeInformation.OSArchitecture == System.Runtime.InteropServices.Architecture.X64)
            Equal("linux-x86_64", EmbeddedServer.PlatformFolder, "this machine's platform folder");
        Equal(Path.Combine(Path.Combine("root", "windows-x86_64"), "pathserver-server.exe"), EmbeddedServer.BundleExecutable("root", "windows-x86_64"), "the Windows bundle");
        Equal(Path.Combine(Path.Combine("root", "macos-arm64"), "pathserver-server"), EmbeddedServer.BundleExecutable("root", "macos-arm64"), "the macOS bundle");
        Equal(Path.Combine(Path.Combine("root", EmbeddedServer.PlatformFolder), EmbeddedServer.ExecutableName + (EmbeddedServer.PlatformFolder.StartsWith("windows") ? ".exe" : "")),
            EmbeddedServer.BundleExecutable("root"), "this machine's bundle");
        // CommandLineToArgvW's rules: backslashes are literal unless they precede a quote.
        var quoted = new[]
        {
            new[] { "serve", "serve" }, new[] { "", "\"\"" }, new[] { "a b", "\"a b\"" }, new[] { "say \"hi\"", "\"say \\\"hi\\\"\"" },
            new[] { @"C:\Program Files\Game\", "\"C:\\Program Files\\Game\\\\\"" }, new[] { @"C:\maps", "\"C:\\maps\"" },
            new[] { "o'brien", "\"o'brien\"" }, new[] { "tcp://127.0.0.1:*", "tcp://127.0.0.1:*" },
        };
        foreach (var pair in quoted) Equal(pair[1], EmbeddedServer.QuoteArgument(pair[0]), "argument " + pair[0]);
    }

    static EmbeddedServerOptions EmbeddedOptions(string bundleRoot)
    {
        var options = new EmbeddedServerOptions
        {
            BundleRoot = bundleRoot,
            Python = _python,
            MapsDir = Path.Combine(RepositoryDir(), "maps"),
            // Python finds this checkout's pathserver: -m looks in the working folder.
            WorkingDirectory = RepositoryDir(),
            Log = line => _log.Enqueue(string.Format(CultureInfo.InvariantCulture, "{0,7:0.000} s  server: {1}", _clock.Elapsed.TotalSeconds, line)),
        };
        options.Environment["PYTHONPATH"] = RepositoryDir();
        // Two cores shared with the main server and the tests.
        options.ExtraArguments.Add("--threads");
        options.ExtraArguments.Add("1");
        return options;
    }

    /// <summary>A new empty folder whose name has a space and a quote (arguments must survive them).</summary>
    static string NewFolder(string hint)
    {
        string dir = Path.Combine(Path.GetTempPath(), "pathserver-csharp " + hint + " 'x' " + Guid.NewGuid().ToString("N").Substring(0, 8));
        Directory.CreateDirectory(dir);
        return dir;
    }

    static void RemoveFolder(string dir)
    {
        try { Directory.Delete(dir, true); }
        catch (IOException) { }
        catch (UnauthorizedAccessException) { }
    }

    /// <summary>A stand-in bundle: a shell script at BundleRoot/PLATFORM/pathserver-server with <paramref name="body"/>.</summary>
    static string FakeBundle(string root, string body, bool executable = true)
    {
        string file = EmbeddedServer.BundleExecutable(root);
        Directory.CreateDirectory(Path.GetDirectoryName(file));
        File.WriteAllText(file, "#!/bin/sh\n" + body + "\n");
        if (executable)
        {
            using (var chmod = Process.Start(new ProcessStartInfo("chmod", "+x " + EmbeddedServer.QuoteArgument(file)) { UseShellExecute = false }))
            {
                Check(chmod.WaitForExit(10000) && chmod.ExitCode == 0, "chmod +x " + file);
            }
        }
        return file;
    }

    static bool ProcessAlive(int pid)
    {
        try
        {
            using (var process = Process.GetProcessById(pid)) return !process.HasExited;
        }
        catch (ArgumentException) { return false; }
        catch (InvalidOperationException) { return false; }
    }

    /// <summary>The path on the sample map "example" through an embedded server, compared with the main server's answer.</summary>
    static async Task EmbeddedAnswers(EmbeddedServer server)
    {
        Check(Regex.IsMatch(server.Endpoint, @"^tcp://127\.0\.0\.1:\d+$"), "Endpoint names a loopback port: " + server.Endpoint);
        Check(server.Endpoint != _endpoint, "a port of its own, not the main server's");
        PathResult embedded;
        using (var client = NewClient(server.Endpoint))
            embedded = await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(60.5f, 60.5f), 1, new PathOptions { Map = "example" });
        Equal(PathStatus.Found, embedded.Status, "status on example");
        if (_serverUp)
        {
            using (var client = NewClient())
                SamePath(await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(60.5f, 60.5f), 1, new PathOptions { Map = "example" }),
                    embedded, "the main server's answer");
        }
        Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "     | {0} ready in {1:0} ms on {2}, path of {3} waypoints",
            server.Source, server.StartupTime.TotalMilliseconds, server.Endpoint, embedded.Path.Length));
    }

    static void StoppedByDispose(EmbeddedServer server)
    {
        int port = new Uri(server.Endpoint).Port;
        int pid = server.ProcessId;
        server.Dispose();
        Check(server.HasExited && !ProcessAlive(pid), "the process is gone after Dispose");
        server.Dispose();
        using (var probe = new TcpClient())
        {
            bool refused = false;
            try { probe.Connect(IPAddress.Loopback, port); }
            catch (SocketException) { refused = true; }
            Check(refused, "nothing listens on port " + port + " after Dispose");
        }
    }

    static async Task EmbeddedFallsBackToPython()
    {
        string root = NewFolder("empty root");
        try
        {
            EmbeddedServer server = await EmbeddedServer.StartAsync(EmbeddedOptions(root));
            try
            {
                Equal(EmbeddedServerSource.Python, server.Source, "what runs without a bundle");
                Check(server.CommandLine.Contains(" -m pathserver serve --bind tcp://127.0.0.1:* --maps "), "the command: " + server.CommandLine);
                await EmbeddedAnswers(server);
            }
            finally
            {
                StoppedByDispose(server);
            }
        }
        finally
        {
            RemoveFolder(root);
        }
    }

    static async Task EmbeddedPrefersTheBundle()
    {
        string root = NewFolder("bundles");
        try
        {
            string arguments = Path.Combine(root, "arguments.txt");
            FakeBundle(root, "printf '%s\\n' \"$@\" > " + EmbeddedServer.QuoteArgument(arguments) + "\nexec "
                + EmbeddedServer.QuoteArgument(_python.Contains("/") ? Path.GetFullPath(_python) : _python) + " -m pathserver \"$@\"");
            string maps = Path.Combine(root, "maps for the \"game\"");
            Directory.CreateDirectory(maps);
            File.Copy(Path.Combine(Path.Combine(RepositoryDir(), "maps"), "example.map"), Path.Combine(maps, "example.map"));
            var options = EmbeddedOptions(root);
            options.MapsDir = maps;
            options.Python = "/nonexistent/python3";   // not used: the bundle is there
            EmbeddedServer server = await EmbeddedServer.StartAsync(options);
            try
            {
                Equal(EmbeddedServerSource.Bundle, server.Source, "what runs with a bundle");
                Equal(string.Join("|", new[] { "serve", "--bind", "tcp://127.0.0.1:*", "--maps", maps, "--threads", "1" }),
                    string.Join("|", File.ReadAllLines(arguments)), "the arguments the bundle got");
                await EmbeddedAnswers(server);
            }
            finally
            {
                StoppedByDispose(server);
            }
        }
        finally
        {
            RemoveFolder(root);
        }
    }

    static async Task<string> EmbeddedFailure(EmbeddedServerOptions options, string expected, int withinMs)
    {
        var clock = Stopwatch.StartNew();
        var e = await Throws(() => EmbeddedServer.StartAsync(options), PathServerErrorCodes.EmbeddedServerFailed);
        Check(e.Message.Contains(expected), "the message says \"" + expected + "\": " + e.Message);
        Check(clock.ElapsedMilliseconds < withinMs, "failed within " + withinMs + " ms, took " + clock.ElapsedMilliseconds);
        return e.Message;
    }

    static async Task EmbeddedFailures()
    {
        string root = NewFolder("failures");
        try
        {
            var options = EmbeddedOptions(root);
            options.Mode = EmbeddedServerMode.Bundle;
            await EmbeddedFailure(options, "no bundle for " + EmbeddedServer.PlatformFolder + ": " + EmbeddedServer.BundleExecutable(root) + " does not exist", 1000);

            options = EmbeddedOptions(root);
            options.Mode = EmbeddedServerMode.Python;
            options.Python = "/nonexistent/python3";
            await EmbeddedFailure(options, "could not be run", 5000);

            FakeBundle(root, "echo 'pathserver: loading maps'\necho 'boom: no such map folder' >&2\nexit 3");
            string message = await EmbeddedFailure(EmbeddedOptions(root), "exited with code 3 before it was ready", 5000);
            Check(message.Contains("boom: no such map folder") && message.Contains("pathserver: loading maps"), "the message quotes its output: " + message);
            options = EmbeddedOptions(root);
            options.Mode = EmbeddedServerMode.Python;   // the bundle there is passed over
            options.Python = "/nonexistent/python3";
            await EmbeddedFailure(options, "(/nonexistent/python3 -m pathserver serve --bind", 5000);

            string pidFile = Path.Combine(root, "pid");
            FakeBundle(root, "echo $$ > " + EmbeddedServer.QuoteArgument(pidFile) + "\necho 'pathserver: compiling'\nexec sleep 30");
            options = EmbeddedOptions(root);
            options.StartTimeout = TimeSpan.FromSeconds(1);
            message = await EmbeddedFailure(options, "printed no ready line within 1 s; stopped it", 5000);
            Check(message.Contains("pathserver: compiling"), "the message quotes its output: " + message);
            Check(!ProcessAlive(int.Parse(File.ReadAllText(pidFile).Trim())), "the silent server was stopped");

            File.Delete(pidFile);
            using (var cancel = new CancellationTokenSource(300))
            {
                var clock = Stopwatch.StartNew();
                bool cancelled = false;
                try { await EmbeddedServer.StartAsync(EmbeddedOptions(root), cancel.Token); }
                catch (OperationCanceledException) { cancelled = true; }
                Check(cancelled && clock.ElapsedMilliseconds < 5000, "cancelling gives OperationCanceledException at once");
                await Eventually(() => File.Exists(pidFile) && File.ReadAllText(pidFile).Trim().Length > 0, "the pid file");
                Check(!ProcessAlive(int.Parse(File.ReadAllText(pidFile).Trim())), "the cancelled server was stopped");
            }

            FakeBundle(root, "echo 'pathserver ready on somewhere'\nexec sleep 30");
            await EmbeddedFailure(EmbeddedOptions(root), "printed a ready line without a tcp://HOST:PORT endpoint", 5000);

            // Ready, then gone: the start succeeds, and Log says when it exits.
            FakeBundle(root, "echo 'pathserver ready on tcp://127.0.0.1:9 (0 maps)'\nsleep 1\nexit 4");
            var lines = new System.Collections.Concurrent.ConcurrentQueue<string>();
            options = EmbeddedOptions(root);
            options.Log = lines.Enqueue;
            using (var server = await EmbeddedServer.StartAsync(options))
            {
                Equal("tcp://127.0.0.1:9", server.Endpoint, "the endpoint of the ready line");
                await Eventually(() => server.HasExited && lines.Any(line => line.Contains("exited with code 4")), "a log line saying it exited");
            }

            File.Delete(EmbeddedServer.BundleExecutable(root));
            FakeBundle(root, "exit 0", executable: false);
            await EmbeddedFailure(EmbeddedOptions(root), "`chmod +x` it", 5000);
        }
        finally
        {
            RemoveFolder(root);
        }
    }

    // A bundle from `pathserver bundle OUT_DIR`: OUT_DIR is taken as the platform folder
    // (Platform = its name, BundleRoot = its parent), so that nothing is copied or linked.
    static async Task EmbeddedRealBundle()
    {
        string folder = Path.GetFullPath(_bundle).TrimEnd(Path.DirectorySeparatorChar);
        var options = new EmbeddedServerOptions
        {
            BundleRoot = Path.GetDirectoryName(folder),
            Platform = Path.GetFileName(folder),
            Mode = EmbeddedServerMode.Bundle,
            Log = line => _log.Enqueue(string.Format(CultureInfo.InvariantCulture, "{0,7:0.000} s  bundle: {1}", _clock.Elapsed.TotalSeconds, line)),
        };
        options.ExtraArguments.Add("--threads");
        options.ExtraArguments.Add("1");
        EmbeddedServer server = await EmbeddedServer.StartAsync(options);
        try
        {
            Equal(EmbeddedServerSource.Bundle, server.Source, "what runs");
            await EmbeddedAnswers(server);
        }
        finally
        {
            StoppedByDispose(server);
        }
    }

    /// <summary>
    /// Every PathOptions property set alone, with a valid value, for each request the client
    /// sends: where PathOptions.Requests says it goes with that op, the server answers it (the
    /// traversal sample is refused for naming a tag the map lacks: the field was read); where it
    /// does not go, the client throws ArgumentException before sending anything.
    /// </summary>
    static async Task OptionsPerRequestOnTheWire()
    {
        await RequireServer();
        var samples = OptionSamples;
        var names = typeof(PathOptions).GetProperties().Select(p => SnakeCase(p.Name))
            .Where(name => PathOptions.Defaults.ContainsKey(name) && name != "space").OrderBy(n => n).ToList();
        Equal(string.Join(",", names), string.Join(",", samples.Keys.OrderBy(n => n)), "a sample value for every option property");
        var ops = new[] { "path", "paths", "reachable", "field", "next_steps", "check_block" };
        int sent = 0, refused = 0;
        using (var client = NewClient())
        {
            foreach (var option in samples)
            {
                foreach (var op in ops)
                {
                    var options = new PathOptions { Map = _mapName, Space = CoordinateSpace.Grid };
                    option.Value(options);
                    Func<Task> send = SendFor(client, op, options);
                    if (!PathOptions.Requests[option.Key].Contains(op))
                    {
                        bool threw = false;
                        try { await send(); }
                        catch (ArgumentException) { threw = true; }
                        Check(threw, option.Key + " on " + op + ": ArgumentException before sending");
                        refused++;
                        continue;
                    }
                    try { await send(); }
                    catch (PathServerException e)
                    {
                        // The one refusal expected: the sample rules name a tag this map does not have.
                        Check(option.Key == "traversal" && e.At == "traversal.water", option.Key + " on " + op + ": " + e.Message);
                    }
                    sent++;
                }
            }
        }
        Console.WriteLine("     | " + sent + " option and request pairs sent, " + refused + " refused by the client");
    }

    /// <summary>A valid value for each PathOptions property that is a wire option (but Space), by wire name.</summary>
    static readonly Dictionary<string, Action<PathOptions>> OptionSamples = new Dictionary<string, Action<PathOptions>>
    {
        { "smooth", o => o.Smooth = "los" }, { "allow_partial", o => o.AllowPartial = true }, { "snap", o => o.Snap = true },
        { "max_expansions", o => o.MaxExpansions = 100000 }, { "heuristic", o => o.Heuristic = "octile" }, { "weight", o => o.Weight = 1.5 },
        { "diagonal", o => o.Diagonal = "never" }, { "max_climb", o => o.MaxClimb = 1 }, { "algorithm", o => o.Algorithm = "astar" },
        { "line_of_sight", o => o.LineOfSight = false }, { "max_cost", o => o.MaxCost = 50 }, { "region", o => o.Region = new GridRect(0, 0, 2, 2) },
        { "lookahead", o => o.Lookahead = "los" }, { "avoid", o => o.Avoid = new AvoidSet().AddCell(5, 5) }, { "avoid_cost", o => o.AvoidCost = 2 },
        { "traversal", o => o.Traversal = new TraversalRules { { "water", null } } },
    };

    /// <summary>
    /// PathOptions' option table, row by row, against the server's list: each property set alone
    /// writes one field, named as the server names that option, for each request that takes it,
    /// with a value of the server's kind (a bool, an int, a float, one of the choices, a
    /// rectangle, cells, a traversal); Space writes "space": "world" for World and nothing for
    /// Grid. A row that wrote another property, or under another name, would show here.
    /// </summary>
    static async Task OptionsWriteTheirOwnFields()
    {
        await Task.Yield();
        var server = ServerOptions();
        int written = 0;
        foreach (var sample in OptionSamples)
        {
            string name = sample.Key;
            Check(server.ContainsKey(name), "the server has the option " + name);
            foreach (var op in PathOptions.Requests[name])
            {
                var options = new PathOptions { Space = CoordinateSpace.Grid };
                sample.Value(options);
                var body = new MsgPackMap();
                options.WriteTo(body, op);
                Equal(name, string.Join(",", body.Select(pair => pair.Key)), "the fields PathOptions writes for \"" + op + "\" with only its " + name + " set");
                string why = WireKindProblem(server[name], body[0].Value);
                Check(why == null, name + " is written as the server's " + (string)server[name]["kind"] + ": " + why);
                written++;
            }
        }
        var world = new MsgPackMap();
        new PathOptions().WriteTo(world, "path");
        Equal("space: \"world\"", string.Join(", ", world.Select(pair => pair.Key + ": " + MsgPack.ToDebugString(pair.Value))), "what a new PathOptions writes");
        Check(((List<object>)server["space"]["choices"]).Contains("world"), "world is one of the server's spaces");
        var grid = new MsgPackMap();
        new PathOptions { Space = CoordinateSpace.Grid }.WriteTo(grid, "path");
        Equal(0, grid.Count, "fields a PathOptions with Space Grid and nothing else writes");
        Console.WriteLine("     | " + written + " option and request pairs written, each its own field");
    }

    /// <summary>Why value is not of option's kind (the server's "kind": bool, int, float, enum, rect, cells, traversal); null when it is.</summary>
    static string WireKindProblem(Dictionary<string, object> option, object value)
    {
        string kind = (string)option["kind"];
        switch (kind)
        {
            case "bool": return value is bool ? null : "not a bool: " + Show(value);
            case "int": return value is long ? null : "not an int: " + Show(value);
            case "float": return value is double ? null : "not a float64: " + Show(value);
            case "enum":
                var choices = ((List<object>)option["choices"]).Cast<string>().ToList();
                return value is string && choices.Contains((string)value) ? null : Show(value) + " is not one of " + string.Join(", ", choices);
            case "rect":
                var rect = value as object[];
                return rect != null && rect.Length == 4 && rect.All(v => v is long) ? null : "not [x, y, w, h] ints: " + MsgPack.ToDebugString(value);
            case "cells":
                var cells = value as MsgPackMap;
                return cells != null && cells.Count > 0 && cells.All(pair => pair.Key == "cells" || pair.Key == "rects") ? null
                    : "not a map of cells and rects: " + MsgPack.ToDebugString(value);
            case "traversal":
                return value is string || value is MsgPackMap ? null : "not a unit class or a map of rules: " + MsgPack.ToDebugString(value);
            default: return "a kind this test does not know";
        }
    }

    /// <summary>The server's options by name, from --options (the output of `pathserver options --json`).</summary>
    static Dictionary<string, Dictionary<string, object>> ServerOptions()
    {
        Check(_optionsFile != null && File.Exists(_optionsFile),
            "the server's options are needed (--options: the output of `pathserver options --json`); got " + (_optionsFile ?? "none"));
        var server = new Dictionary<string, Dictionary<string, object>>();
        foreach (Dictionary<string, object> option in (List<object>)((Dictionary<string, object>)Json.Parse(File.ReadAllText(_optionsFile)))["options"])
            server[(string)option["name"]] = option;
        return server;
    }

    static Func<Task> SendFor(PathServerClient client, string op, PathOptions options)
    {
        var goals = new[] { Corner(3) };
        switch (op)
        {
            case "path": return () => client.FindPathAsync(Corner(0), Corner(3), 1, options);
            case "paths": return () => client.FindPathsAsync(new[] { new PathRequest(Corner(0), Corner(3)) }, 1, options);
            case "reachable": return () => client.ReachableAsync(Corner(0), 3, 1, options);
            case "field": return () => client.DistanceFieldAsync(goals, 1, options);
            case "next_steps": return () => client.NextStepsAsync(goals, 1, new float[] { 1, 1 }, options);
            default: return () => client.CheckBlockAsync(new[] { Corner(0), Corner(3) }, new[] { new GridRect(5, 5, 1, 1) }, null, 1, options);
        }
    }

    /// <summary>
    /// Just enough JSON for the test inputs: objects as Dictionary&lt;string, object&gt;, arrays as
    /// List&lt;object&gt;, numbers as double, strings, true, false, null.
    /// </summary>
    static class Json
    {
        public static object Parse(string text)
        {
            int at = 0;
            var value = Read(text, ref at);
            SkipSpace(text, ref at);
            if (at != text.Length) throw new FormatException("JSON: text after the value at " + at);
            return value;
        }

        static void SkipSpace(string text, ref int at)
        {
            while (at < text.Length && char.IsWhiteSpace(text[at])) at++;
        }

        static object Read(string text, ref int at)
        {
            SkipSpace(text, ref at);
            if (at >= text.Length) throw new FormatException("JSON: unexpected end");
            char c = text[at];
            if (c == '{')
            {
                var map = new Dictionary<string, object>();
                at++;
                SkipSpace(text, ref at);
                if (text[at] == '}') { at++; return map; }
                while (true)
                {
                    SkipSpace(text, ref at);
                    var key = (string)Read(text, ref at);
                    SkipSpace(text, ref at);
                    Expect(text, ref at, ':');
                    map[key] = Read(text, ref at);
                    SkipSpace(text, ref at);
                    if (text[at] == '}') { at++; return map; }
                    Expect(text, ref at, ',');
                }
            }
            if (c == '[')
            {
                var list = new List<object>();
                at++;
                SkipSpace(text, ref at);
                if (text[at] == ']') { at++; return list; }
                while (true)
                {
                    list.Add(Read(text, ref at));
                    SkipSpace(text, ref at);
                    if (text[at] == ']') { at++; return list; }
                    Expect(text, ref at, ',');
                }
            }
            if (c == '"')
            {
                var value = new StringBuilder();
                at++;
                while (text[at] != '"')
                {
                    if (text[at] == '\\')
                    {
                        char escaped = text[++at];
                        if (escaped == 'u') { value.Append((char)int.Parse(text.Substring(at + 1, 4), NumberStyles.HexNumber)); at += 4; }
                        else value.Append(escaped == 'n' ? '\n' : escaped == 't' ? '\t' : escaped == 'r' ? '\r' : escaped == 'b' ? '\b' : escaped == 'f' ? '\f' : escaped);
                    }
                    else value.Append(text[at]);
                    at++;
                }
                at++;
                return value.ToString();
            }
            foreach (var literal in new[] { "true", "false", "null" })
            {
                if (string.CompareOrdinal(text, at, literal, 0, literal.Length) == 0)
                {
                    at += literal.Length;
                    return literal == "null" ? null : (object)(literal == "true");
                }
            }
            int start = at;
            while (at < text.Length && "+-0123456789.eE".IndexOf(text[at]) >= 0) at++;
            if (start == at) throw new FormatException("JSON: unexpected '" + c + "' at " + at);
            return double.Parse(text.Substring(start, at - start), NumberStyles.Float, CultureInfo.InvariantCulture);
        }

        static void Expect(string text, ref int at, char wanted)
        {
            if (at >= text.Length || text[at] != wanted) throw new FormatException("JSON: expected '" + wanted + "' at " + at);
            at++;
        }

        /// <summary>Compact JSON for messages.</summary>
        public static string Write(object value)
        {
            if (value == null) return "null";
            if (value is bool) return (bool)value ? "true" : "false";
            if (value is string) return "\"" + value + "\"";
            if (value is double) return ((double)value).ToString("R", CultureInfo.InvariantCulture);
            var list = value as List<object>;
            if (list != null) return "[" + string.Join(", ", list.Select(Write)) + "]";
            return Convert.ToString(value, CultureInfo.InvariantCulture);
        }
    }

    static int FreePort()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return port;
    }

    /// <summary>
    /// A TCP proxy in front of the real server, to stage what a client meets in the field: a
    /// server that goes away and comes back on the same port (Stop/Start), connections cut
    /// (KillConnections), a server that stops answering (DropReplies).
    /// </summary>
    sealed class FlakyProxy : IDisposable
    {
        readonly string _targetHost;
        readonly int _targetPort;
        readonly List<TcpClient> _connections = new List<TcpClient>();
        TcpListener _listener;
        public readonly int Port = FreePort();
        public volatile bool DropReplies;
        long _bytesToServer;
        long _bytesDropped;

        public FlakyProxy(string target)
        {
            var match = Regex.Match(target, @"^tcp://\[?([^\]]+)\]?:(\d+)$");
            if (!match.Success) throw new ArgumentException("endpoint " + target);
            _targetHost = match.Groups[1].Value;
            _targetPort = int.Parse(match.Groups[2].Value, CultureInfo.InvariantCulture);
        }

        public string Endpoint { get { return "tcp://127.0.0.1:" + Port; } }
        public long BytesToServer { get { return Interlocked.Read(ref _bytesToServer); } }
        public long BytesDropped { get { return Interlocked.Read(ref _bytesDropped); } }

        public void Start()
        {
            var listener = new TcpListener(IPAddress.Loopback, Port);
            listener.Server.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
            listener.Start();
            _listener = listener;
            new Thread(() => AcceptLoop(listener)) { IsBackground = true }.Start();
        }

        public void Stop()
        {
            var listener = _listener;
            _listener = null;
            if (listener != null) listener.Stop();
            KillConnections();
        }

        public void KillConnections()
        {
            lock (_connections)
            {
                foreach (var connection in _connections)
                {
                    try
                    {
                        connection.Client.Shutdown(SocketShutdown.Both);
                    }
                    catch (Exception)
                    {
                        // Already gone.
                    }
                    connection.Close();
                }
                _connections.Clear();
            }
        }

        void AcceptLoop(TcpListener listener)
        {
            while (true)
            {
                TcpClient client;
                try
                {
                    client = listener.AcceptTcpClient();
                }
                catch (Exception)
                {
                    return;  // stopped
                }
                var server = new TcpClient();
                try
                {
                    server.Connect(_targetHost, _targetPort);
                }
                catch (Exception)
                {
                    client.Close();
                    continue;
                }
                client.NoDelay = true;
                server.NoDelay = true;
                lock (_connections)
                {
                    _connections.Add(client);
                    _connections.Add(server);
                }
                new Thread(() => Pump(client, server, false)) { IsBackground = true }.Start();
                new Thread(() => Pump(server, client, true)) { IsBackground = true }.Start();
            }
        }

        void Pump(TcpClient from, TcpClient to, bool replies)
        {
            var buffer = new byte[65536];
            try
            {
                var input = from.GetStream();
                var output = to.GetStream();
                while (true)
                {
                    int n = input.Read(buffer, 0, buffer.Length);
                    if (n <= 0) break;
                    if (replies && DropReplies)
                    {
                        Interlocked.Add(ref _bytesDropped, n);
                        continue;
                    }
                    if (!replies) Interlocked.Add(ref _bytesToServer, n);
                    output.Write(buffer, 0, n);
                }
            }
            catch (Exception)
            {
                // Either side closed.
            }
            from.Close();
            to.Close();
        }

        public void Dispose()
        {
            Stop();
        }
    }
}
