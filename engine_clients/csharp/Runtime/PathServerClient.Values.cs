// PathServerClient.Values.cs: the values of the pathserver C# client (PathServerClient.cs lists its
// files): what goes into a request and comes out of a reply, errors and events.

using System;
using System.Collections.Generic;
using System.Globalization;

namespace PathServer
{
    #region Values

    /// <summary>
    /// A point (x, y): world units by default, cells when PathOptions.Space is Grid; on a map of
    /// several floors, on Floor (0, the first, unless given). A point on floor 0 goes out as
    /// [x, y], another as [x, y, floor]; replies on a map of several floors set Floor on every point.
    /// </summary>
    public struct PathPoint : IEquatable<PathPoint>
    {
        public float X { get; }
        public float Y { get; }
        /// <summary>The floor (storey) of a map with several, 0 the first; 0 on a map of one.</summary>
        public int Floor { get; }

        public PathPoint(float x, float y)
        {
            X = x;
            Y = y;
            Floor = 0;
        }

        public PathPoint(float x, float y, int floor)
        {
            X = x;
            Y = y;
            Floor = floor;
        }

        public bool Equals(PathPoint other) { return X.Equals(other.X) && Y.Equals(other.Y) && Floor == other.Floor; }
        public override bool Equals(object obj) { return obj is PathPoint && Equals((PathPoint)obj); }
        public override int GetHashCode() { return (X.GetHashCode() * 397 ^ Y.GetHashCode()) * 397 ^ Floor; }
        public static bool operator ==(PathPoint a, PathPoint b) { return a.Equals(b); }
        public static bool operator !=(PathPoint a, PathPoint b) { return !a.Equals(b); }

