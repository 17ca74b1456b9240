// Tests.cs: the C# client's test program, run against a real `pathserver serve`: its arguments,
// the list of tests and the harness. The tests are in the other Tests.*.cs files, one topic each
// (Bytes, Hexes, Floors, Server, Queries, Connection, Conformance, Options, Package), one partial class Tests.
//
//     mcs -target:library -out:PathServer.Client.dll Runtime/*.cs      (the package's assembly)
//     mcs -out:PathServer.Client.Tests.exe -r:PathServer.Client.dll 'Tests~'/Tests*.cs
//     mono PathServer.Client.Tests.exe tcp://127.0.0.1:5555 [--protocol-doc docs/protocol.md]
//         [--map NAME] [--conformance engine_clients/conformance.json]
//         [--silent-endpoint tcp://HOST:PORT] [--options OPTIONS.json] [--package DIR]
//         [--python PYTHON] [--bundle DIR] [--hex-golden tests/data/hex_godot.json]
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
using System.Linq;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
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
    static string _hexGolden;
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
                + " [--silent-endpoint tcp://HOST:PORT] [--options PATH] [--package DIR] [--python PYTHON] [--bundle DIR] [--hex-golden PATH]"
                + " [--only TEXT] [--verbose]");
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
            else if (args[i] == "--hex-golden" && i + 1 < args.Length) _hexGolden = args[++i];
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
        Run("hexes: PathServerHexes gives Godot's centres, cells of points and neighbours (tests/data/hex_godot.json)", HexesMatchGodot);
        Run("hexes: axial round trips, symmetric neighbours, distance = breadth-first distance", HexHelpers);
        Run("hexes: PutMapAsync's hex goes out as shape, layout and cell_size [w, h]", HexPutMapEncoding);
        Run("floors: points, rectangles and links with floors on the wire; put_map's floors and links, update's links, bins of triples", FloorsEncoding);
        Run("floors: replies with floors read back (points, a path's links, packed triples, reachable, field, get_map)", FloorsDecoding);

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
        const string hexMaps = "server: hex maps in every layout: uploaded, read back, a path of tile centres around a wall";
        if (_only == null || hexMaps.Contains(_only))
        {
            // Until the server takes hex maps: a skip line with its refusal, not a failure.
            string refusal = _serverUp ? HexRefusal() : null;
            if (refusal == null)
                Run(hexMaps, HexUploadAndPath);
            else
                Console.WriteLine("skip " + hexMaps + " (the server refuses hex maps: " + refusal + ")");
        }
        const string floorMaps = "server: floors and links";
        if (_only == null || floorMaps.Contains(_only) || _only.StartsWith(floorMaps))
        {
            // Until the server takes floors: a skip line with its refusal, not a failure.
            string refusal = _serverUp ? FloorsRefusal() : null;
            if (refusal == null)
            {
                Run(floorMaps + ": paths up a ladder and down a one-way drop, their links (plain, packed, batched, world)", FloorsPaths);
                Run(floorMaps + ": get_map and maps give the floors, both floors' cells and the links", FloorsReadBack);
                Run(floorMaps + ": reachable and field across floors", FloorsReachableAndField);
                Run(floorMaps + ": goals on other floors, alone and in a batch", FloorsGoals);
                Run(floorMaps + ": next_steps with points on floors (a bin of triples)", FloorsNextSteps);
                Run(floorMaps + ": check_block with points and rectangles on floors, a link joining two points", FloorsCheckBlock);
                Run(floorMaps + ": avoid on a link's end and traversal on its tag bar it", FloorsAvoidAndTraversal);
                Run(floorMaps + ": update replaces the links (alone, with a cell edit) and the answers change", FloorsUpdateLinks);
                Run(floorMaps + ": bad floors and links refused with their code and field", FloorsRefusals);
                Run("readme: the floors example prints what README.md shows", ReadmeFloorsExample);
            }
            else
                Console.WriteLine("skip " + floorMaps + " and the README's floors example (the server refuses floors: " + refusal + ")");
        }
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

    /// <summary>action throws a T, or (a task's Wait) an AggregateException around one.</summary>
    static bool Throws<T>(Action action) where T : Exception
    {
        try
        {
            action();
        }
        catch (T)
        {
            return true;
        }
        catch (AggregateException e)
        {
            return e.InnerException is T;
        }
        return false;
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
}
