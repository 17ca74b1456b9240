// PathServerClient.cs: a one-file C# client for pathserver (wire protocol: docs/protocol.md).
//
// Drop this file into a Unity project (Assets/) or a Godot 4 .NET project. It uses the base class
// library only (System.Net.Sockets, System.Threading.Tasks): no NuGet packages, no native plugins.
// It speaks ZeroMQ's wire protocol (ZMTP 3.x, NULL mechanism, as a DEALER socket) over a TcpClient
// and a msgpack subset (nil, bool, int, float32/64, str, bin, array, map; ext is decoded opaquely).
//
//     using PathServer;
//     var client = new PathServerClient("tcp://127.0.0.1:5555") { DefaultMap = "example" };
//     PathResult result = await client.FindPathAsync(new PathPoint(1, 1), new PathPoint(30, 12), 2);
//     foreach (PathPoint p in result.Path) { ... }
//
// The file, in order (each part is a #region):
//   1. Values: PathPoint, UnitSize, GridRect, CoordinateSpace, PathStatus, PathOptions,
//      PathRequest, PathResult, PackedPaths, PackedStatus, MapInfo, MapData: what goes into a
//      request and comes out of a reply. Uploaded maps: PutMapAsync, GetMapAsync (MapData), DropMapAsync, UpdateAsync's ifGen.
//   1b. Values of the queries beyond one path: AvoidSet, TraversalRules, Traversal, IndexPair,
//      ReachableResult, DistanceField, NextStepsResult, CheckBlockResult (FindPathToAnyAsync,
//      ReachableAsync, DistanceFieldAsync, NextStepsAsync, CheckBlockAsync: the client's region
//      "Queries beyond one path").
//   2. Errors: PathServerErrorCodes and PathServerException.
//   3. Events: the EventArgs of PathFound, PathFailed and ConnectionChanged.
//   4. PathServerClient: its public API; packed answers and the synchronous calls (FindPath,
//      FindPathsPacked: they block up to the timeout and return a result that says why it
//      failed); the main-thread event queue; requests (ids, timeouts, replies); the connection
//      (reader and writer threads, handshake, heartbeats, reconnects).
//   5. Zmtp (internal): ZMTP 3.x framing with the NULL mechanism.
//   6. MsgPack (internal): the msgpack encoder and decoder.
//
// Results, not errors: a path query that finds no path completes with Status NoPath and an
// empty Path (like Godot's AStarGrid2D), as "found" and "partial" do. Every failure of a request
// is a PathServerException whose Code is a wire error code (PathServerErrorCodes:
// "unknown_map", "out_of_bounds", ...) or one of the client's own: "timeout", "disconnected",
// "bad_reply". Cancelling through a CancellationToken gives an OperationCanceledException.
//
// Threads: one background thread connects, reads and reconnects; one writes and sends heartbeats.
// Tasks complete on those threads with asynchronous continuations, so `await` resumes on the
// caller's SynchronizationContext (Unity's and Godot's main thread). The PathFound /
// PathFailed / ConnectionChanged events are queued and raised by DrainMainThreadQueue(), called
// once a frame (set DispatchEventsOnMainThread = false to raise them on the background thread
// instead). The queue holds at most EventQueueCapacity items: when it is full the oldest one is
// dropped and counted in DroppedEventCount; awaited tasks never go through it.
//
// Converting vectors (this file references no engine assembly):
//     Unity:  new PathPoint(v.x, v.y)      and back: new Vector2(p.X, p.Y)
//     Godot:  new PathPoint(v.X, v.Y)      and back: new Vector2(p.X, p.Y)