        /// <summary>"(x, y)" on floor 0, "(x, y, floor)" on another.</summary>
        public override string ToString()
        {
            if (Floor == 0) return string.Format(CultureInfo.InvariantCulture, "({0}, {1})", X, Y);
            return string.Format(CultureInfo.InvariantCulture, "({0}, {1}, {2})", X, Y, Floor);
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
    /// On a map of several floors, UpdateAsync's, AvoidSet's and CheckBlockAsync's lie on Floor;
    /// a region (GetMapAsync's, PathOptions.Region) is the same window on every floor and has none.
    /// </summary>
    public struct GridRect
    {
        public int X { get; }
        public int Y { get; }
        public int Width { get; }
        public int Height { get; }
        /// <summary>The floor the rectangle lies on, 0 the first.</summary>
        public int Floor { get; }

        public GridRect(int x, int y, int width, int height)
        {
            X = x;
            Y = y;
            Width = width;
            Height = height;
            Floor = 0;
        }

        public GridRect(int x, int y, int width, int height, int floor)
        {
            X = x;
            Y = y;
            Width = width;
            Height = height;
            Floor = floor;
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
        /// <summary>Start and goal included, in the requested space; empty for NoPath. On a map of several floors each point has its Floor.</summary>
        public PathPoint[] Path { get; internal set; } = new PathPoint[0];
        /// <summary>
        /// The links the path takes, in order: the move from Path[s.PathIndex] to the next point
        /// is the map's link s.Link (a ladder's animation can play there). Empty when it takes
        /// none, and in a packed batch's results (ask without packing for them).
        /// </summary>
        public LinkStep[] Links { get; internal set; } = new LinkStep[0];
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
    /// A batch's packed answer (FindPathsPackedAsync, FindPathsPacked): one array an item, every
    /// entry's points in one PathPoint array; entry i's are PathOf(i). Failed entries have their
    /// error in Errors; from FindPathsPacked, a failure of the whole batch is Error, with Count 0.
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
        /// <summary>One floor's size in cells.</summary>
        public int Width { get; internal set; }
        public int Height { get; internal set; }
        /// <summary>How many floors (storeys) the map has, 1 to 16.</summary>
        public int Floors { get; internal set; } = 1;
        public double CellSize { get; internal set; }
        /// <summary>A cell's (a hex map's tile's) world width and height; both CellSize on a square map.</summary>
        public double CellWidth { get; internal set; }
        public double CellHeight { get; internal set; }
        /// <summary>Square or Hex; on a hex map Layout says how its cells sit (null on square maps).</summary>
        public MapShape Shape { get; internal set; }
        public HexLayout? Layout { get; internal set; }
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
    /// A map's cells as GetMapAsync returns them: Cells covers Region, row-major (index
    /// y * Region.Width + x), 0 blocked, else the cost rounded to 1..255; on a map of several
    /// floors, Floors such layers, floor 0 first (this[x, y, floor]). Costs (exact), Heights and
    /// Tags when the map has them, else null, laid out as Cells. Width and Height are the whole
    /// map's, one floor's size. Links are the map's, as PutMapAsync takes them.
    /// </summary>
    public sealed class MapData
    {
        public string Name { get; internal set; }
        public long Gen { get; internal set; }
        public int Width { get; internal set; }
        public int Height { get; internal set; }
        public PathPoint Origin { get; internal set; }
        /// <summary>A cell's world size; on a hex map whose tiles are not as wide as tall, their width.</summary>
        public double CellSize { get; internal set; }
        /// <summary>A cell's (a hex map's tile's) world width and height; both CellSize on a square map.</summary>
        public double CellWidth { get; internal set; }
        public double CellHeight { get; internal set; }
        /// <summary>Square or Hex; on a hex map Layout says how its cells sit (null on square maps).</summary>
        public MapShape Shape { get; internal set; }
        public HexLayout? Layout { get; internal set; }
        public GridRect Region { get; internal set; }
        /// <summary>How many floors the map has (1 to 16); every layer holds Region's cells of each.</summary>
        public int Floors { get; internal set; } = 1;
        /// <summary>The map's links (ladders, teleporters, drops); empty when it has none.</summary>
        public MapLink[] Links { get; internal set; } = new MapLink[0];
        public byte[] Cells { get; internal set; }
        public float[] Costs { get; internal set; }
        public float[] Heights { get; internal set; }
        public byte[] Tags { get; internal set; }
        /// <summary>The names of the tag values (put_map's tagNames); null when the map names none.</summary>
        public IDictionary<string, int> TagNames { get; internal set; }
        /// <summary>The map's unit classes (put_map's classes); null when it has none.</summary>
        public IDictionary<string, TraversalRules> Classes { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }

        /// <summary>The cell at (x, y) of the region (region coordinates), on floor 0.</summary>
        public byte this[int x, int y] { get { return Cells[y * Region.Width + x]; } }

        /// <summary>The cell at (x, y) of the region (region coordinates) on floor.</summary>
        public byte this[int x, int y, int floor] { get { return Cells[(floor * Region.Height + y) * Region.Width + x]; } }
    }

    #endregion

    #region Values of the queries beyond one path

    /// <summary>
    /// Grid cells one request treats as solid (PathOptions.Avoid), such as other units standing
    /// still; the shared map is untouched. Reuse one frame after frame: Clear, then AddCell,
    /// AddCells or AddRect. The server takes at most 65 536 cells and rectangles together.
    /// </summary>
    public sealed class AvoidSet
    {
        // x, y of each cell in turn, as the wire's bin of pairs orders them, so ToWire is one
        // pass; each cell's floor beside, in _floors, which a map of several floors needs.
        readonly List<int> _cells = new List<int>();
        readonly List<int> _floors = new List<int>();
        readonly List<GridRect> _rects = new List<GridRect>();
        bool _onFloors;

        public int CellCount { get { return _cells.Count / 2; } }
        public int RectCount { get { return _rects.Count; } }

        /// <summary>Avoids the grid cell (x, y) (on floor 0 of a map with several).</summary>
        public AvoidSet AddCell(int x, int y)
        {
            return AddCell(x, y, 0);
        }

        /// <summary>Avoids the grid cell (x, y) on floor, on a map of several floors.</summary>
        public AvoidSet AddCell(int x, int y, int floor)
        {
            _cells.Add(x);
            _cells.Add(y);
            _floors.Add(floor);
            _onFloors |= floor != 0;
            return this;
        }

        /// <summary>A cell or rectangle is on a floor above 0: the set is for a map of several floors.</summary>
        public bool HasFloors { get { return _onFloors; } }

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
            for (int i = 0; i < xy.Length / 2; i++) _floors.Add(0);
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
            for (int i = 0; i < count; i++) _floors.Add(0);
            return this;
        }

        /// <summary>Avoids the cells of rect (on its Floor).</summary>
        public AvoidSet AddRect(GridRect rect)
        {
            _rects.Add(rect);
            _onFloors |= rect.Floor != 0;
            return this;
        }

        public void Clear()
        {
            _cells.Clear();
            _floors.Clear();
            _rects.Clear();
            _onFloors = false;
        }

        // {cells, rects: [[x, y, w, h], ...]}, each key only when it has entries. cells: a bin
        // of x, y pairs (points on floor 0, the compact form), or with floors (a map of several
        // floors) an array of [x, y, floor]: a request's bins hold pairs only (docs/protocol.md,
        // "Floors and links"). The int32s are written byte by byte, lowest first, so a
        // big-endian machine sends the same bytes; the wire's bin is little-endian whatever the sender.
        internal MsgPackMap ToWire(bool floors = false)
        {
            var wire = new MsgPackMap();
            if (_cells.Count > 0 && (floors || _onFloors))
            {
                var cells = new object[_floors.Count];
                for (int i = 0; i < cells.Length; i++)
                    cells[i] = new object[] { (long)_cells[2 * i], (long)_cells[2 * i + 1], (long)_floors[i] };
                wire.Add("cells", cells);
            }
            else if (_cells.Count > 0)
            {
                var cells = new byte[_floors.Count * 8];
                for (int i = 0, at = 0; i < _floors.Count; i++, at += 8)
                {
                    PathServerClient.WriteInt32(cells, at, _cells[2 * i]);
                    PathServerClient.WriteInt32(cells, at + 4, _cells[2 * i + 1]);
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
        /// <summary>On a map of several floors, Count ints: the floor of each cell; null on a map of one.</summary>
        public int[] Floors { get; internal set; }
        /// <summary>Count costs, ascending.</summary>
        public float[] Costs { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }
    }

    /// <summary>
    /// DistanceFieldAsync's answer (a Dijkstra map): each cell's cost to the nearest goal over
    /// Region (grid cells), row-major: Costs[y * Width + x] for region coordinates (x, y);
    /// +infinity where the unit cannot stand or reach a goal, or beyond PathOptions.MaxCost. On a
    /// map of several floors, Floors such layers of Region, floor 0 first (this[x, y, floor]).
    /// </summary>
    public sealed class DistanceField
    {
        public string Map { get; internal set; }
        public long Gen { get; internal set; }
        /// <summary>The cells returned: X, Y is the origin (upper-left cell), then Width x Height.</summary>
        public GridRect Region { get; internal set; }
        public int Width { get { return Region.Width; } }
        public int Height { get { return Region.Height; } }
        /// <summary>The map's floors: Costs holds Width * Height * Floors values.</summary>
        public int Floors { get; internal set; } = 1;
        public float[] Costs { get; internal set; }
        public IDictionary<string, object> Raw { get; internal set; }

        /// <summary>The cost at (x, y) of the region (region coordinates), on floor 0.</summary>
        public float this[int x, int y] { get { return Costs[y * Region.Width + x]; } }

        /// <summary>The cost at (x, y) of the region (region coordinates) on floor.</summary>
        public float this[int x, int y, int floor] { get { return Costs[(floor * Region.Height + y) * Region.Width + x]; } }
    }

    /// <summary>
    /// NextStepsAsync's answer for Count units: Steps[2 * i], Steps[2 * i + 1] is where unit i heads
    /// next, Remaining[i] its cost to the nearest goal (+infinity: none; its step is then its own
    /// cell). They are the caller's arrays (or new ones); only the first Count units' items are set.
    /// </summary>
    public sealed class NextStepsResult
    {
        public string Map { get; internal set; }
        public long Gen { get; internal set; }
        public int Count { get; internal set; }
        /// <summary>x, y of each unit's step (the overloads of float positions); null from the PathPoint one.</summary>
        public float[] Steps { get; internal set; }
        /// <summary>Each unit's step, its Floor included (the overload of PathPoint positions); null from the float ones.</summary>
        public PathPoint[] Points { get; internal set; }
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
}