using System;
using System.Collections;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace PathServer
{
    #region Values

    /// <summary>A 2D point (x, y): world units by default, cells when PathOptions.Space is Grid.</summary>
    public struct PathPoint : IEquatable<PathPoint>
    {
        public float X { get; }
        public float Y { get; }

        public PathPoint(float x, float y)
        {
            X = x;
            Y = y;
        }

        public bool Equals(PathPoint other) { return X.Equals(other.X) && Y.Equals(other.Y); }
        public override bool Equals(object obj) { return obj is PathPoint && Equals((PathPoint)obj); }
        public override int GetHashCode() { return X.GetHashCode() * 397 ^ Y.GetHashCode(); }
        public static bool operator ==(PathPoint a, PathPoint b) { return a.Equals(b); }
        public static bool operator !=(PathPoint a, PathPoint b) { return !a.Equals(b); }

        public override string ToString()
        {
            return string.Format(CultureInfo.InvariantCulture, "({0}, {1})", X, Y);
        }
    }

    /// <summary>A unit's footprint in cells: Width x Height. An int converts to a square footprint.</summary>
    public struct UnitSize : IEquatable<UnitSize>
    {
        public int Width { get; }
        public int Height { get; }

        public UnitSize(int width, int height)
        {
            Width = width;
            Height = height;
        }

        public static UnitSize One { get { return new UnitSize(1, 1); } }

        public static implicit operator UnitSize(int size) { return new UnitSize(size, size); }

        public bool Equals(UnitSize other) { return Width == other.Width && Height == other.Height; }
        public override bool Equals(object obj) { return obj is UnitSize && Equals((UnitSize)obj); }
        public override int GetHashCode() { return Width * 397 ^ Height; }
        public override string ToString() { return Width + "x" + Height; }

        // The wire takes an int for a square footprint and [w, h] otherwise.
        internal object ToWire()
        {
            if (Width == Height) return (long)Width;
            return new object[] { (long)Width, (long)Height };
        }
    }

    /// <summary>
    /// A rectangle of cells, X, Y its top-left cell: UpdateAsync's, GetMapAsync's,
    /// PathOptions.Region's and AvoidSet's (grid cells); CheckBlockAsync's (in the request's Space).
    /// </summary>
    public struct GridRect
    {
        public int X { get; }
        public int Y { get; }
        public int Width { get; }
        public int Height { get; }

        public GridRect(int x, int y, int width, int height)
        {
            X = x;
            Y = y;
            Width = width;
            Height = height;
        }
    }

    public enum CoordinateSpace
    {
        /// <summary>World units, using the map's origin and cell size (the client's default).</summary>
        World,
        /// <summary>Cell coordinates (the wire's default).</summary>
        Grid,
    }

    public enum PathStatus
    {
        Found,
        /// <summary>The goal was not reached; Path leads to the closest point (AllowPartial).</summary>
        Partial,
        /// <summary>No path exists; Path is empty. A result, not an error.</summary>
        NoPath,
        /// <summary>Only in batches: this item failed, see PathResult.Error.</summary>
        Failed,
        /// <summary>A status this client does not know yet; see PathResult.StatusText.</summary>
        Unknown,
    }

    /// <summary>
    /// Optional settings of a request (a path, a batch or one of the queries beyond one path).
    /// Null members are left out of the request, so the server's defaults apply (Defaults lists
    /// them); Space goes out as "world" unless set to Grid (the wire's default). Requests says
    /// which requests take each option; one set for a request that does not take it throws
    /// ArgumentException before anything is sent.
    /// </summary>
    public sealed class PathOptions
    {
        /// <summary>
        /// What a request gets for each option left null, by wire name: the client's own default
        /// for "space" (game positions are world coordinates; the server's default is "grid"), the
        /// server's for the others (null: no limit, or the server chooses). Tests.cs checks every
        /// name and value against the server's one definition, `pathserver options --json`.
        /// </summary>
        public static readonly IReadOnlyDictionary<string, object> Defaults = new Dictionary<string, object>
        {
            { "space", "world" },
            { "smooth", "los" },
            { "diagonal", "no_corner_cutting" },
            { "snap", true },
            { "allow_partial", false },
            { "max_expansions", null },
            { "heuristic", null },
            { "weight", 1.0 },
            { "max_climb", null },
            { "algorithm", "auto" },
            { "line_of_sight", true },
            { "max_cost", null },
            { "region", null },
            { "lookahead", "cell" },
            { "avoid", null },
            { "avoid_cost", null },
            { "traversal", null },
        };

        static readonly IReadOnlyList<string> PathOps = Array.AsReadOnly(new[] { "path", "paths" });
        static readonly IReadOnlyList<string> SearchOps = Array.AsReadOnly(new[] { "path", "paths", "reachable", "field", "next_steps" });
        static readonly IReadOnlyList<string> EveryOp = Array.AsReadOnly(new[] { "path", "paths", "reachable", "field", "next_steps", "check_block" });

        /// <summary>
        /// The requests (wire ops) each option goes with, by wire name, as this client sends them:
        /// the PathOptions properties, and the options the methods take as parameters ("unit_size":
        /// unitSize; "goals": FindPathToAnyAsync's, DistanceFieldAsync's and NextStepsAsync's goals,
        /// a PathRequest's Goals; "budget": ReachableAsync's budget). A property set for a request
        /// that does not take it throws ArgumentException before anything is sent. Tests.cs checks
        /// this table, op by op, against the server's (`pathserver options --json`, each option's
        /// "ops"); "update" takes "space" there, and UpdateAsync sends grid cells (GridRect) only.
        /// </summary>
        public static readonly IReadOnlyDictionary<string, IReadOnlyList<string>> Requests = new Dictionary<string, IReadOnlyList<string>>
        {
            { "unit_size", EveryOp },
            { "space", EveryOp },
            { "smooth", PathOps },
            { "allow_partial", PathOps },
            { "snap", EveryOp },
            { "max_expansions", PathOps },
            { "heuristic", PathOps },
            { "weight", PathOps },
            { "diagonal", EveryOp },
            { "max_climb", SearchOps },
            { "algorithm", PathOps },
            { "line_of_sight", PathOps },
            { "goals", Array.AsReadOnly(new[] { "path", "paths", "field", "next_steps" }) },
            { "budget", Array.AsReadOnly(new[] { "reachable" }) },
            { "max_cost", Array.AsReadOnly(new[] { "field", "next_steps" }) },
            { "region", Array.AsReadOnly(new[] { "field" }) },
            { "lookahead", Array.AsReadOnly(new[] { "next_steps" }) },
            { "avoid", SearchOps },
            { "avoid_cost", SearchOps },
            { "traversal", EveryOp },
        };

        /// <summary>Map name; null means the client's DefaultMap. Not a wire option.</summary>
        public string Map { get; set; }
        /// <summary>Units of the points sent and returned: World (this client's default) or Grid.</summary>
        public CoordinateSpace Space { get; set; } = CoordinateSpace.World;
        /// <summary>"los", "corners" or "none".</summary>
        public string Smooth { get; set; }
        /// <summary>An unreachable goal gives the path to the reachable cell nearest it (Status Partial).</summary>
        public bool? AllowPartial { get; set; }
        /// <summary>A blocked start or goal moves to the nearest cell the unit fits.</summary>
        public bool? Snap { get; set; }
        /// <summary>Node budget, at least 1; reaching it is "search_limit" unless AllowPartial.</summary>
        public int? MaxExpansions { get; set; }
        /// <summary>"octile", "euclidean", "manhattan" or "chebyshev".</summary>
        public string Heuristic { get; set; }
        /// <summary>Weighted A*: at least 1; above 1 trades optimality for speed.</summary>
        public double? Weight { get; set; }
        /// <summary>"no_corner_cutting", "never" or "always".</summary>
        public string Diagonal { get; set; }
        /// <summary>With a height layer, steeper steps are blocked; at least 0.</summary>
        public double? MaxClimb { get; set; }
        /// <summary>"auto", "astar" or "jps".</summary>
        public string Algorithm { get; set; }
        /// <summary>Take a clear straight line without searching.</summary>
        public bool? LineOfSight { get; set; }
        /// <summary>DistanceFieldAsync and NextStepsAsync: cells dearer than this to a goal stay +inf (it bounds the work); at least 0.</summary>
        public double? MaxCost { get; set; }
        /// <summary>DistanceFieldAsync: the window of grid cells returned (inside the map); the whole map when null.</summary>
        public GridRect? Region { get; set; }
        /// <summary>NextStepsAsync: "cell" (the neighbouring cell downhill) or "los" (the farthest turn of the descent the footprint sees clearly).</summary>
        public string Lookahead { get; set; }
        /// <summary>Grid cells this request treats as solid (other units standing still); the map is untouched. Not for CheckBlockAsync.</summary>
        public AvoidSet Avoid { get; set; }
        /// <summary>Avoid's cells are not blocked but cost at least this to enter; at least 1.</summary>
        public double? AvoidCost { get; set; }
        /// <summary>A unit class of the map (a string converts: Traversal = "boat") or TraversalRules for its tagged cells.</summary>
        public Traversal Traversal { get; set; }
        /// <summary>Per-request timeout; null means the client's RequestTimeout. Not a wire option.</summary>
        public TimeSpan? Timeout { get; set; }
        /// <summary>Extra request fields sent as they are, for options newer than this client.</summary>
        public IDictionary<string, object> Extra { get; set; }

        // Writes the options set, for request op. "space" is left out when Grid, the wire's default
        // (so the requests of docs/protocol.md's golden vectors come out byte for byte).
        internal void WriteTo(MsgPackMap body, string op)
        {
            if (Space == CoordinateSpace.World) body.Add("space", "world");
            Put(body, op, "smooth", Smooth);
            Put(body, op, "allow_partial", AllowPartial);
            Put(body, op, "snap", Snap);
            Put(body, op, "max_expansions", MaxExpansions.HasValue ? (object)(long)MaxExpansions.Value : null);
            Put(body, op, "heuristic", Heuristic);
            Put(body, op, "diagonal", Diagonal);
            Put(body, op, "max_climb", MaxClimb);
            Put(body, op, "algorithm", Algorithm);
            Put(body, op, "weight", Weight);
            Put(body, op, "line_of_sight", LineOfSight);
            Put(body, op, "max_cost", MaxCost);
            Put(body, op, "region", Region.HasValue ? PathServerClient.RectToWire(Region.Value) : null);
            Put(body, op, "lookahead", Lookahead);
            Put(body, op, "avoid", Avoid != null ? Avoid.ToWire() : null);
            Put(body, op, "avoid_cost", AvoidCost);
            Put(body, op, "traversal", Traversal != null ? Traversal.ToWire() : null);
            if (Extra != null)
            {
                foreach (var pair in Extra) body.Add(pair.Key, pair.Value);
            }
        }

        static void Put(MsgPackMap body, string op, string name, object value)
        {
            if (value == null) return;
            var ops = Requests[name];
            bool taken = false;
            for (int i = 0; i < ops.Count && !taken; i++) taken = ops[i] == op;
            if (!taken)
                throw new ArgumentException("PathOptions' \"" + name + "\" is not an option of \"" + op + "\" requests; it goes with "
                    + string.Join(", ", Requests[name]) + ".", "options");
            body.Add(name, value);
        }
    }

    /// <summary>One request of a FindPathsAsync batch: to Goal, or to the cheapest of Goals.</summary>
    public struct PathRequest
    {
        public PathPoint Start { get; }
        public PathPoint Goal { get; }
        /// <summary>Null, or the goals of which the cheapest reachable one wins (Goal is then unused).</summary>
        public IList<PathPoint> Goals { get; }

        public PathRequest(PathPoint start, PathPoint goal)
        {
            Start = start;
            Goal = goal;
            Goals = null;
        }

        public PathRequest(PathPoint start, IList<PathPoint> goals)
        {
            if (goals == null) throw new ArgumentNullException("goals");
            Start = start;
            Goal = default(PathPoint);
            Goals = goals;
        }
    }

    /// <summary>
    /// The answer to a path query: Status Found, Partial or NoPath (Path empty: the goal cannot be
    /// reached, an answer rather than an error); Failed only for a batch entry, with Error set.
    /// </summary>
    public sealed class PathResult
    {
        /// <summary>The request id (for batches, the id of the whole batch; see Index).</summary>
        public long Id { get; internal set; }
        /// <summary>Position in the batch; 0 for single requests.</summary>
        public int Index { get; internal set; }
        public PathStatus Status { get; internal set; }
        /// <summary>The status as the server wrote it: "found", "partial", "no_path".</summary>
        public string StatusText { get; internal set; }
        /// <summary>Start and goal included, in the requested space; empty for NoPath.</summary>
        public PathPoint[] Path { get; internal set; } = new PathPoint[0];
        /// <summary>Move costs (straight 1, diagonal sqrt 2, times terrain); 0 for NoPath.</summary>
        public double Cost { get; internal set; }
        /// <summary>Geometric length of Path, in the requested space's units.</summary>
        public double Length { get; internal set; }
        /// <summary>Nodes the search expanded.</summary>
        public long Expanded { get; internal set; }
        /// <summary>Start after snapping, in the requested space.</summary>
        public PathPoint Start { get; internal set; }
        /// <summary>Goal after snapping, in the requested space.</summary>
        public PathPoint Goal { get; internal set; }
        /// <summary>The server moved the start to the nearest cell the unit fits (Snap).</summary>
        public bool StartSnapped { get; internal set; }
        /// <summary>The server moved the goal to the nearest cell the unit fits (Snap).</summary>
        public bool GoalSnapped { get; internal set; }
        /// <summary>The map generation the answer was computed on.</summary>
        public long Gen { get; internal set; }
        /// <summary>A request with goals (FindPathToAnyAsync): the index of the goal reached; null when none is, or without goals.</summary>
        public int? GoalIndex { get; internal set; }
        /// <summary>Null, except for a failed item of a batch.</summary>
        public PathServerException Error { get; internal set; }
        /// <summary>The decoded reply, for fields newer than this client.</summary>
        public IDictionary<string, object> Raw { get; internal set; }
        /// <summary>Set by RequestPath's state argument.</summary>
        public object State { get; internal set; }

        public bool HasPath { get { return Error == null && Path.Length > 0; } }
    }

    /// <summary>
    /// A batch's packed answer (FindPathsPackedAsync, FindPathsPacked): one array an item, and
    /// every entry's points in one PathPoint array, filled straight from the reply's bins (no
    /// allocation per point or per entry). Entry i's points are Points[Offsets[i]] to
    /// Points[Offsets[i + 1] - 1] (PathOf(i)); Status Failed entries have their error in Errors.
    /// From the synchronous FindPathsPacked, a failure of the whole batch is Error, with Count 0.
    /// </summary>
    public sealed class PackedPaths
    {
        /// <summary>The request id.</summary>
        public long Id { get; internal set; }
        /// <summary>The map generation every answer was computed on.</summary>
        public long Gen { get; internal set; }
        /// <summary>Found, Partial, NoPath or Failed (the wire's status byte, see PackedStatus), one an entry.</summary>
        public PathStatus[] Status { get; internal set; } = new PathStatus[0];
        /// <summary>Each entry's path cost (float32 on the wire); 0 without a path.</summary>
        public float[] Costs { get; internal set; } = new float[0];
        /// <summary>The points of each entry's path, start and goal included.</summary>
        public int[] Counts { get; internal set; } = new int[0];
        /// <summary>Count + 1 items: where each entry's points start in Points, then the total.</summary>
        public int[] Offsets { get; internal set; } = new int[1];
        /// <summary>Every entry's points, in the requested space, one entry after the other.</summary>
        public PathPoint[] Points { get; internal set; } = new PathPoint[0];
        /// <summary>The errors of the entries that failed (Status Failed), by entry index.</summary>
        public IDictionary<int, PathServerException> Errors { get; internal set; } = new Dictionary<int, PathServerException>();
        /// <summary>Null, unless the whole batch failed (the synchronous FindPathsPacked only).</summary>
        public PathServerException Error { get; internal set; }
        /// <summary>The decoded reply, for fields newer than this client.</summary>
        public IDictionary<string, object> Raw { get; internal set; }

        public int Count { get { return Status.Length; } }

        /// <summary>Entry index's points, a view of Points (no copy).</summary>
        public ArraySegment<PathPoint> PathOf(int index)
        {
            return new ArraySegment<PathPoint>(Points, Offsets[index], Counts[index]);
        }

        /// <summary>Copies entry index's points into destination from offset; returns how many (destination must hold them).</summary>
        public int CopyPath(int index, PathPoint[] destination, int offset = 0)
        {
            Array.Copy(Points, Offsets[index], destination, offset, Counts[index]);
            return Counts[index];
        }
    }

    /// <summary>The status byte of a packed answer (docs/protocol.md, "Packed answers").</summary>
    public static class PackedStatus
    {
        public const byte Found = 0;
        public const byte Partial = 1;
        public const byte NoPath = 2;
        public const byte Error = 3;
    }

    /// <summary>One served map, from MapsAsync.</summary>
    public sealed class MapInfo
    {
        public string Name { get; internal set; }
        public int Width { get; internal set; }
        public int Height { get; internal set; }
        public double CellSize { get; internal set; }
        public PathPoint Origin { get; internal set; }
        public long Gen { get; internal set; }
        /// <summary>The last reload error, or null when the last reload succeeded.</summary>
        public string LastError { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }

        public override string ToString()
        {
            return string.Format(CultureInfo.InvariantCulture, "{0} {1}x{2} cell {3} gen {4}", Name, Width, Height, CellSize, Gen);
        }
    }

    /// <summary>
    /// A map's cells as GetMapAsync returns them: Cells covers Region, row-major from its top-left
    /// (index y * Region.Width + x): 0 blocked, else the terrain cost rounded to 1..255. Costs
    /// (the exact costs, 0 on blocked cells) when the map has a cost that is not a whole number
    /// from 1 to 255, Heights when it has a height layer, Tags when it has tags; null otherwise.
    /// Width and Height are the whole map's.
    /// </summary>
    public sealed class MapData
    {
        public string Name { get; internal set; }
        public long Gen { get; internal set; }
        public int Width { get; internal set; }
        public int Height { get; internal set; }
        public PathPoint Origin { get; internal set; }
        public double CellSize { get; internal set; }
        public GridRect Region { get; internal set; }
        public byte[] Cells { get; internal set; }
        public float[] Costs { get; internal set; }
        public float[] Heights { get; internal set; }
        public byte[] Tags { get; internal set; }
        /// <summary>The names of the tag values (put_map's tagNames); null when the map names none.</summary>
        public IDictionary<string, int> TagNames { get; internal set; }
        /// <summary>The map's unit classes (put_map's classes); null when it has none.</summary>
        public IDictionary<string, TraversalRules> Classes { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }

        /// <summary>The cell at (x, y) of the region (region coordinates).</summary>
        public byte this[int x, int y] { get { return Cells[y * Region.Width + x]; } }
    }

    #endregion

    #region Values of the queries beyond one path

    /// <summary>
    /// Grid cells one request treats as solid (PathOptions.Avoid): other units standing still, say.
    /// The shared map is untouched. One set can serve frame after frame (Clear, then Add...).
    /// AddCell takes one cell, AddCells every x, y pair of an array the game already keeps for
    /// its units; the cells go out as one msgpack bin of little-endian int32 x, y pairs (8 bytes
    /// a cell, docs/protocol.md's compact form), the rectangles as [x, y, w, h] arrays.
    /// The server takes at most 65 536 cells and rectangles together.
    /// </summary>
    public sealed class AvoidSet
    {
        // x, y of each cell in turn, as the wire's bin orders them, so ToWire is one pass.
        readonly List<int> _cells = new List<int>();
        readonly List<GridRect> _rects = new List<GridRect>();

        public int CellCount { get { return _cells.Count / 2; } }
        public int RectCount { get { return _rects.Count; } }

        /// <summary>Avoids the grid cell (x, y).</summary>
        public AvoidSet AddCell(int x, int y)
        {
            _cells.Add(x);
            _cells.Add(y);
            return this;
        }

#if !PATHSERVER_NO_SPAN
        /// <summary>
        /// Avoids every cell of xy, x, y pairs of grid cells (2 * n ints; an array converts, a
        /// slice of a larger one works too): the same set as AddCell on each pair in turn. An odd
        /// length throws ArgumentException and adds nothing.
        /// (Define PATHSERVER_NO_SPAN where System.Span is missing; the array overload remains.)
        /// </summary>
        public AvoidSet AddCells(ReadOnlySpan<int> xy)
        {
            if (xy.Length % 2 != 0)
                throw new ArgumentException("xy holds x, y pairs: its length must be even, not " + xy.Length + ".", "xy");
            for (int i = 0; i < xy.Length; i++) _cells.Add(xy[i]);
            return this;
        }
#endif

        /// <summary>
        /// AddCells for count cells whose x, y pairs start at xy[offset] (offset in ints; 2 * count
        /// ints are read). For engines without System.Span.
        /// </summary>
        public AvoidSet AddCells(int[] xy, int offset, int count)
        {
            if (xy == null) throw new ArgumentNullException("xy");
            // Halving what is left, rather than doubling count, cannot overflow.
            if (offset < 0 || count < 0 || offset > xy.Length || count > (xy.Length - offset) / 2)
                throw new ArgumentOutOfRangeException("count", "xy must hold 2 * count ints from offset.");
            for (int i = offset; i < offset + 2 * count; i++) _cells.Add(xy[i]);
            return this;
        }

        public AvoidSet AddRect(GridRect rect)
        {
            _rects.Add(rect);
            return this;
        }

        public void Clear()
        {
            _cells.Clear();
            _rects.Clear();
        }

        // {cells: bin, rects: [[x, y, w, h], ...]}, each key only when it has entries. The int32s
        // are written byte by byte, lowest first, so a big-endian machine sends the same bytes;
        // the wire's bin is little-endian whatever the sender.
        internal MsgPackMap ToWire()
        {
            var wire = new MsgPackMap();
            if (_cells.Count > 0)
            {
                var cells = new byte[_cells.Count * 4];
                for (int i = 0; i < _cells.Count; i++)
                {
                    int value = _cells[i];
                    cells[4 * i] = (byte)value;
                    cells[4 * i + 1] = (byte)(value >> 8);
                    cells[4 * i + 2] = (byte)(value >> 16);
                    cells[4 * i + 3] = (byte)(value >> 24);
                }
                wire.Add("cells", cells);
            }
            if (_rects.Count > 0)
            {
                var rects = new object[_rects.Count];
                for (int i = 0; i < rects.Length; i++) rects[i] = PathServerClient.RectToWire(_rects[i]);
                wire.Add("rects", rects);
            }
            return wire;
        }
    }

    /// <summary>
    /// Traversal rules over a map's tag names: a tag mapped to null blocks its cells, to a number
    /// (at least 1) multiplies their cost. Tags not listed keep their cost.
    ///     new TraversalRules { { "water", null }, { "forest", 3 } }
    /// </summary>
    public sealed class TraversalRules : Dictionary<string, double?>
    {
        internal MsgPackMap ToWire()
        {
            var wire = new MsgPackMap();
            foreach (var pair in this) wire.Add(pair.Key, pair.Value.HasValue ? (object)pair.Value.Value : null);
            return wire;
        }

        internal static TraversalRules FromWire(object value, string field, long id)
        {
            var map = value as IDictionary<string, object>;
            if (map == null) throw new PathServerException(PathServerErrorCodes.BadReply, field + " is not a map", null, false, null, id);
            var rules = new TraversalRules();
            foreach (var pair in map) rules[pair.Key] = pair.Value == null ? (double?)null : MsgPack.ToDouble(pair.Value);
            return rules;
        }
    }

    /// <summary>
    /// PathOptions.Traversal: a unit class the map declares (put_map's classes), or rules of its
    /// own. Both convert implicitly: Traversal = "boat", or Traversal = new TraversalRules { ... }.
    /// </summary>
    public sealed class Traversal
    {
        /// <summary>The unit class's name, or null for rules.</summary>
        public string UnitClass { get; }
        /// <summary>The rules, or null for a unit class.</summary>
        public TraversalRules Rules { get; }

        Traversal(string unitClass, TraversalRules rules)
        {
            UnitClass = unitClass;
            Rules = rules;
        }

        public static Traversal Class(string unitClass)
        {
            if (unitClass == null) throw new ArgumentNullException("unitClass");
            return new Traversal(unitClass, null);
        }

        public static Traversal Of(TraversalRules rules)
        {
            if (rules == null) throw new ArgumentNullException("rules");
            return new Traversal(null, rules);
        }

        public static implicit operator Traversal(string unitClass) { return unitClass == null ? null : Class(unitClass); }
        public static implicit operator Traversal(TraversalRules rules) { return rules == null ? null : Of(rules); }

        internal object ToWire() { return UnitClass != null ? (object)UnitClass : Rules.ToWire(); }

        public override string ToString() { return UnitClass ?? MsgPack.ToDebugString(Rules.ToWire()); }
    }

    /// <summary>Two indices into CheckBlockAsync's points, First &lt; Second.</summary>
    public struct IndexPair : IEquatable<IndexPair>
    {
        public int First { get; }
        public int Second { get; }

        public IndexPair(int first, int second)
        {
            First = first;
            Second = second;
        }

        public bool Equals(IndexPair other) { return First == other.First && Second == other.Second; }
        public override bool Equals(object obj) { return obj is IndexPair && Equals((IndexPair)obj); }
        public override int GetHashCode() { return First * 397 ^ Second; }
        public override string ToString() { return "[" + First + ", " + Second + "]"; }
    }

    /// <summary>
    /// ReachableAsync's answer (a unit's movement range): Count grid cells, cheapest first (the
    /// start, after snapping, first at cost 0). Cells holds them as x, y pairs: cell i is
    /// (Cells[2 * i], Cells[2 * i + 1]) at cost Costs[i].
    /// </summary>
    public sealed class ReachableResult
    {
        public string Map { get; internal set; }
        public long Gen { get; internal set; }
        public int Count { get; internal set; }
        /// <summary>2 * Count ints: x, y of each cell (grid cells, whatever the request's Space).</summary>
        public int[] Cells { get; internal set; }
        /// <summary>Count costs, ascending.</summary>
        public float[] Costs { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }
    }

    /// <summary>
    /// DistanceFieldAsync's answer (a Dijkstra map): each cell's cost to the nearest goal over
    /// Region (grid cells), row-major: Costs[y * Width + x] for region coordinates (x, y);
    /// +infinity where the unit cannot stand or reach a goal, or beyond PathOptions.MaxCost.
    /// </summary>
    public sealed class DistanceField
    {
        public string Map { get; internal set; }
        public long Gen { get; internal set; }
        /// <summary>The cells returned: X, Y is the origin (upper-left cell), then Width x Height.</summary>
        public GridRect Region { get; internal set; }
        public int Width { get { return Region.Width; } }
        public int Height { get { return Region.Height; } }
        public float[] Costs { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }

        /// <summary>The cost at (x, y) of the region (region coordinates).</summary>
        public float this[int x, int y] { get { return Costs[y * Region.Width + x]; } }
    }

    /// <summary>
    /// NextStepsAsync's answer for Count units: Steps[2 * i], Steps[2 * i + 1] is where unit i
    /// heads next (in the request's Space), Remaining[i] its cost to the nearest goal (+infinity:
    /// it cannot reach one; it then gets its own cell as its step). Steps and Remaining are the
    /// arrays the caller passed (or new ones); only their first 2 * Count and Count items are set.
    /// </summary>
    public sealed class NextStepsResult
    {
        public string Map { get; internal set; }
        public long Gen { get; internal set; }
        public int Count { get; internal set; }
        public float[] Steps { get; internal set; }
        public float[] Remaining { get; internal set; }
    }

    /// <summary>
    /// CheckBlockAsync's answer: the pairs of points that are connected now and would not be if
    /// the cells were solid, in order. Empty: the placement cuts nothing.
    /// </summary>
    public sealed class CheckBlockResult
    {
        public string Map { get; internal set; }
        public long Gen { get; internal set; }
        public IndexPair[] Disconnected { get; internal set; }
        public bool CutsAnything { get { return Disconnected.Length > 0; } }
        public IDictionary<string, object> Raw { get; internal set; }
    }

    #endregion

    #region Errors

    /// <summary>The wire's error codes (only ever added to) and the client's own.</summary>
    public static class PathServerErrorCodes
    {
        public const string Malformed = "malformed";
        public const string TooLarge = "too_large";
        public const string InvalidRequest = "invalid_request";
        public const string UnknownOp = "unknown_op";
        public const string UnknownMap = "unknown_map";
        public const string OutOfBounds = "out_of_bounds";
        public const string NonFinite = "non_finite";
        public const string BadUnitSize = "bad_unit_size";
        public const string StartBlocked = "start_blocked";
        public const string GoalBlocked = "goal_blocked";
        public const string SearchLimit = "search_limit";
        public const string Overloaded = "overloaded";
        public const string Internal = "internal";
        /// <summary>
        /// put_map or drop_map on the name of a map file the server serves, or an update whose
        /// ifGen is not the map's generation (PathServerException.Gen then holds the current one).
        /// </summary>
        public const string Conflict = "conflict";

        /// <summary>Client: no reply within the request's timeout while connected.</summary>
        public const string Timeout = "timeout";
        /// <summary>Client: no connection to the server (or the client was disposed).</summary>
        public const string Disconnected = "disconnected";
        /// <summary>Client: the server's reply did not have the shape docs/protocol.md promises.</summary>
        public const string BadReply = "bad_reply";
        /// <summary>EmbeddedServer (EmbeddedServer.cs): the server process could not start or did not become ready.</summary>
        public const string EmbeddedServerFailed = "embedded_server_failed";
    }

    /// <summary>A request failed: Code is a PathServerErrorCodes value, At the field it is about.</summary>
    public sealed class PathServerException : Exception
    {
        public string Code { get; }
        /// <summary>The request field the error is about, such as "start[0]"; null if none.</summary>
        public string At { get; }
        /// <summary>The server says sending the same request later may succeed.</summary>
        public bool Retryable { get; }
        public int? RetryAfterMs { get; }
        public long? RequestId { get; }
        /// <summary>A "conflict" from UpdateAsync's ifGen: the map's current generation; null otherwise.</summary>
        public long? Gen { get; }

        public PathServerException(string code, string message, string at = null, bool retryable = false,
            int? retryAfterMs = null, long? requestId = null, long? gen = null)
            : base(FormatMessage(code, message, at))
        {
            Code = code;
            At = at;
            Retryable = retryable;
            RetryAfterMs = retryAfterMs;
            RequestId = requestId;
            Gen = gen;
        }

        static string FormatMessage(string code, string message, string at)
        {
            return at == null ? code + ": " + message : code + ": " + message + " (at " + at + ")";
        }

        internal static PathServerException FromReply(IDictionary<string, object> reply, long? requestId)
        {
            var error = MsgPack.Get(reply, "error") as IDictionary<string, object>;
            if (error == null)
                return new PathServerException(PathServerErrorCodes.BadReply, "error reply without an \"error\" map", null, false, null, requestId);
            int? retryAfter = null;
            object retryAfterValue = MsgPack.Get(reply, "retry_after_ms");
            if (MsgPack.IsNumber(retryAfterValue)) retryAfter = (int)MsgPack.ToLong(retryAfterValue);
            long? gen = null;
            object genValue = MsgPack.Get(reply, "gen");
            if (MsgPack.IsNumber(genValue)) gen = MsgPack.ToLong(genValue);
            return new PathServerException(
                MsgPack.Get(error, "code") as string ?? PathServerErrorCodes.Internal,
                MsgPack.Get(error, "message") as string ?? "",
                MsgPack.Get(error, "at") as string,
                true.Equals(MsgPack.Get(reply, "retryable")),
                retryAfter,
                requestId,
                gen);
        }
    }

    #endregion

    #region Events

    /// <summary>
    /// A path query completed: Result.Status is Found, Partial or NoPath (an empty Path, like
    /// AStarGrid2D's empty path).
    /// </summary>
    public sealed class PathFoundEventArgs : EventArgs
    {
        public long RequestId { get; internal set; }
        public PathResult Result { get; internal set; }
        public object State { get; internal set; }
    }

    /// <summary>A path request failed: an error reply, a timeout or a disconnect (never NoPath).</summary>
    public sealed class PathFailedEventArgs : EventArgs
    {
        public long RequestId { get; internal set; }
        public PathServerException Error { get; internal set; }
        public object State { get; internal set; }
    }

    public sealed class ConnectionChangedEventArgs : EventArgs
    {
        public bool IsConnected { get; internal set; }
        /// <summary>Why the connection went down (or failed to come up); null when connected.</summary>
        public string Reason { get; internal set; }
    }

    #endregion

    #region PathServerClient

    /// <summary>
    /// A pathserver client: many requests in flight over one connection, replies matched by id,
    /// reconnects with back-off and re-sends what was in flight (the ZeroMQ Guide's Lazy Pirate).
    /// Thread-safe. Set the properties before the first request; Dispose() when done.
    /// </summary>
    public sealed class PathServerClient : IDisposable
    {
        /// <summary>The default capacity of the main-thread event queue (EventQueueCapacity).</summary>
        public const int DefaultEventQueueCapacity = 4096;

        public string Endpoint { get; }
        /// <summary>The map used when PathOptions.Map is null.</summary>
        public string DefaultMap { get; set; }
        public TimeSpan RequestTimeout { get; set; } = TimeSpan.FromSeconds(5);
        public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(2);
        /// <summary>First delay before reconnecting; doubles per failed attempt up to ReconnectIntervalMax.</summary>
        public TimeSpan ReconnectInterval { get; set; } = TimeSpan.FromMilliseconds(100);
        public TimeSpan ReconnectIntervalMax { get; set; } = TimeSpan.FromSeconds(5);
        /// <summary>Send a ZMTP PING when nothing was sent for this long; zero disables.</summary>
        public TimeSpan HeartbeatInterval { get; set; } = TimeSpan.FromSeconds(1);
        /// <summary>Reconnect when nothing was received for this long; zero disables.</summary>
        public TimeSpan HeartbeatTimeout { get; set; } = TimeSpan.FromSeconds(5);
        /// <summary>On "overloaded", wait retry_after_ms and send again while the timeout allows.</summary>
        public bool RetryOverloaded { get; set; } = true;
        /// <summary>
        /// Ask for packed answers (docs/protocol.md, "Packed answers"): FindPathAsync, RequestPath,
        /// FindPathToAnyAsync and FindPathsAsync get their points as one bin, read straight into
        /// the PathPoint arrays. The paths, statuses and costs are the same; a packed batch's results
        /// carry no Length, Expanded, snapped flags or GoalIndex, and their Start and Goal are their
        /// paths' ends. Off by default: a server older than packed answers refuses the field. The
        /// synchronous calls and FindPathsPackedAsync always ask so.
        /// </summary>
        public bool PackedAnswers { get; set; }
        /// <summary>Queue events for DrainMainThreadQueue() (default) instead of raising them on a background thread.</summary>
        public bool DispatchEventsOnMainThread { get; set; } = true;
        /// <summary>Diagnostics (connects, disconnects, unmatched replies, dropped events); called from background threads.</summary>
        public Action<string> Log { get; set; }

        /// <summary>
        /// The most events (and Posted actions) the main-thread queue holds, DefaultEventQueueCapacity
        /// (4096) unless set; at least 1. When it is full, queuing one more drops the oldest: a game
        /// that drains late still gets the newest answers and the current connection state, and
        /// memory stays bounded when nothing drains. Each drop is counted in DroppedEventCount and
        /// logged (once until the next drain). Awaited tasks never go through the queue.
        /// </summary>
        public int EventQueueCapacity
        {
            get { return _eventQueueCapacity; }
            set
            {
                if (value < 1) throw new ArgumentOutOfRangeException("value", value, "EventQueueCapacity must be at least 1.");
                _eventQueueCapacity = value;
            }
        }

        /// <summary>How many queued events (or Posted actions) were dropped because the queue was full.</summary>
        public long DroppedEventCount { get { return Interlocked.Read(ref _droppedEvents); } }

        /// <summary>
        /// Raised for every completed path query (from FindPathAsync or RequestPath): Result.Status
        /// is Found, Partial or NoPath (an empty Path, like AStarGrid2D's empty path: no path is an
        /// answer, not a failure). Errors raise PathFailed.
        /// </summary>
        public event EventHandler<PathFoundEventArgs> PathFound;
        /// <summary>A path request failed: an error reply, a timeout or a disconnect.</summary>
        public event EventHandler<PathFailedEventArgs> PathFailed;
        public event EventHandler<ConnectionChangedEventArgs> ConnectionChanged;

        public bool IsConnected { get { return _current != null; } }
        /// <summary>Requests sent or waiting to be sent, not yet answered.</summary>
        public int InFlightCount { get { return _pending.Count; } }
        /// <summary>How many connections completed the ZMTP handshake so far.</summary>
        public int ConnectionCount { get { return _connectionCount; } }

        readonly string _host;
        readonly int _port;
        readonly ConcurrentDictionary<long, Pending> _pending = new ConcurrentDictionary<long, Pending>();
        readonly ConcurrentQueue<Outgoing> _outbox = new ConcurrentQueue<Outgoing>();
        readonly AutoResetEvent _outboxSignal = new AutoResetEvent(false);
        readonly ManualResetEvent _disposedEvent = new ManualResetEvent(false);
        readonly Queue<Action> _mainThreadQueue = new Queue<Action>();
        readonly object _startLock = new object();
        readonly Random _jitter = new Random();
        volatile Connection _current;
        volatile bool _disposed;
        volatile string _lastConnectionError = "not connected yet";
        volatile TaskCompletionSource<bool> _connectedSignal = NewSignal();
        volatile int _eventQueueCapacity = DefaultEventQueueCapacity;
        long _droppedEvents;
        bool _dropLogged;
        Thread _readerThread;
        Thread _writerThread;
        long _nextId;
        int _connectionCount;
        int _connectionNumbers;

        public PathServerClient(string endpoint = "tcp://127.0.0.1:5555", string defaultMap = null)
        {
            ParseEndpoint(endpoint, out _host, out _port);
            Endpoint = endpoint;
            DefaultMap = defaultMap;
        }

        #region Public API

        /// <summary>Starts connecting in the background (any request does this too). Returns at once.</summary>
        public void Connect()
        {
            if (!StartThreads()) throw new ObjectDisposedException("PathServerClient");
        }

        // Starts the reader and writer once; false when the client is disposed.
        bool StartThreads()
        {
            lock (_startLock)
            {
                if (_disposed) return false;
                if (_readerThread != null) return true;
                _readerThread = new Thread(ReaderLoop) { IsBackground = true, Name = "PathServerClient reader" };
                _writerThread = new Thread(WriterLoop) { IsBackground = true, Name = "PathServerClient writer" };
                _readerThread.Start();
                _writerThread.Start();
                return true;
            }
        }

        /// <summary>Connects if needed and waits until the handshake is done; false on timeout.</summary>
        public async Task<bool> WaitForConnectionAsync(TimeSpan timeout, CancellationToken ct = default(CancellationToken))
        {
            Connect();
            var signal = _connectedSignal.Task;
            if (signal.IsCompleted) return true;
            var winner = await Task.WhenAny(signal, Task.Delay(timeout, ct)).ConfigureAwait(false);
            ct.ThrowIfCancellationRequested();
            return winner == signal;
        }

        /// <summary>
        /// Finds a path for a unit of footprint unitSize (cells) from start to goal, in world
        /// coordinates unless options.Space is Grid. The result's Status is Found, Partial or
        /// NoPath (an empty Path: an answer, not an error). Throws PathServerException on error
        /// replies, timeouts and disconnects. Also raises PathFound / PathFailed.
        /// </summary>
        public Task<PathResult> FindPathAsync(PathPoint start, PathPoint goal, UnitSize unitSize,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            return StartPath(start, goal, unitSize, options, null, ct).Task;
        }

        /// <summary>
        /// Callback style: sends a path request and returns its id at once. The answer arrives as a
        /// PathFound (Found, Partial or NoPath) or PathFailed event carrying this id and state
        /// (e.g. the unit that asked).
        /// </summary>
        public long RequestPath(PathPoint start, PathPoint goal, UnitSize unitSize, PathOptions options = null, object state = null)
        {
            var started = StartPath(start, goal, unitSize, options, state, CancellationToken.None);
            // Failures are reported through PathFailed; observe them so they are not "unobserved".
            started.Task.ContinueWith(t => { var ignored = t.Exception; }, TaskContinuationOptions.OnlyOnFaulted);
            return started.Id;
        }

        /// <summary>
        /// Many paths for one unit size in one round trip (op "paths"), answered in order. A failed
        /// item has Status Failed and Error set; a failure of the whole batch throws. An entry made
        /// with goals (new PathRequest(start, goals)) finds the cheapest of them: its GoalIndex.
        /// </summary>
        public Task<PathResult[]> FindPathsAsync(IList<PathRequest> requests, UnitSize unitSize,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            if (requests == null) throw new ArgumentNullException("requests");
            options = options ?? new PathOptions();
            var items = new object[requests.Count];
            for (int i = 0; i < items.Length; i++)
            {
                var goals = requests[i].Goals;
                items[i] = goals == null
                    ? new MsgPackMap { { "start", PointToWire(requests[i].Start) }, { "goal", PointToWire(requests[i].Goal) } }
                    : new MsgPackMap { { "start", PointToWire(requests[i].Start) }, { "goals", PointsToWire(goals, "goals") } };
            }
            var body = new MsgPackMap { { "op", "paths" }, { "map", MapName(options) }, { "unit_size", unitSize.ToWire() } };
            options.WriteTo(body, "paths");
            bool packed = PackedAnswers;
            AddPacked(body, packed);
            body.Add("requests", items);
            var space = options.Space;
            return SendAsync(body, options.Timeout, ct, (id, reply) =>
            {
                if (packed) return PackedResults(ParsePackedPaths(reply, id, space, items.Length));
                var results = MsgPack.Get(reply, "results") as object[];
                if (results == null || results.Length != items.Length)
                    throw new PathServerException(PathServerErrorCodes.BadReply,
                        "\"paths\" reply needs \"results\", one per request (" + items.Length + ")", null, false, null, id);
                var parsed = new PathResult[results.Length];
                for (int i = 0; i < results.Length; i++)
                {
                    var item = results[i] as IDictionary<string, object>;
                    if (item == null)
                        throw new PathServerException(PathServerErrorCodes.BadReply, "results[" + i + "] is not a map", null, false, null, id);
                    if (MsgPack.Get(item, "error") != null || false.Equals(MsgPack.Get(item, "ok")))
                    {
                        parsed[i] = new PathResult { Id = id, Index = i, Status = PathStatus.Failed, StatusText = "failed", Raw = item,
                            Error = PathServerException.FromReply(item, id) };
                    }
                    else
                    {
                        parsed[i] = ParsePathReply(item, id);
                        parsed[i].Index = i;
                    }
                }
                return parsed;
            });
        }

        /// <summary>Every served map (op "maps").</summary>
        public Task<MapInfo[]> MapsAsync(CancellationToken ct = default(CancellationToken))
        {
            return SendAsync(new MsgPackMap { { "op", "maps" } }, null, ct, (id, reply) =>
            {
                var maps = MsgPack.Get(reply, "maps") as object[];
                if (maps == null)
                    throw new PathServerException(PathServerErrorCodes.BadReply, "\"maps\" reply without a \"maps\" list", null, false, null, id);
                var list = new MapInfo[maps.Length];
                for (int i = 0; i < maps.Length; i++) list[i] = ParseMapInfo(maps[i] as IDictionary<string, object>);
                return list;
            });
        }

        /// <summary>
        /// A live obstacle edit (op "update"): makes the cells of rects solid or open (solid), sets
        /// their cost, or both (solid false and a cost: open with that cost). Returns the map's new
        /// generation. Idempotent, so a re-send after a reconnect is harmless. With ifGen the edit
        /// applies only while the map is at that generation; otherwise it throws a
        /// PathServerException with Code "conflict" and Gen the current generation.
        /// </summary>
        public Task<long> UpdateAsync(string map, IEnumerable<GridRect> rects, bool? solid = null, double? cost = null,
            CancellationToken ct = default(CancellationToken), long? ifGen = null)
        {
            if (rects == null) throw new ArgumentNullException("rects");
            if (!solid.HasValue && !cost.HasValue) throw new ArgumentException("Give solid, cost or both.");
            if (solid == true && cost.HasValue) throw new ArgumentException("A solid cell has no cost: give solid false with a cost.");
            var wireRects = new List<object>();
            foreach (var r in rects) wireRects.Add(new object[] { (long)r.X, (long)r.Y, (long)r.Width, (long)r.Height });
            var body = new MsgPackMap { { "op", "update" }, { "map", map ?? DefaultMap }, { "rects", wireRects } };
            if (solid.HasValue) body.Add("solid", solid.Value);
            if (cost.HasValue) body.Add("cost", cost.Value);
            if (ifGen.HasValue) body.Add("if_gen", ifGen.Value);
            return SendAsync(body, null, ct, (id, reply) => GenOf(reply, id));
        }

        /// <summary>
        /// Uploads a map of width x height cells under name (op "put_map") and returns its generation;
        /// from the reply on, every request can use it. An uploaded name is replaced (a higher
        /// generation); the name of a map file the server serves throws "conflict".
        /// cells: one byte per cell, row-major from the top-left (index y * width + x): 0 blocked,
        /// 1..255 walkable with that terrain cost. costs (exact costs >= 1 on walkable cells, overriding
        /// the bytes) and heights go out as little-endian float32, tags as bytes; every array holds
        /// width * height items, which the server checks ("invalid_request" at "cells", "costs", ...).
        /// origin is the world position of the grid's top-left corner (default 0, 0), cellSize the
        /// world units of a cell (default 1). tagNames names the values of tags (1..255) for
        /// PathOptions.Traversal; classes are the map's unit classes, each TraversalRules over those
        /// names, used as Traversal = "boat" (after ct so that earlier positional calls keep working).
        /// </summary>
        public Task<long> PutMapAsync(string name, int width, int height, byte[] cells, float[] costs = null,
            float[] heights = null, byte[] tags = null, PathPoint? origin = null, double? cellSize = null,
            TimeSpan? timeout = null, CancellationToken ct = default(CancellationToken),
            IDictionary<string, int> tagNames = null, IDictionary<string, TraversalRules> classes = null)
        {
            if (cells == null) throw new ArgumentNullException("cells");
            var body = PutMapBody(name ?? DefaultMap, width, height, cells, costs, heights, tags, origin, cellSize, tagNames, classes);
            return SendAsync(body, timeout, ct, (id, reply) => GenOf(reply, id));
        }

        // The body of a put_map request, without its id, in the key order of docs/protocol.md.
        internal static MsgPackMap PutMapBody(string name, int width, int height, byte[] cells, float[] costs = null,
            float[] heights = null, byte[] tags = null, PathPoint? origin = null, double? cellSize = null,
            IDictionary<string, int> tagNames = null, IDictionary<string, TraversalRules> classes = null)
        {
            var body = new MsgPackMap { { "op", "put_map" }, { "map", name }, { "width", (long)width },
                { "height", (long)height }, { "cells", cells } };
            if (costs != null) body.Add("costs", Float32Bytes(costs));
            if (heights != null) body.Add("heights", Float32Bytes(heights));
            if (origin.HasValue) body.Add("origin", new object[] { (double)origin.Value.X, (double)origin.Value.Y });
            if (cellSize.HasValue) body.Add("cell_size", cellSize.Value);
            if (tags != null) body.Add("tags", tags);
            if (tagNames != null)
            {
                var names = new MsgPackMap();
                foreach (var pair in tagNames) names.Add(pair.Key, (long)pair.Value);
                body.Add("tag_names", names);
            }
            if (classes != null)
            {
                var wire = new MsgPackMap();
                foreach (var pair in classes)
                {
                    if (pair.Value == null) throw new ArgumentException("class \"" + pair.Key + "\" has no rules", "classes");
                    wire.Add(pair.Key, pair.Value.ToWire());
                }
                body.Add("classes", wire);
            }
            return body;
        }

        /// <summary>
        /// The cells of a map (op "get_map"), uploaded or served from a file, live edits included: the
        /// whole map, or region (which must lie inside the map, else "out_of_bounds" at "region").
        /// </summary>
        public Task<MapData> GetMapAsync(string name, GridRect? region = null, TimeSpan? timeout = null,
            CancellationToken ct = default(CancellationToken))
        {
            var body = new MsgPackMap { { "op", "get_map" }, { "map", name ?? DefaultMap } };
            if (region.HasValue)
            {
                var r = region.Value;
                body.Add("region", new object[] { (long)r.X, (long)r.Y, (long)r.Width, (long)r.Height });
            }
            return SendAsync(body, timeout, ct, (id, reply) => ParseMapData(reply, id));
        }

        /// <summary>
        /// Stops serving an uploaded map (op "drop_map"); returns the generation dropped. Requests
        /// already in flight on it finish. An unknown name throws "unknown_map", a map file's name
        /// "conflict".
        /// </summary>
        public Task<long> DropMapAsync(string name, CancellationToken ct = default(CancellationToken))
        {
            var body = new MsgPackMap { { "op", "drop_map" }, { "map", name ?? DefaultMap } };
            return SendAsync(body, null, ct, (id, reply) => GenOf(reply, id));
        }

        /// <summary>A round trip to the server (op "ping"); returns the measured latency.</summary>
        public Task<TimeSpan> PingAsync(CancellationToken ct = default(CancellationToken))
        {
            var clock = Stopwatch.StartNew();
            return SendAsync(new MsgPackMap { { "op", "ping" } }, null, ct, (id, reply) => clock.Elapsed);
        }

        /// <summary>The server's counters (op "stats"), as decoded.</summary>
        public Task<IDictionary<string, object>> StatsAsync(CancellationToken ct = default(CancellationToken))
        {
            return SendAsync(new MsgPackMap { { "op", "stats" } }, null, ct, (id, reply) => reply);
        }

        /// <summary>
        /// Any op, for what this client does not wrap: fields must not contain "id" (the client
        /// assigns it). Returns the decoded reply when ok is true; throws PathServerException otherwise.
        /// </summary>
        public Task<IDictionary<string, object>> RequestAsync(string op, IEnumerable<KeyValuePair<string, object>> fields = null,
            TimeSpan? timeout = null, CancellationToken ct = default(CancellationToken))
        {
            var body = new MsgPackMap { { "op", op } };
            if (fields != null) body.AddRange(fields);
            return SendAsync(body, timeout, ct, (id, reply) => reply);
        }

        /// <summary>
        /// Queues an action for DrainMainThreadQueue(); callable from any thread. It shares the
        /// event queue and its EventQueueCapacity.
        /// </summary>
        public void Post(Action action)
        {
            if (action == null) throw new ArgumentNullException("action");
            QueueForMainThread(action);
        }

        /// <summary>
        /// Raises the queued events (and runs Posted actions) on the calling thread: call it once a
        /// frame from Unity's Update() or Godot's _Process(). Runs at most maxItems of what was queued
        /// when called; returns how many ran. An exception from a handler propagates; the rest stay queued.
        /// </summary>
        public int DrainMainThreadQueue(int maxItems = int.MaxValue)
        {
            int budget;
            lock (_mainThreadQueue)
            {
                budget = Math.Min(maxItems, _mainThreadQueue.Count);
                _dropLogged = false;
            }
            int ran = 0;
            while (ran < budget)
            {
                Action action;
                lock (_mainThreadQueue)
                {
                    if (_mainThreadQueue.Count == 0) break;
                    action = _mainThreadQueue.Dequeue();
                }
                ran++;
                action();
            }
            return ran;
        }

        /// <summary>Closes the connection; requests still in flight fail with "disconnected".</summary>
        public void Dispose()
        {
            lock (_startLock)
            {
                if (_disposed) return;
                _disposed = true;
            }
            _disposedEvent.Set();
            _outboxSignal.Set();
            var connection = _current;
            if (connection != null) connection.Close("the client was disposed");
            foreach (var id in _pending.Keys)
            {
                Pending pending;
                if (_pending.TryGetValue(id, out pending))
                    Finish(pending, null, new PathServerException(PathServerErrorCodes.Disconnected, "the client was disposed", null, false, null, id));
            }
            var reader = _readerThread;
            var writer = _writerThread;
            if (reader != null && reader != Thread.CurrentThread) reader.Join(1000);
            if (writer != null && writer != Thread.CurrentThread) writer.Join(1000);
        }

        #endregion

        #region Packed answers and the synchronous calls

        /// <summary>
        /// The synchronous path, for AStarGrid2D-style code: var result = client.FindPath(a, b, 1).
        /// Blocks the calling thread until the answer arrives or the timeout (options.Timeout, else
        /// RequestTimeout) passes; asks for a packed answer, read straight into result.Path. Never
        /// throws for a failed request: the result's Status is then Failed and Error says why
        /// ("timeout", "disconnected", a wire code), with an empty Path. Raises no events. The
        /// calling frame waits one round trip plus the search: call it for a few units a frame,
        /// and FindPathsPacked (one round trip for all of them) or FindPathAsync for more.
        /// </summary>
        public PathResult FindPath(PathPoint start, PathPoint goal, UnitSize unitSize, PathOptions options = null)
        {
            options = options ?? new PathOptions();
            var space = options.Space;
            var body = PathRequestBody(start, goal, null, unitSize, options, true);
            var task = SendAsync(body, options.Timeout, CancellationToken.None, (id, reply) => ParsePathReply(reply, id, space));
            return Wait(task, options.Timeout, error => new PathResult
            {
                Id = error.RequestId ?? 0, Status = PathStatus.Failed, StatusText = "failed", Error = error,
            });
        }

        /// <summary>
        /// Many paths in one round trip, sent and answered packed (op "paths" with "starts" and
        /// "goals" bins): entry i from starts[i] to goals[i], every entry with unitSize and options.
        /// The answer's arrays are filled straight from the reply's bins. A failed entry has Status
        /// Failed and its error in Errors (At "starts[i]" / "goals[i]"); a failure of the whole
        /// batch throws. Grid coordinates are floored to their cells.
        /// </summary>
        public Task<PackedPaths> FindPathsPackedAsync(IList<PathPoint> starts, IList<PathPoint> goals, UnitSize unitSize,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            options = options ?? new PathOptions();
            var body = PackedPathsBody(starts, goals, unitSize, options);
            var space = options.Space;
            int count = starts.Count;
            return SendAsync(body, options.Timeout, ct, (id, reply) => ParsePackedPaths(reply, id, space, count));
        }

        /// <summary>
        /// The synchronous FindPathsPackedAsync: blocks until the answer or the timeout. Never throws
        /// for a failed request: the answer's Error says why, with Count 0.
        /// </summary>
        public PackedPaths FindPathsPacked(IList<PathPoint> starts, IList<PathPoint> goals, UnitSize unitSize, PathOptions options = null)
        {
            options = options ?? new PathOptions();
            return Wait(FindPathsPackedAsync(starts, goals, unitSize, options), options.Timeout,
                error => new PackedPaths { Id = error.RequestId ?? 0, Error = error });
        }

        // The request's own timer ends it at its timeout; the wait allows a little more, then gives up itself.
        T Wait<T>(Task<T> task, TimeSpan? timeout, Func<PathServerException, T> failed)
        {
            var span = timeout ?? RequestTimeout;
            try
            {
                if (task.Wait(span + TimeSpan.FromSeconds(1))) return task.Result;
                return failed(new PathServerException(PathServerErrorCodes.Timeout,
                    "no reply within " + span.TotalSeconds.ToString("0.0##", CultureInfo.InvariantCulture) + " s", null, true));
            }
            catch (AggregateException e)
            {
                var error = e.InnerException as PathServerException
                    ?? new PathServerException(PathServerErrorCodes.BadReply, e.InnerException == null ? e.Message : e.InnerException.Message);
                return failed(error);
            }
        }

        // A packed batch's body, without its id: the key order of docs/protocol.md's packed-paths-request.
        internal MsgPackMap PackedPathsBody(IList<PathPoint> starts, IList<PathPoint> goals, UnitSize unitSize, PathOptions options)
        {
            if (starts == null) throw new ArgumentNullException("starts");
            if (goals == null) throw new ArgumentNullException("goals");
            if (starts.Count != goals.Count)
                throw new ArgumentException(starts.Count + " starts and " + goals.Count + " goals: one goal a start.", "goals");
            var body = new MsgPackMap { { "op", "paths" }, { "map", MapName(options) }, { "unit_size", unitSize.ToWire() } };
            options.WriteTo(body, "paths");
            AddPacked(body, true);
            body.Add("starts", PointsToBin(starts, options.Space));
            body.Add("goals", PointsToBin(goals, options.Space));
            return body;
        }

        // The bits of a float32 as an int and back, whatever this machine's byte order.
        [StructLayout(LayoutKind.Explicit)]
        struct FloatBits
        {
            [FieldOffset(0)] public int Int;
            [FieldOffset(0)] public float Float;
        }

        // Points as the wire's bin of little-endian pairs: int32 cells (floored) in grid space, float32 in world space.
        internal static byte[] PointsToBin(IList<PathPoint> points, CoordinateSpace space)
        {
            var bytes = new byte[points.Count * 8];
            for (int i = 0; i < points.Count; i++)
            {
                var point = points[i];
                WritePairItem(bytes, 8 * i, point.X, space);
                WritePairItem(bytes, 8 * i + 4, point.Y, space);
            }
            return bytes;
        }

        static void WritePairItem(byte[] bytes, int at, float value, CoordinateSpace space)
        {
            int bits = space == CoordinateSpace.Grid ? (int)Math.Floor(value) : new FloatBits { Float = value }.Int;
            bytes[at] = (byte)bits;
            bytes[at + 1] = (byte)(bits >> 8);
            bytes[at + 2] = (byte)(bits >> 16);
            bytes[at + 3] = (byte)(bits >> 24);
        }

        // A bin of pairs as new points (one array: no allocation per point).
        internal static PathPoint[] PointsFromBin(byte[] bytes, CoordinateSpace space, string field, long id)
        {
            if (bytes.Length % 8 != 0)
                throw new PathServerException(PathServerErrorCodes.BadReply, "\"" + field + "\" is " + bytes.Length + " bytes, not 8 a point", null, false, null, id);
            var points = new PathPoint[bytes.Length / 8];
            ReadPoints(bytes, space, points, 0, points.Length);
            return points;
        }

        // count pairs of bytes into points from index at.
        static void ReadPoints(byte[] bytes, CoordinateSpace space, PathPoint[] points, int at, int count)
        {
            for (int i = 0, b = 0; i < count; i++, b += 8)
            {
                int x = bytes[b] | bytes[b + 1] << 8 | bytes[b + 2] << 16 | bytes[b + 3] << 24;
                int y = bytes[b + 4] | bytes[b + 5] << 8 | bytes[b + 6] << 16 | bytes[b + 7] << 24;
                points[at + i] = space == CoordinateSpace.Grid
                    ? new PathPoint(x, y)
                    : new PathPoint(new FloatBits { Int = x }.Float, new FloatBits { Int = y }.Float);
            }
        }

        static uint UInt32At(byte[] bytes, int at)
        {
            return (uint)(bytes[at] | bytes[at + 1] << 8 | bytes[at + 2] << 16 | bytes[at + 3] << 24);
        }

        static byte[] BinField(IDictionary<string, object> reply, string key, int length, long id)
        {
            var bytes = MsgPack.Get(reply, key) as byte[];
            if (bytes == null || (length >= 0 && bytes.Length != length))
                throw new PathServerException(PathServerErrorCodes.BadReply, "packed \"paths\" reply: \"" + key + "\" is not "
                    + (length >= 0 ? length + " bytes of " : "a ") + "bin", null, false, null, id);
            return bytes;
        }

        // A packed "paths" reply of count entries, its points read as space's.
        internal static PackedPaths ParsePackedPaths(IDictionary<string, object> reply, long id, CoordinateSpace space, int count)
        {
            var status = BinField(reply, "status", count, id);
            var costs = BinField(reply, "cost", 4 * count, id);
            var counts = BinField(reply, "count", 4 * count, id);
            var answer = new PackedPaths { Id = id, Gen = GenOf(reply, id), Raw = reply, Status = new PathStatus[count],
                Costs = new float[count], Counts = new int[count], Offsets = new int[count + 1] };
            long total = 0;
            for (int i = 0; i < count; i++)
            {
                switch (status[i])
                {
                    case PackedStatus.Found: answer.Status[i] = PathStatus.Found; break;
                    case PackedStatus.Partial: answer.Status[i] = PathStatus.Partial; break;
                    case PackedStatus.NoPath: answer.Status[i] = PathStatus.NoPath; break;
                    case PackedStatus.Error: answer.Status[i] = PathStatus.Failed; break;
                    default: answer.Status[i] = PathStatus.Unknown; break;
                }
                answer.Costs[i] = new FloatBits { Int = (int)UInt32At(costs, 4 * i) }.Float;
                uint points = UInt32At(counts, 4 * i);
                answer.Counts[i] = (int)points;
                answer.Offsets[i] = (int)total;
                total += points;
                if (total > int.MaxValue / 8)
                    throw new PathServerException(PathServerErrorCodes.BadReply, "packed \"paths\" reply: counts past any reply", null, false, null, id);
            }
            answer.Offsets[count] = (int)total;
            var bin = BinField(reply, "points", 8 * (int)total, id);
            answer.Points = new PathPoint[total];
            ReadPoints(bin, space, answer.Points, 0, (int)total);
            var errors = MsgPack.Get(reply, "errors") as IDictionary<string, object>;
            if (errors != null)
            {
                foreach (var pair in errors)
                {
                    int index;
                    if (!int.TryParse(pair.Key, NumberStyles.Integer, CultureInfo.InvariantCulture, out index) || index < 0 || index >= count)
                        throw new PathServerException(PathServerErrorCodes.BadReply, "packed \"paths\" reply: an error of no entry, " + pair.Key, null, false, null, id);
                    answer.Errors[index] = PathServerException.FromReply(new Dictionary<string, object> { { "error", pair.Value } }, id);
                }
            }
            return answer;
        }

        // A packed answer as FindPathsAsync's results: one PathResult an entry, its Path a copy of its points.
        internal static PathResult[] PackedResults(PackedPaths answer)
        {
            var results = new PathResult[answer.Count];
            for (int i = 0; i < results.Length; i++)
            {
                var result = new PathResult { Id = answer.Id, Index = i, Status = answer.Status[i], Cost = answer.Costs[i],
                    Gen = answer.Gen, Raw = answer.Raw, Path = new PathPoint[answer.Counts[i]] };
                answer.CopyPath(i, result.Path);
                PathServerException error;
                if (answer.Errors.TryGetValue(i, out error)) result.Error = error;
                result.StatusText = result.Status == PathStatus.Failed ? "failed" : StatusText(result.Status);
                if (result.Path.Length > 0)
                {
                    result.Start = result.Path[0];
                    result.Goal = result.Path[result.Path.Length - 1];
                }
                results[i] = result;
            }
            return results;
        }

        static string StatusText(PathStatus status)
        {
            switch (status)
            {
                case PathStatus.Found: return "found";
                case PathStatus.Partial: return "partial";
                case PathStatus.NoPath: return "no_path";
                default: return "unknown";
            }
        }

        #endregion

        #region Queries beyond one path

        /// <summary>
        /// One search for the cheapest of several goals (op "path" with "goals", 1 to 4096): the
        /// result's GoalIndex says which goal was reached (null when none is: NoPath, or Partial
        /// with AllowPartial). Goals snap like a goal; one in another component is skipped.
        /// Otherwise as FindPathAsync, PathFound / PathFailed included.
        /// </summary>
        public Task<PathResult> FindPathToAnyAsync(PathPoint start, IList<PathPoint> goals, UnitSize unitSize,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            if (goals == null) throw new ArgumentNullException("goals");
            return StartPath(start, default(PathPoint), goals, unitSize, options, null, ct).Task;
        }

        /// <summary>Callback style FindPathToAnyAsync: returns the id; PathFound or PathFailed carries the answer and state.</summary>
        public long RequestPathToAny(PathPoint start, IList<PathPoint> goals, UnitSize unitSize, PathOptions options = null, object state = null)
        {
            if (goals == null) throw new ArgumentNullException("goals");
            var started = StartPath(start, default(PathPoint), goals, unitSize, options, state, CancellationToken.None);
            started.Task.ContinueWith(t => { var ignored = t.Exception; }, TaskContinuationOptions.OnlyOnFaulted);
            return started.Id;
        }

        /// <summary>
        /// A unit's movement range (op "reachable"): every grid cell whose cheapest cost from start
        /// (in options.Space units) is at most budget (>= 0), cheapest first. Takes Space, Snap,
        /// Diagonal, MaxClimb, Avoid, AvoidCost and Traversal.
        /// </summary>
        public Task<ReachableResult> ReachableAsync(PathPoint start, double budget, UnitSize unitSize,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            options = options ?? new PathOptions();
            return SendAsync(ReachableBody(start, budget, unitSize, options), options.Timeout, ct, (id, reply) => ParseReachable(reply, id));
        }

        /// <summary>
        /// A distance field, or Dijkstra map (op "field"): each grid cell's cost to the nearest of
        /// goals (in options.Space units), over options.Region or the whole map; MaxCost bounds the
        /// work. Steer many units down it with NextStepsAsync, which keeps it on the server.
        /// </summary>
        public Task<DistanceField> DistanceFieldAsync(IList<PathPoint> goals, UnitSize unitSize,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            options = options ?? new PathOptions();
            return SendAsync(FieldBody(goals, unitSize, options), options.Timeout, ct, (id, reply) => ParseField(reply, id));
        }

#if !PATHSERVER_NO_SPAN
        /// <summary>
        /// Steers many units of one size toward the nearest of goals (op "next_steps"): positions
        /// holds x, y of each unit (2 * count floats, in options.Space units), sent as one float32
        /// bin. The answer is written into the caller's arrays: steps[2 * i], steps[2 * i + 1] where
        /// unit i heads next, remaining[i] its cost to a goal (+infinity: unreachable). Reuse the
        /// same arrays every frame; they are written on the client's thread just before the task
        /// completes, so read them only after it has. Lookahead "los" gives the farthest turn in
        /// clear sight instead of the next cell. The server keeps the field per map generation,
        /// goals, unit size and options, so the next frame's call costs a lookup per unit.
        /// (Define PATHSERVER_NO_SPAN where System.Span is missing; the array overloads remain.)
        /// </summary>
        public Task<NextStepsResult> NextStepsAsync(IList<PathPoint> goals, UnitSize unitSize, ReadOnlySpan<float> positions,
            float[] steps, float[] remaining, PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            int count = UnitCount(positions.Length, steps, remaining);
            var bin = new byte[positions.Length * 4];
            System.Runtime.InteropServices.MemoryMarshal.AsBytes(positions).CopyTo(bin);
            if (!BitConverter.IsLittleEndian) SwapFloat32(bin);
            return SendNextSteps(goals, unitSize, bin, count, steps, remaining, options, ct);
        }
#endif

        /// <summary>
        /// NextStepsAsync for count units whose x, y pairs start at positions[offset] (offset in
        /// floats; 2 * count floats are read); the answer goes into steps (2 * count) and
        /// remaining (count) from index 0. For engines without System.Span.
        /// </summary>
        public Task<NextStepsResult> NextStepsAsync(IList<PathPoint> goals, UnitSize unitSize, float[] positions, int offset, int count,
            float[] steps, float[] remaining, PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            if (positions == null) throw new ArgumentNullException("positions");
            if (offset < 0 || count < 0 || offset > positions.Length - 2 * count)
                throw new ArgumentOutOfRangeException("count", "positions must hold 2 * count floats from offset.");
            UnitCount(2 * count, steps, remaining);
            var bin = new byte[count * 8];
            Buffer.BlockCopy(positions, offset * 4, bin, 0, bin.Length);
            if (!BitConverter.IsLittleEndian) SwapFloat32(bin);
            return SendNextSteps(goals, unitSize, bin, count, steps, remaining, options, ct);
        }

        /// <summary>NextStepsAsync for every unit of positions (x, y pairs), into new arrays.</summary>
        public Task<NextStepsResult> NextStepsAsync(IList<PathPoint> goals, UnitSize unitSize, float[] positions,
            PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            if (positions == null) throw new ArgumentNullException("positions");
            int count = positions.Length / 2;
            return NextStepsAsync(goals, unitSize, positions, 0, count, new float[2 * count], new float[count], options, ct);
        }

        /// <summary>
        /// Would making cells and rects solid (as UpdateAsync would; in options.Space units, like
        /// points) cut any of points off from each other for this unit size (op "check_block")?
        /// The map is not changed. Cheap enough for every mouse move while placing a building.
        /// Give rects, cells or both (otherwise the server answers "invalid_request" at "rects").
        /// </summary>
        public Task<CheckBlockResult> CheckBlockAsync(IList<PathPoint> points, IList<GridRect> rects, IList<PathPoint> cells,
            UnitSize unitSize, PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            options = options ?? new PathOptions();
            return SendAsync(CheckBlockBody(points, rects, cells, unitSize, options), options.Timeout, ct, (id, reply) => ParseCheckBlock(reply, id));
        }

        // The bodies, without their id, in the key order of docs/protocol.md's golden vectors.
        internal MsgPackMap ReachableBody(PathPoint start, double budget, UnitSize unitSize, PathOptions options)
        {
            var body = new MsgPackMap { { "op", "reachable" }, { "map", MapName(options) }, { "start", PointToWire(start) },
                { "budget", NumberToWire(budget) } };
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "reachable");
            return body;
        }

        internal MsgPackMap FieldBody(IList<PathPoint> goals, UnitSize unitSize, PathOptions options)
        {
            var body = new MsgPackMap { { "op", "field" }, { "map", MapName(options) }, { "goals", PointsToWire(goals, "goals") } };
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "field");
            return body;
        }

        internal MsgPackMap NextStepsBody(IList<PathPoint> goals, UnitSize unitSize, byte[] positions, PathOptions options)
        {
            var body = new MsgPackMap { { "op", "next_steps" }, { "map", MapName(options) }, { "goals", PointsToWire(goals, "goals") },
                { "positions", positions } };
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "next_steps");
            return body;
        }

        internal MsgPackMap CheckBlockBody(IList<PathPoint> points, IList<GridRect> rects, IList<PathPoint> cells, UnitSize unitSize,
            PathOptions options)
        {
            var body = new MsgPackMap { { "op", "check_block" }, { "map", MapName(options) } };
            if (rects != null && rects.Count > 0)
            {
                var wire = new object[rects.Count];
                for (int i = 0; i < wire.Length; i++) wire[i] = RectToWire(rects[i]);
                body.Add("rects", wire);
            }
            if (cells != null && cells.Count > 0) body.Add("cells", PointsToWire(cells, "cells"));
            body.Add("points", PointsToWire(points, "points"));
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "check_block");
            return body;
        }

        Task<NextStepsResult> SendNextSteps(IList<PathPoint> goals, UnitSize unitSize, byte[] positions, int count, float[] steps,
            float[] remaining, PathOptions options, CancellationToken ct)
        {
            options = options ?? new PathOptions();
            var body = NextStepsBody(goals, unitSize, positions, options);
            return SendAsync(body, options.Timeout, ct, (id, reply) => ParseNextSteps(reply, id, count, steps, remaining));
        }

        // Units in floats floats (x, y pairs), checked against the caller's buffers before anything is sent.
        static int UnitCount(int floats, float[] steps, float[] remaining)
        {
            if (floats % 2 != 0) throw new ArgumentException("positions must hold x, y pairs (an even number of floats).", "positions");
            int count = floats / 2;
            if (steps == null) throw new ArgumentNullException("steps");
            if (remaining == null) throw new ArgumentNullException("remaining");
            if (steps.Length < 2 * count) throw new ArgumentException("steps holds " + steps.Length + " floats; " + count + " units need " + 2 * count + ".", "steps");
            if (remaining.Length < count) throw new ArgumentException("remaining holds " + remaining.Length + " floats; " + count + " units need " + count + ".", "remaining");
            return count;
        }

        internal static ReachableResult ParseReachable(IDictionary<string, object> reply, long id)
        {
            var costs = MsgPack.Get(reply, "costs") as byte[];
            var cells = MsgPack.Get(reply, "cells") as byte[];
            if (costs == null || cells == null || costs.Length % 4 != 0 || cells.Length != costs.Length * 2)
                throw new PathServerException(PathServerErrorCodes.BadReply, "reachable reply: \"cells\" and \"costs\" are not bins of int32 pairs and float32",
                    null, false, null, id);
            var result = new ReachableResult { Raw = reply, Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id) };
            result.Count = costs.Length / 4;
            result.Costs = Float32Values(costs);
            result.Cells = new int[result.Count * 2];
            CopyLittleEndian(cells, result.Cells, cells.Length);
            return result;
        }

        internal static DistanceField ParseField(IDictionary<string, object> reply, long id)
        {
            object width = MsgPack.Get(reply, "width"), height = MsgPack.Get(reply, "height");
            var origin = MsgPack.Get(reply, "origin") as object[];
            if (!MsgPack.IsNumber(width) || !MsgPack.IsNumber(height) || origin == null || origin.Length != 2 || !Array.TrueForAll(origin, MsgPack.IsNumber))
                throw new PathServerException(PathServerErrorCodes.BadReply, "field reply without \"width\", \"height\" and \"origin\"", null, false, null, id);
            var field = new DistanceField { Raw = reply, Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id),
                Region = new GridRect((int)MsgPack.ToLong(origin[0]), (int)MsgPack.ToLong(origin[1]), (int)MsgPack.ToLong(width), (int)MsgPack.ToLong(height)) };
            var cost = MsgPack.Get(reply, "cost") as byte[];
            if (cost == null || cost.Length != (long)field.Width * field.Height * 4)
                throw new PathServerException(PathServerErrorCodes.BadReply, "field reply: \"cost\" is not " + field.Width + " x " + field.Height + " float32 of bin",
                    null, false, null, id);
            field.Costs = Float32Values(cost);
            return field;
        }

        // Fills the caller's buffers; runs on the reader thread before the task completes.
        internal static NextStepsResult ParseNextSteps(IDictionary<string, object> reply, long id, int count, float[] steps, float[] remaining)
        {
            var stepBytes = MsgPack.Get(reply, "steps") as byte[];
            var remainingBytes = MsgPack.Get(reply, "remaining") as byte[];
            if (stepBytes == null || remainingBytes == null || stepBytes.Length != count * 8 || remainingBytes.Length != count * 4)
                throw new PathServerException(PathServerErrorCodes.BadReply, "next_steps reply: \"steps\" and \"remaining\" are not bins of "
                    + count + " float32 pairs and floats", null, false, null, id);
            CopyLittleEndian(stepBytes, steps, stepBytes.Length);
            CopyLittleEndian(remainingBytes, remaining, remainingBytes.Length);
            return new NextStepsResult { Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id), Count = count, Steps = steps, Remaining = remaining };
        }

        internal static CheckBlockResult ParseCheckBlock(IDictionary<string, object> reply, long id)
        {
            var pairs = MsgPack.Get(reply, "disconnected") as object[];
            if (pairs == null)
                throw new PathServerException(PathServerErrorCodes.BadReply, "check_block reply without \"disconnected\"", null, false, null, id);
            var result = new CheckBlockResult { Raw = reply, Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id),
                Disconnected = new IndexPair[pairs.Length] };
            for (int i = 0; i < pairs.Length; i++)
            {
                var pair = pairs[i] as object[];
                if (pair == null || pair.Length != 2 || !Array.TrueForAll(pair, MsgPack.IsNumber))
                    throw new PathServerException(PathServerErrorCodes.BadReply, "disconnected[" + i + "] is not an [i, j] pair", null, false, null, id);
                result.Disconnected[i] = new IndexPair((int)MsgPack.ToLong(pair[0]), (int)MsgPack.ToLong(pair[1]));
            }
            return result;
        }

        // Little-endian 4-byte values (float32 or int32) into target, whatever this machine's byte order.
        static void CopyLittleEndian(byte[] bytes, Array target, int byteCount)
        {
            if (BitConverter.IsLittleEndian)
            {
                Buffer.BlockCopy(bytes, 0, target, 0, byteCount);
                return;
            }
            var swapped = new byte[byteCount];
            Buffer.BlockCopy(bytes, 0, swapped, 0, byteCount);
            SwapFloat32(swapped);
            Buffer.BlockCopy(swapped, 0, target, 0, byteCount);
        }

        static void SwapFloat32(byte[] bytes)
        {
            for (int i = 0; i + 4 <= bytes.Length; i += 4) Array.Reverse(bytes, i, 4);
        }

        static object[] PointsToWire(IList<PathPoint> points, string name)
        {
            if (points == null) throw new ArgumentNullException(name);
            var wire = new object[points.Count];
            for (int i = 0; i < wire.Length; i++) wire[i] = PointToWire(points[i]);
            return wire;
        }

        internal static object[] RectToWire(GridRect rect)
        {
            return new object[] { (long)rect.X, (long)rect.Y, (long)rect.Width, (long)rect.Height };
        }

        // Whole numbers go out as ints, as coordinates do.
        static object NumberToWire(double value)
        {
            if (value == Math.Floor(value) && Math.Abs(value) < 1e15) return (long)value;
            return value;
        }

        #endregion

        #region The main-thread event queue

        void RaiseEvent(Action raise)
        {
            if (DispatchEventsOnMainThread)
            {
                QueueForMainThread(raise);
                return;
            }
            try
            {
                raise();
            }
            catch (Exception e)
            {
                WriteLog("an event handler threw: " + e);
            }
        }

        // Bounded: when full, the oldest item makes room (see EventQueueCapacity).
        void QueueForMainThread(Action action)
        {
            long dropped = 0;
            bool log = false;
            lock (_mainThreadQueue)
            {
                while (_mainThreadQueue.Count >= _eventQueueCapacity)
                {
                    _mainThreadQueue.Dequeue();
                    dropped++;
                }
                _mainThreadQueue.Enqueue(action);
                if (dropped > 0 && !_dropLogged)
                {
                    _dropLogged = true;
                    log = true;
                }
            }
            if (dropped == 0) return;
            long total = Interlocked.Add(ref _droppedEvents, dropped);
            if (log)
                WriteLog("the event queue is full (EventQueueCapacity " + _eventQueueCapacity + "): dropping the oldest events ("
                    + total + " so far); is DrainMainThreadQueue() called every frame?");
        }

        void RaiseConnectionChanged(bool connected, string reason)
        {
            RaiseEvent(() =>
            {
                var handler = ConnectionChanged;
                if (handler != null) handler(this, new ConnectionChangedEventArgs { IsConnected = connected, Reason = reason });
            });
        }

        #endregion

        #region Requests

        sealed class Pending
        {
            public long Id;
            public string Op;
            public byte[] Message;            // the ZMTP frames, ready to write
            public volatile int SentOn = -1;  // the connection number it was last written to
            public DateTime Deadline;
            public TimeSpan Timeout;
            public Timer TimeoutTimer;
            public CancellationTokenRegistration CancelRegistration;
            public Action<IDictionary<string, object>, Exception> OnDone;
            public int Finished;
        }

        sealed class Outgoing
        {
            public Pending Request;
            public byte[] Control;
            public int ConnectionNumber;
        }

        sealed class StartedPath
        {
            public long Id;
            public Task<PathResult> Task;
        }

        // The body of a path request, without its id, in the key order of docs/protocol.md.
        internal MsgPackMap PathRequestBody(PathPoint start, PathPoint goal, UnitSize unitSize, PathOptions options)
        {
            return PathRequestBody(start, goal, null, unitSize, options);
        }

        // With goals (not null) in place of goal. unit_size is left out when 1, the wire's default;
        // packed comes last, and only when asked for.
        internal MsgPackMap PathRequestBody(PathPoint start, PathPoint goal, IList<PathPoint> goals, UnitSize unitSize, PathOptions options,
            bool packed = false)
        {
            var body = new MsgPackMap { { "op", "path" }, { "map", MapName(options) }, { "start", PointToWire(start) } };
            if (goals == null) body.Add("goal", PointToWire(goal));
            else body.Add("goals", PointsToWire(goals, "goals"));
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "path");
            AddPacked(body, packed);
            return body;
        }

        // "packed": true, unless the caller's Extra already says (a scenario sends the wire's fields as they are).
        static void AddPacked(MsgPackMap body, bool packed)
        {
            if (!packed) return;
            foreach (var pair in body)
                if (pair.Key == "packed") return;
            body.Add("packed", true);
        }

        static void AddUnitSize(MsgPackMap body, UnitSize unitSize)
        {
            if (unitSize.Width != 1 || unitSize.Height != 1) body.Add("unit_size", unitSize.ToWire());
        }

        StartedPath StartPath(PathPoint start, PathPoint goal, UnitSize unitSize, PathOptions options, object state, CancellationToken ct)
        {
            return StartPath(start, goal, null, unitSize, options, state, ct);
        }

        StartedPath StartPath(PathPoint start, PathPoint goal, IList<PathPoint> goals, UnitSize unitSize, PathOptions options, object state,
            CancellationToken ct)
        {
            options = options ?? new PathOptions();
            var body = PathRequestBody(start, goal, goals, unitSize, options, PackedAnswers);
            var space = options.Space;
            long id;
            var task = SendAsync(body, options.Timeout, ct, (replyId, reply) =>
            {
                var result = ParsePathReply(reply, replyId, space);
                result.State = state;
                RaiseEvent(() =>
                {
                    var handler = PathFound;
                    if (handler != null) handler(this, new PathFoundEventArgs { RequestId = replyId, Result = result, State = state });
                });
                return result;
            }, (failedId, error) =>
            {
                RaiseEvent(() =>
                {
                    var handler = PathFailed;
                    if (handler != null) handler(this, new PathFailedEventArgs { RequestId = failedId, Error = error, State = state });
                });
            }, out id);
            return new StartedPath { Id = id, Task = task };
        }

        Task<T> SendAsync<T>(MsgPackMap body, TimeSpan? timeout, CancellationToken ct, Func<long, IDictionary<string, object>, T> parse)
        {
            long ignored;
            return SendAsync(body, timeout, ct, parse, null, out ignored);
        }

        // Registers the request, queues it for the writer and returns a task completed by the
        // reader (reply), the timeout timer or the cancellation token, whichever comes first.
        Task<T> SendAsync<T>(MsgPackMap body, TimeSpan? timeout, CancellationToken ct,
            Func<long, IDictionary<string, object>, T> parse, Action<long, PathServerException> onFailed, out long id)
        {
            StartThreads();  // after Dispose the request fails "disconnected" below
            id = Interlocked.Increment(ref _nextId);
            body.Insert(0, new KeyValuePair<string, object>("id", id));
            var tcs = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
            var span = timeout ?? RequestTimeout;
            var requestId = id;
            var pending = new Pending { Id = id, Op = body[1].Value as string, Message = EncodeRequest(body),
                Deadline = DateTime.UtcNow + span, Timeout = span };
            pending.OnDone = (reply, error) =>
            {
                if (error == null)
                {
                    try
                    {
                        tcs.TrySetResult(parse(requestId, reply));
                        return;
                    }
                    catch (PathServerException e)
                    {
                        error = e;
                    }
                    catch (Exception e)
                    {
                        error = new PathServerException(PathServerErrorCodes.BadReply, "could not read the reply: " + e.Message, null, false, null, requestId);
                    }
                }
                if (error is OperationCanceledException)
                {
                    tcs.TrySetCanceled(ct);
                    return;
                }
                if (onFailed != null && error is PathServerException) onFailed(requestId, (PathServerException)error);
                tcs.TrySetException(error);
            };
            _pending[id] = pending;
            pending.TimeoutTimer = new Timer(_ => Expire(pending), null, (long)Math.Max(1, span.TotalMilliseconds), Timeout.Infinite);
            if (ct.CanBeCanceled)
                pending.CancelRegistration = ct.Register(() => Finish(pending, null, new OperationCanceledException(ct)));
            if (_disposed)
                Finish(pending, null, new PathServerException(PathServerErrorCodes.Disconnected, "the client was disposed", null, false, null, id));
            Enqueue(pending);
            return tcs.Task;
        }

        // The ZMTP frames of a request. A body's bins (a map layer, next_steps' positions) may be
        // large: the encoder's buffer is sized for them up front and framed without another copy.
        static byte[] EncodeRequest(MsgPackMap body)
        {
            int binBytes = 0;
            foreach (var pair in body)
            {
                var bytes = pair.Value as byte[];
                if (bytes != null) binBytes += bytes.Length;
            }
            var encoded = new MemoryStream(binBytes + 1024);
            MsgPack.Encode(encoded, body);
            return Zmtp.EncodeMessage(encoded.GetBuffer(), (int)encoded.Length, true);
        }

        void Enqueue(Pending pending)
        {
            _outbox.Enqueue(new Outgoing { Request = pending });
            _outboxSignal.Set();
        }

        void Expire(Pending pending)
        {
            string seconds = pending.Timeout.TotalSeconds.ToString("0.0##", CultureInfo.InvariantCulture);
            PathServerException error;
            if (_current != null)
                error = new PathServerException(PathServerErrorCodes.Timeout,
                    string.Format(CultureInfo.InvariantCulture, "no reply to \"{0}\" request {1} from {2} within {3} s", pending.Op, pending.Id, Endpoint, seconds),
                    null, true, null, pending.Id);
            else
                error = new PathServerException(PathServerErrorCodes.Disconnected,
                    string.Format(CultureInfo.InvariantCulture, "no connection to {0} within {1} s for \"{2}\" request {3} (last error: {4})",
                        Endpoint, seconds, pending.Op, pending.Id, _lastConnectionError),
                    null, true, null, pending.Id);
            Finish(pending, null, error);
        }

        // Completes a request exactly once, whoever gets here first.
        void Finish(Pending pending, IDictionary<string, object> reply, Exception error)
        {
            if (Interlocked.Exchange(ref pending.Finished, 1) != 0) return;
            Pending removed;
            _pending.TryRemove(pending.Id, out removed);
            if (pending.TimeoutTimer != null) pending.TimeoutTimer.Dispose();
            pending.CancelRegistration.Dispose();
            try
            {
                pending.OnDone(reply, error);
            }
            catch (Exception e)
            {
                WriteLog("a completion handler threw: " + e);
            }
        }

        void OnReply(IDictionary<string, object> reply)
        {
            object idValue = MsgPack.Get(reply, "id");
            if (!MsgPack.IsNumber(idValue))
            {
                // The server could not read one of our requests (we only send what we encoded, so
                // this is a bug somewhere); that request will time out.
                WriteLog("reply without an id: " + MsgPack.ToDebugString(reply));
                return;
            }
            long id = MsgPack.ToLong(idValue);
            Pending pending;
            if (!_pending.TryGetValue(id, out pending)) return;  // timed out, cancelled, or a duplicate after a re-send
            if (true.Equals(MsgPack.Get(reply, "ok")))
            {
                Finish(pending, reply, null);
                return;
            }
            var error = PathServerException.FromReply(reply, id);
            if (error.Code == PathServerErrorCodes.Overloaded && RetryOverloaded)
            {
                int delay = error.RetryAfterMs ?? 50;
                if (DateTime.UtcNow.AddMilliseconds(delay) < pending.Deadline)
                {
                    Timer retry = null;
                    retry = new Timer(_ =>
                    {
                        retry.Dispose();
                        pending.SentOn = -1;
                        if (Volatile.Read(ref pending.Finished) == 0) Enqueue(pending);
                    }, null, delay, Timeout.Infinite);
                    return;
                }
            }
            Finish(pending, null, error);
        }

        void WriteLog(string message)
        {
            var log = Log;
            if (log == null) return;
            try
            {
                log("pathserver client: " + message);
            }
            catch (Exception)
            {
                // A broken logger must not take the connection down.
            }
        }

        string MapName(PathOptions options)
        {
            return options.Map ?? DefaultMap;
        }

        // Whole numbers go out as ints (exact, and what grid coordinates are); others as float64.
        static object CoordinateToWire(float value)
        {
            if (value == Math.Floor(value) && Math.Abs(value) < 1e15) return (long)value;
            return (double)value;
        }

        static object[] PointToWire(PathPoint point)
        {
            return new[] { CoordinateToWire(point.X), CoordinateToWire(point.Y) };
        }

        static PathPoint PointFromWire(object value, string field)
        {
            var pair = value as object[];
            if (pair == null || pair.Length != 2 || !MsgPack.IsNumber(pair[0]) || !MsgPack.IsNumber(pair[1]))
                throw new PathServerException(PathServerErrorCodes.BadReply, field + " is not an [x, y] pair");
            return new PathPoint((float)MsgPack.ToDouble(pair[0]), (float)MsgPack.ToDouble(pair[1]));
        }

        internal static PathResult ParsePathReply(IDictionary<string, object> reply, long id)
        {
            return ParsePathReply(reply, id, null);
        }

        // space: the request's, for a packed path (a bin of int32 or float32 pairs); null refuses one.
        internal static PathResult ParsePathReply(IDictionary<string, object> reply, long id, CoordinateSpace? space)
        {
            var result = new PathResult { Id = id, Raw = reply };
            result.StatusText = MsgPack.Get(reply, "status") as string;
            switch (result.StatusText)
            {
                case "found": result.Status = PathStatus.Found; break;
                case "partial": result.Status = PathStatus.Partial; break;
                case "no_path": result.Status = PathStatus.NoPath; break;
                case null: throw new PathServerException(PathServerErrorCodes.BadReply, "path reply without a \"status\"", null, false, null, id);
                default: result.Status = PathStatus.Unknown; break;
            }
            var path = MsgPack.Get(reply, "path") as object[];
            if (path != null)
            {
                result.Path = new PathPoint[path.Length];
                for (int i = 0; i < path.Length; i++) result.Path[i] = PointFromWire(path[i], "path[" + i + "]");
            }
            var packedPath = MsgPack.Get(reply, "path") as byte[];
            if (packedPath != null)
            {
                if (!space.HasValue)
                    throw new PathServerException(PathServerErrorCodes.BadReply, "a packed path needs the request's space", null, false, null, id);
                result.Path = PointsFromBin(packedPath, space.Value, "path", id);
            }
            object value;
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "cost"))) result.Cost = MsgPack.ToDouble(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "length"))) result.Length = MsgPack.ToDouble(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "expanded"))) result.Expanded = MsgPack.ToLong(value);
            result.StartSnapped = true.Equals(MsgPack.Get(reply, "start_snapped"));
            result.GoalSnapped = true.Equals(MsgPack.Get(reply, "goal_snapped"));
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "gen"))) result.Gen = MsgPack.ToLong(value);
            if ((value = MsgPack.Get(reply, "start")) != null) result.Start = PointFromWire(value, "start");
            if ((value = MsgPack.Get(reply, "goal")) != null) result.Goal = PointFromWire(value, "goal");
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "goal_index"))) result.GoalIndex = (int)MsgPack.ToLong(value);
            return result;
        }

        static MapInfo ParseMapInfo(IDictionary<string, object> entry)
        {
            if (entry == null) throw new PathServerException(PathServerErrorCodes.BadReply, "a \"maps\" entry is not a map");
            var info = new MapInfo { Raw = entry, Name = MsgPack.Get(entry, "name") as string };
            object value;
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "width"))) info.Width = (int)MsgPack.ToLong(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "height"))) info.Height = (int)MsgPack.ToLong(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "cell_size"))) info.CellSize = MsgPack.ToDouble(value);
            if ((value = MsgPack.Get(entry, "origin")) is object[]) info.Origin = PointFromWire(value, "origin");
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "gen"))) info.Gen = MsgPack.ToLong(value);
            value = MsgPack.Get(entry, "last_error");
            info.LastError = value == null ? null : (value as string ?? MsgPack.ToDebugString(value));
            return info;
        }

        internal static long GenOf(IDictionary<string, object> reply, long id)
        {
            object gen = MsgPack.Get(reply, "gen");
            if (!MsgPack.IsNumber(gen))
                throw new PathServerException(PathServerErrorCodes.BadReply, "reply without a \"gen\"", null, false, null, id);
            return MsgPack.ToLong(gen);
        }

        // Little-endian float32, whatever this machine's byte order.
        internal static byte[] Float32Bytes(float[] values)
        {
            var bytes = new byte[values.Length * 4];
            Buffer.BlockCopy(values, 0, bytes, 0, bytes.Length);
            if (!BitConverter.IsLittleEndian)
                for (int i = 0; i < bytes.Length; i += 4) Array.Reverse(bytes, i, 4);
            return bytes;
        }

        internal static float[] Float32Values(byte[] bytes)
        {
            var copy = (byte[])bytes.Clone();
            if (!BitConverter.IsLittleEndian)
                for (int i = 0; i + 4 <= copy.Length; i += 4) Array.Reverse(copy, i, 4);
            var values = new float[copy.Length / 4];
            Buffer.BlockCopy(copy, 0, values, 0, values.Length * 4);
            return values;
        }

        internal static MapData ParseMapData(IDictionary<string, object> reply, long id)
        {
            var map = new MapData { Raw = reply, Name = MsgPack.Get(reply, "map") as string };
            object value;
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "gen"))) map.Gen = MsgPack.ToLong(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "width"))) map.Width = (int)MsgPack.ToLong(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "height"))) map.Height = (int)MsgPack.ToLong(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "cell_size"))) map.CellSize = MsgPack.ToDouble(value);
            if ((value = MsgPack.Get(reply, "origin")) is object[]) map.Origin = PointFromWire(value, "origin");
            map.Region = new GridRect(0, 0, map.Width, map.Height);
            var region = MsgPack.Get(reply, "region") as object[];
            if (region != null && region.Length == 4 && Array.TrueForAll(region, MsgPack.IsNumber))
                map.Region = new GridRect((int)MsgPack.ToLong(region[0]), (int)MsgPack.ToLong(region[1]),
                    (int)MsgPack.ToLong(region[2]), (int)MsgPack.ToLong(region[3]));
            int count = map.Region.Width * map.Region.Height;
            map.Cells = MsgPack.Get(reply, "cells") as byte[];
            if (map.Cells == null || map.Cells.Length != count)
                throw new PathServerException(PathServerErrorCodes.BadReply, "get_map reply: \"cells\" is not " + count + " bytes of bin", null, false, null, id);
            map.Costs = Float32Field(reply, "costs", count, id);
            map.Heights = Float32Field(reply, "heights", count, id);
            map.Tags = MsgPack.Get(reply, "tags") as byte[];
            if (MsgPack.Get(reply, "tags") != null && (map.Tags == null || map.Tags.Length != count))
                throw new PathServerException(PathServerErrorCodes.BadReply, "get_map reply: \"tags\" is not " + count + " bytes of bin", null, false, null, id);
            var tagNames = MsgPack.Get(reply, "tag_names") as IDictionary<string, object>;
            if (tagNames != null)
            {
                map.TagNames = new Dictionary<string, int>();
                foreach (var pair in tagNames) map.TagNames[pair.Key] = (int)MsgPack.ToLong(pair.Value);
            }
            var classes = MsgPack.Get(reply, "classes") as IDictionary<string, object>;
            if (classes != null)
            {
                map.Classes = new Dictionary<string, TraversalRules>();
                foreach (var pair in classes) map.Classes[pair.Key] = TraversalRules.FromWire(pair.Value, "classes." + pair.Key, id);
            }
            return map;
        }

        static float[] Float32Field(IDictionary<string, object> reply, string key, int count, long id)
        {
            object value = MsgPack.Get(reply, key);
            if (value == null) return null;
            var bytes = value as byte[];
            if (bytes == null || bytes.Length != count * 4)
                throw new PathServerException(PathServerErrorCodes.BadReply, "get_map reply: \"" + key + "\" is not " + count + " float32 of bin", null, false, null, id);
            return Float32Values(bytes);
        }

        static void ParseEndpoint(string endpoint, out string host, out int port)
        {
            const string scheme = "tcp://";
            if (endpoint == null || !endpoint.StartsWith(scheme, StringComparison.Ordinal))
                throw new ArgumentException("Endpoint must look like tcp://HOST:PORT, got \"" + endpoint + "\".", "endpoint");
            string rest = endpoint.Substring(scheme.Length);
            int colon = rest.LastIndexOf(':');
            if (colon <= 0 || !int.TryParse(rest.Substring(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out port) || port <= 0 || port > 65535)
                throw new ArgumentException("Endpoint must look like tcp://HOST:PORT, got \"" + endpoint + "\".", "endpoint");
            host = rest.Substring(0, colon).Trim('[', ']');
        }

        static TaskCompletionSource<bool> NewSignal()
        {
            return new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        #endregion

        #region The connection

        sealed class Connection
        {
            public int Number;
            public TcpClient Tcp;
            public NetworkStream Stream;
            public long LastReceiveTicks;
            public long LastSendTicks;
            public Zmtp.FrameReader Reader;
            public volatile string CloseReason;
            public readonly object WriteLock = new object();

            public void Close(string reason = null)
            {
                if (reason != null && CloseReason == null) CloseReason = reason;
                try
                {
                    // Shutdown wakes a reader blocked in Receive on every platform; Close alone may not.
                    Tcp.Client.Shutdown(SocketShutdown.Both);
                }
                catch (Exception)
                {
                    // Already closed.
                }
                Tcp.Close();
            }
        }

        void ReaderLoop()
        {
            int failures = 0;
            while (!_disposed)
            {
                Connection connection = null;
                string reason;
                try
                {
                    connection = OpenConnection();
                    failures = 0;
                    _current = connection;
                    Interlocked.Increment(ref _connectionCount);
                    WriteLog("connected to " + Endpoint);
                    // Queued before WaitForConnectionAsync resumes: the next drain after it raises it.
                    RaiseConnectionChanged(true, null);
                    _connectedSignal.TrySetResult(true);
                    // Lazy Pirate: whatever was in flight on the old connection goes out again, in
                    // id order. The writer skips anything already written to this connection.
                    var ids = new List<long>(_pending.Keys);
                    ids.Sort();
                    foreach (var id in ids)
                    {
                        Pending pending;
                        if (_pending.TryGetValue(id, out pending)) _outbox.Enqueue(new Outgoing { Request = pending });
                    }
                    _outboxSignal.Set();
                    ReadMessages(connection);  // returns only once disposed; otherwise it throws
                    reason = "the client was disposed";
                }
                catch (Exception e)
                {
                    reason = DescribeError(e);
                }
                if (connection != null && connection.CloseReason != null) reason = connection.CloseReason;
                if (connection != null)
                {
                    connection.Close();
                    if (_current == connection)
                    {
                        _current = null;
                        if (_connectedSignal.Task.IsCompleted) _connectedSignal = NewSignal();
                        WriteLog("disconnected from " + Endpoint + ": " + reason);
                        RaiseConnectionChanged(false, reason);
                    }
                }
                if (_disposed) break;
                if (connection == null && reason != _lastConnectionError)
                    WriteLog("cannot connect to " + Endpoint + ": " + reason + " (retrying)");
                _lastConnectionError = reason;
                double baseMs = ReconnectInterval.TotalMilliseconds * Math.Pow(2, Math.Min(failures, 16));
                double delayMs = Math.Min(ReconnectIntervalMax.TotalMilliseconds, baseMs);
                lock (_jitter) delayMs *= 0.8 + 0.4 * _jitter.NextDouble();
                failures++;
                _disposedEvent.WaitOne(TimeSpan.FromMilliseconds(delayMs));
            }
        }

        static string DescribeError(Exception e)
        {
            var aggregate = e as AggregateException;
            if (aggregate != null && aggregate.InnerException != null) e = aggregate.InnerException;
            if (e is IOException && e.InnerException != null) e = e.InnerException;
            return e.Message;
        }

        Connection OpenConnection()
        {
            IPAddress[] addresses;
            IPAddress literal;
            if (IPAddress.TryParse(_host, out literal))
                addresses = new[] { literal };
            else
                addresses = Dns.GetHostAddresses(_host);
            Exception last = new SocketException((int)SocketError.HostNotFound);
            foreach (var address in addresses)
            {
                var tcp = new TcpClient(address.AddressFamily);
                try
                {
                    var connecting = tcp.ConnectAsync(address, _port);
                    if (!connecting.Wait(ConnectTimeout))
                    {
                        connecting.ContinueWith(t => { var ignored = t.Exception; }, TaskContinuationOptions.OnlyOnFaulted);
                        throw new TimeoutException("connecting to " + Endpoint + " timed out");
                    }
                    // Nagle's algorithm would hold a small request until the server ACKs the
                    // previous segment, which it delays by up to 40 ms: the first request after
                    // connecting waited that long. Set on the connected socket.
                    tcp.Client.NoDelay = true;
                    var connection = new Connection { Tcp = tcp, Stream = tcp.GetStream() };
                    Handshake(connection);
                    return connection;
                }
                catch (Exception e)
                {
                    tcp.Close();
                    last = e;
                }
            }
            throw last;
        }

        void Handshake(Connection connection)
        {
            var tcp = connection.Tcp;
            var stream = connection.Stream;
            tcp.ReceiveTimeout = (int)ConnectTimeout.TotalMilliseconds;
            tcp.SendTimeout = (int)ConnectTimeout.TotalMilliseconds;
            stream.Write(Zmtp.Greeting, 0, Zmtp.Greeting.Length);
            var greeting = new byte[64];
            ReadExactly(stream, greeting, 0, 64);
            Zmtp.CheckGreeting(greeting);
            var ready = Zmtp.ReadyCommand("DEALER");
            stream.Write(ready, 0, ready.Length);
            var reader = new Zmtp.FrameReader(stream);
            while (true)
            {
                var frame = reader.ReadFrame();
                if (!frame.IsCommand) throw new IOException("the server sent a message before its READY command");
                var command = Zmtp.ParseCommand(frame.Body);
                if (command.Name == "READY") break;
                if (command.Name == "ERROR") throw new IOException("the server refused the handshake: " + Zmtp.ErrorReason(command.Data));
            }
            connection.Number = Interlocked.Increment(ref _connectionNumbers);
            tcp.ReceiveTimeout = 0;  // the writer's heartbeat check drops a silent connection instead
            tcp.SendTimeout = (int)Math.Max(5000, HeartbeatTimeout.TotalMilliseconds);
            connection.Reader = reader;
            long now = Stopwatch.GetTimestamp();
            connection.LastReceiveTicks = now;
            connection.LastSendTicks = now;
        }

        void ReadMessages(Connection connection)
        {
            var reader = connection.Reader;
            var frames = new List<byte[]>();
            while (!_disposed)
            {
                var frame = reader.ReadFrame();
                Interlocked.Exchange(ref connection.LastReceiveTicks, Stopwatch.GetTimestamp());
                if (frame.IsCommand)
                {
                    var command = Zmtp.ParseCommand(frame.Body);
                    if (command.Name == "PING")
                    {
                        // PING carries a 2-byte TTL, then a context that PONG must echo.
                        int contextLength = Math.Max(0, command.Data.Length - 2);
                        var context = new byte[contextLength];
                        Buffer.BlockCopy(command.Data, command.Data.Length - contextLength, context, 0, contextLength);
                        _outbox.Enqueue(new Outgoing { Control = Zmtp.Command("PONG", context), ConnectionNumber = connection.Number });
                        _outboxSignal.Set();
                    }
                    else if (command.Name == "ERROR")
                    {
                        throw new IOException("the server sent ERROR: " + Zmtp.ErrorReason(command.Data));
                    }
                    continue;  // PONG and commands we do not know are fine to ignore
                }
                frames.Add(frame.Body);
                if (frame.More) continue;
                // The reply mirrors our envelope: an empty delimiter, then the msgpack body.
                var body = frames[frames.Count - 1];
                frames.Clear();
                IDictionary<string, object> reply;
                try
                {
                    reply = MsgPack.Decode(body) as IDictionary<string, object>;
                }
                catch (Exception e)
                {
                    WriteLog("could not decode a reply (" + body.Length + " bytes): " + e.Message);
                    continue;
                }
                if (reply == null)
                {
                    WriteLog("a reply that is not a msgpack map");
                    continue;
                }
                OnReply(reply);
            }
        }

        void WriterLoop()
        {
            while (!_disposed)
            {
                _outboxSignal.WaitOne(HousekeepingInterval());
                Outgoing item;
                while (!_disposed && _outbox.TryDequeue(out item))
                {
                    // Read _current per item: a connection made after this item was queued is the
                    // one it must go to (the reader re-queues only what was pending at connect time).
                    var connection = _current;
                    if (connection == null) continue;  // re-queued by the reader on the next connect
                    if (item.Request != null)
                    {
                        var pending = item.Request;
                        if (Volatile.Read(ref pending.Finished) != 0 || pending.SentOn == connection.Number) continue;
                        pending.SentOn = connection.Number;
                        Write(connection, pending.Message);
                    }
                    else if (item.ConnectionNumber == connection.Number)
                    {
                        Write(connection, item.Control);
                    }
                }
                var current = _current;
                if (current != null) Heartbeat(current);
            }
        }

        int HousekeepingInterval()
        {
            double interval = HeartbeatInterval > TimeSpan.Zero ? HeartbeatInterval.TotalMilliseconds / 4 : 250;
            return (int)Math.Max(10, Math.Min(250, interval));
        }

        void Heartbeat(Connection connection)
        {
            long now = Stopwatch.GetTimestamp();
            double silentMs = (now - Interlocked.Read(ref connection.LastReceiveTicks)) * 1000.0 / Stopwatch.Frequency;
            double idleMs = (now - Interlocked.Read(ref connection.LastSendTicks)) * 1000.0 / Stopwatch.Frequency;
            if (HeartbeatTimeout > TimeSpan.Zero && silentMs > HeartbeatTimeout.TotalMilliseconds)
            {
                // The reader sees the close, reconnects and re-sends what is in flight.
                connection.Close("nothing from the server for " + (int)silentMs + " ms (HeartbeatTimeout)");
                return;
            }
            if (HeartbeatInterval > TimeSpan.Zero && idleMs > HeartbeatInterval.TotalMilliseconds)
            {
                // TTL in deciseconds tells the server how long to wait for our next traffic.
                int ttl = (int)Math.Min(ushort.MaxValue, Math.Max(HeartbeatTimeout.TotalMilliseconds, HeartbeatInterval.TotalMilliseconds) / 100);
                Write(connection, Zmtp.Command("PING", new byte[] { (byte)(ttl >> 8), (byte)ttl }));
            }
        }

        void Write(Connection connection, byte[] data)
        {
            try
            {
                lock (connection.WriteLock) connection.Stream.Write(data, 0, data.Length);
                Interlocked.Exchange(ref connection.LastSendTicks, Stopwatch.GetTimestamp());
            }
            catch (Exception e)
            {
                // Anything written to this connection and unanswered is re-sent on the next one.
                connection.Close("write failed: " + DescribeError(e));
            }
        }

        static void ReadExactly(Stream stream, byte[] buffer, int offset, int count)
        {
            while (count > 0)
            {
                int n = stream.Read(buffer, offset, count);
                if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                offset += n;
                count -= n;
            }
        }

        #endregion
    }

    #endregion

    #region Zmtp

    /// <summary>ZMTP 3.x framing (ZeroMQ RFC 23/37) with the NULL mechanism, as a DEALER needs it.</summary>
    internal static class Zmtp
    {
        /// <summary>Largest frame accepted from the server; a larger length means a broken stream.</summary>
        public const long MaxFrameSize = 256L * 1024 * 1024;

        /// <summary>
        /// Our 64-byte greeting: signature ff 00*8 7f, version 3.0, mechanism "NULL" padded to 20
        /// bytes, as-server 0, 31 bytes of filler.
        /// </summary>
        public static readonly byte[] Greeting = BuildGreeting();

        static byte[] BuildGreeting()
        {
            var greeting = new byte[64];
            greeting[0] = 0xff;
            greeting[9] = 0x7f;
            greeting[10] = 3;
            greeting[11] = 0;
            Encoding.ASCII.GetBytes("NULL", 0, 4, greeting, 12);
            return greeting;
        }

        /// <summary>Accepts any 3.x peer with the NULL mechanism; the padding bytes are not checked.</summary>
        public static void CheckGreeting(byte[] greeting)
        {
            if (greeting.Length < 64 || greeting[0] != 0xff || (greeting[9] & 1) != 1)
                throw new IOException("not a ZeroMQ peer (bad ZMTP signature); is the endpoint a pathserver?");
            if (greeting[10] < 3)
                throw new IOException("the peer speaks ZMTP " + greeting[10] + ".x; 3.x is needed");
            string mechanism = Encoding.ASCII.GetString(greeting, 12, 20).TrimEnd('\0');
            if (mechanism != "NULL")
                throw new IOException("the server wants the " + mechanism + " security mechanism; this client speaks NULL only");
        }

        /// <summary>READY with one property, Socket-Type.</summary>
        public static byte[] ReadyCommand(string socketType)
        {
            var data = new List<byte>();
            AppendProperty(data, "Socket-Type", Encoding.ASCII.GetBytes(socketType));
            return Command("READY", data.ToArray());
        }

        static void AppendProperty(List<byte> data, string name, byte[] value)
        {
            data.Add((byte)name.Length);
            data.AddRange(Encoding.ASCII.GetBytes(name));
            data.Add((byte)(value.Length >> 24));
            data.Add((byte)(value.Length >> 16));
            data.Add((byte)(value.Length >> 8));
            data.Add((byte)value.Length);
            data.AddRange(value);
        }

        /// <summary>A command frame: flags 0x04 (0x06 when long), size, name length, name, data.</summary>
        public static byte[] Command(string name, byte[] data)
        {
            var body = new byte[1 + name.Length + data.Length];
            body[0] = (byte)name.Length;
            Encoding.ASCII.GetBytes(name, 0, name.Length, body, 1);
            Buffer.BlockCopy(data, 0, body, 1 + name.Length, data.Length);
            var output = new MemoryStream();
            AppendFrame(output, 0x04, body, false);
            return output.ToArray();
        }

        /// <summary>
        /// A message as a DEALER sends it: an empty delimiter frame (01 00) then the body, so the
        /// ROUTER sees the same envelope a REQ socket would send; or the body alone.
        /// </summary>
        public static byte[] EncodeMessage(byte[] body, bool withDelimiter = true)
        {
            return EncodeMessage(body, body.Length, withDelimiter);
        }

        /// <summary>EncodeMessage for the first length bytes of body, into one array of the exact size.</summary>
        public static byte[] EncodeMessage(byte[] body, int length, bool withDelimiter)
        {
            bool large = length > 255;
            int header = large ? 9 : 2;
            var message = new byte[(withDelimiter ? 2 : 0) + header + length];
            int at = 0;
            if (withDelimiter)
            {
                message[at++] = 0x01;  // an empty frame, more to come
                message[at++] = 0;
            }
            if (large)
            {
                message[at++] = 0x02;
                for (int shift = 56; shift >= 0; shift -= 8) message[at++] = (byte)((long)length >> shift);
            }
            else
            {
                message[at++] = 0;
                message[at++] = (byte)length;
            }
            Buffer.BlockCopy(body, 0, message, at, length);
            return message;
        }

        static void AppendFrame(MemoryStream output, byte flags, byte[] body, bool more)
        {
            if (more) flags |= 0x01;
            if (body.Length <= 255)
            {
                output.WriteByte(flags);
                output.WriteByte((byte)body.Length);
            }
            else
            {
                output.WriteByte((byte)(flags | 0x02));
                long length = body.Length;
                for (int shift = 56; shift >= 0; shift -= 8) output.WriteByte((byte)(length >> shift));
            }
            output.Write(body, 0, body.Length);
        }

        public sealed class Frame
        {
            public bool More { get; set; }
            public bool IsCommand { get; set; }
            public byte[] Body { get; set; }
        }

        public struct ParsedCommand
        {
            public string Name { get; set; }
            public byte[] Data { get; set; }
        }

        /// <summary>An ERROR command's data: a 1-byte length, then the reason.</summary>
        public static string ErrorReason(byte[] data)
        {
            if (data.Length == 0) return "(no reason given)";
            return Encoding.UTF8.GetString(data, 1, Math.Min(data[0], data.Length - 1));
        }

        public static ParsedCommand ParseCommand(byte[] body)
        {
            if (body.Length < 1 || body[0] + 1 > body.Length) throw new IOException("malformed ZMTP command");
            var data = new byte[body.Length - 1 - body[0]];
            Buffer.BlockCopy(body, 1 + body[0], data, 0, data.Length);
            return new ParsedCommand { Name = Encoding.ASCII.GetString(body, 1, body[0]), Data = data };
        }

        /// <summary>A READY command's properties (name -> value), parsed generically.</summary>
        public static Dictionary<string, byte[]> ParseProperties(byte[] data)
        {
            var properties = new Dictionary<string, byte[]>();
            int at = 0;
            while (at < data.Length)
            {
                int nameLength = data[at++];
                if (at + nameLength + 4 > data.Length) throw new IOException("malformed ZMTP property");
                string name = Encoding.ASCII.GetString(data, at, nameLength);
                at += nameLength;
                int valueLength = (data[at] << 24) | (data[at + 1] << 16) | (data[at + 2] << 8) | data[at + 3];
                at += 4;
                if (valueLength < 0 || at + valueLength > data.Length) throw new IOException("malformed ZMTP property");
                var value = new byte[valueLength];
                Buffer.BlockCopy(data, at, value, 0, valueLength);
                at += valueLength;
                properties[name] = value;
            }
            return properties;
        }

        /// <summary>Splits bytes into frames (for tests and golden vectors); throws on a truncated frame.</summary>
        public static List<Frame> DecodeFrames(byte[] data)
        {
            var frames = new List<Frame>();
            var reader = new FrameReader(new MemoryStream(data));
            long end = data.Length;
            while (reader.Position < end) frames.Add(reader.ReadFrame());
            return frames;
        }

        /// <summary>Reads frames from a stream through its own buffer (NetworkStream reads are syscalls).</summary>
        public sealed class FrameReader
        {
            readonly Stream _stream;
            readonly byte[] _buffer = new byte[64 * 1024];
            int _start;
            int _end;
            long _consumed;

            public FrameReader(Stream stream)
            {
                _stream = stream;
            }

            public long Position { get { return _consumed; } }

            public Frame ReadFrame()
            {
                byte flags = ReadByte();
                long length;
                if ((flags & 0x02) != 0)
                {
                    length = 0;
                    for (int i = 0; i < 8; i++) length = (length << 8) | ReadByte();
                }
                else
                {
                    length = ReadByte();
                }
                if (length < 0 || length > MaxFrameSize) throw new IOException("ZMTP frame of " + length + " bytes is too large");
                var body = new byte[length];
                Read(body, 0, (int)length);
                return new Frame { More = (flags & 0x01) != 0, IsCommand = (flags & 0x04) != 0, Body = body };
            }

            byte ReadByte()
            {
                if (_start == _end) Fill();
                _consumed++;
                return _buffer[_start++];
            }

            void Read(byte[] target, int offset, int count)
            {
                while (count > 0)
                {
                    if (_start == _end)
                    {
                        if (count >= _buffer.Length)
                        {
                            // Large bodies go straight into their array.
                            int n = _stream.Read(target, offset, count);
                            if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                            offset += n;
                            count -= n;
                            _consumed += n;
                            continue;
                        }
                        Fill();
                    }
                    int take = Math.Min(count, _end - _start);
                    Buffer.BlockCopy(_buffer, _start, target, offset, take);
                    _start += take;
                    offset += take;
                    count -= take;
                    _consumed += take;
                }
            }

            void Fill()
            {
                int n = _stream.Read(_buffer, 0, _buffer.Length);
                if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                _start = 0;
                _end = n;
            }
        }
    }

    #endregion

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
