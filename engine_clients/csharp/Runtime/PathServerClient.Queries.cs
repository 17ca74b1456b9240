// PathServerClient.Queries.cs: part of the pathserver C# client (PathServerClient.cs lists its
// files): packed answers and the synchronous calls; the queries beyond one path.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace PathServer
{
    public sealed partial class PathServerClient
    {
        #region Packed answers and the synchronous calls

        /// <summary>
        /// The synchronous path: var result = client.FindPath(a, b, 1). Blocks until the answer or
        /// the timeout (options.Timeout, else RequestTimeout). Never throws for a failed request:
        /// Status is then Failed and Error says why. Raises no events. For many units a frame, use
        /// FindPathsPacked (one round trip) or FindPathAsync.
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
        /// Many paths in one round trip, sent and answered packed: entry i from starts[i] to
        /// goals[i], all with unitSize and options. A failed entry has Status Failed and its error in
        /// Errors; a failure of the whole batch throws. Grid coordinates are floored to their cells.
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
            string map = MapName(options);
            bool triples = Triples(map, options, AnyFloor(starts) || AnyFloor(goals));
            var body = new MsgPackMap { { "op", "paths" }, { "map", map }, { "unit_size", unitSize.ToWire() } };
            options.WriteTo(body, "paths", triples);
            AddPacked(body, true);
            if (triples)
            {
                // Points on floors: the batch's entries as requests (a request's bins hold pairs
                // only, points on floor 0); the packed reply is the same.
                var entries = new object[starts.Count];
                for (int i = 0; i < entries.Length; i++)
                    entries[i] = new MsgPackMap { { "start", PointToWire(starts[i]) }, { "goal", PointToWire(goals[i]) } };
                body.Add("requests", entries);
                return body;
            }
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

        // Points as the wire's bin of little-endian pairs (a request's bins: floor 0), or x, y,
        // floor triples (a reply's on a map of several floors): int32 cells (floored) in grid
        // space, float32 in world space.
        internal static byte[] PointsToBin(IList<PathPoint> points, CoordinateSpace space, bool triples = false)
        {
            return PointsToBin(points, space == CoordinateSpace.Grid, triples);
        }

        static byte[] PointsToBin(IList<PathPoint> points, bool asInt32, bool triples)
        {
            int size = triples ? 12 : 8;
            var bytes = new byte[points.Count * size];
            for (int i = 0; i < points.Count; i++)
            {
                var point = points[i];
                WritePointItem(bytes, size * i, point.X, asInt32);
                WritePointItem(bytes, size * i + 4, point.Y, asInt32);
                if (triples) WritePointItem(bytes, size * i + 8, point.Floor, asInt32);
            }
            return bytes;
        }

        static void WritePointItem(byte[] bytes, int at, float value, bool asInt32)
        {
            WriteInt32(bytes, at, asInt32 ? (int)Math.Floor(value) : new FloatBits { Float = value }.Int);
        }

        // Little-endian, whatever this machine's byte order.
        internal static void WriteInt32(byte[] bytes, int at, int value)
        {
            bytes[at] = (byte)value;
            bytes[at + 1] = (byte)(value >> 8);
            bytes[at + 2] = (byte)(value >> 16);
            bytes[at + 3] = (byte)(value >> 24);
        }

        // A bin of pairs (or triples) as new points (one array: no allocation per point).
        internal static PathPoint[] PointsFromBin(byte[] bytes, CoordinateSpace space, bool triples, string field, long id)
        {
            int size = triples ? 12 : 8;
            if (bytes.Length % size != 0)
                throw new PathServerException(PathServerErrorCodes.BadReply, "\"" + field + "\" is " + bytes.Length + " bytes, not " + size + " a point",
                    null, false, null, id);
            var points = new PathPoint[bytes.Length / size];
            ReadPoints(bytes, space == CoordinateSpace.Grid, triples, points, 0, points.Length);
            return points;
        }

        // count points of bytes (pairs, or triples) into points from index at; int32 or float32 items.
        static void ReadPoints(byte[] bytes, bool asInt32, bool triples, PathPoint[] points, int at, int count)
        {
            int size = triples ? 12 : 8;
            for (int i = 0, b = 0; i < count; i++, b += size)
            {
                int x = (int)UInt32At(bytes, b), y = (int)UInt32At(bytes, b + 4), floor = triples ? (int)UInt32At(bytes, b + 8) : 0;
                points[at + i] = asInt32
                    ? new PathPoint(x, y, floor)
                    : new PathPoint(new FloatBits { Int = x }.Float, new FloatBits { Int = y }.Float,
                        triples ? (int)new FloatBits { Int = floor }.Float : 0);
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
            // Pairs, or triples on a map of several floors: the counts say which.
            var bin = BinField(reply, "points", -1, id);
            bool triples = total > 0 && bin.Length == 12 * total;
            if (bin.Length != (triples ? 12 : 8) * total)
                throw new PathServerException(PathServerErrorCodes.BadReply, "packed \"paths\" reply: \"points\" is " + bin.Length + " bytes for "
                    + total + " points", null, false, null, id);
            answer.Points = new PathPoint[total];
            ReadPoints(bin, space == CoordinateSpace.Grid, triples, answer.Points, 0, (int)total);
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
        /// result's GoalIndex says which was reached (null when none is). Otherwise as FindPathAsync,
        /// PathFound / PathFailed included.
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
        /// Steers many units toward the nearest of goals (op "next_steps"): positions holds x, y of
        /// each unit. Writes steps[2 * i], steps[2 * i + 1] (where unit i heads next) and remaining[i]
        /// (its cost to a goal, +infinity: none); reuse the arrays each frame, read them once the task
        /// completes. Without System.Span, define PATHSERVER_NO_SPAN and use the array overloads.
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
        /// Would making cells and rects solid (in options.Space units) cut any of points off from
        /// each other for this unit size (op "check_block")? The map is not changed. Give rects,
        /// cells or both.
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
            string map = MapName(options);
            var body = new MsgPackMap { { "op", "reachable" }, { "map", map }, { "start", PointToWire(start) },
                { "budget", NumberToWire(budget) } };
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "reachable", Triples(map, options, start.Floor != 0));
            return body;
        }

        internal MsgPackMap FieldBody(IList<PathPoint> goals, UnitSize unitSize, PathOptions options)
        {
            string map = MapName(options);
            var body = new MsgPackMap { { "op", "field" }, { "map", map }, { "goals", PointsToWire(goals, "goals") } };
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "field", Triples(map, options, AnyFloor(goals)));
            return body;
        }

        // positions: a bin of float32 pairs, or (triples: points on floors) an array of [x, y, floor];
        // avoid's cells go so too.
        internal MsgPackMap NextStepsBody(IList<PathPoint> goals, UnitSize unitSize, object positions, PathOptions options, bool triples = false)
        {
            var body = new MsgPackMap { { "op", "next_steps" }, { "map", MapName(options) }, { "goals", PointsToWire(goals, "goals") },
                { "positions", positions } };
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "next_steps", triples);
            return body;
        }

        internal MsgPackMap CheckBlockBody(IList<PathPoint> points, IList<GridRect> rects, IList<PathPoint> cells, UnitSize unitSize,
            PathOptions options)
        {
            string map = MapName(options);
            var body = new MsgPackMap { { "op", "check_block" }, { "map", map } };
            if (rects != null && rects.Count > 0)
            {
                var wire = new object[rects.Count];
                for (int i = 0; i < wire.Length; i++) wire[i] = RectToWire(rects[i]);
                body.Add("rects", wire);
            }
            if (cells != null && cells.Count > 0) body.Add("cells", PointsToWire(cells, "cells"));
            body.Add("points", PointsToWire(points, "points"));
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "check_block", Triples(map, options, AnyFloor(points) || AnyFloor(cells)));
            return body;
        }

        Task<NextStepsResult> SendNextSteps(IList<PathPoint> goals, UnitSize unitSize, byte[] positions, int count, float[] steps,
            float[] remaining, PathOptions options, CancellationToken ct)
        {
            options = options ?? new PathOptions();
            string map = MapName(options);
            if (Triples(map, options, AnyFloor(goals)))
                throw new ArgumentException("\"" + map + "\" is a map of several floors (or a goal or avoided cell is on a floor above 0): "
                    + "give the units' positions as PathPoints, which carry their floors.", "positions");
            var body = NextStepsBody(goals, unitSize, positions, options);
            return SendAsync(body, options.Timeout, ct, (id, reply) => ParseNextSteps(reply, id, count, steps, remaining));
        }

        /// <summary>
        /// NextStepsAsync with the units' positions as points, floors included (a map of several
        /// floors takes only these): steps[i] (its Floor too) is where unit i heads next, and
        /// remaining[i] its cost to a goal; the answer's Points is steps. Reuse the arrays each
        /// frame; they must hold positions.Count items.
        /// </summary>
        public Task<NextStepsResult> NextStepsAsync(IList<PathPoint> goals, UnitSize unitSize, IList<PathPoint> positions,
            PathPoint[] steps, float[] remaining, PathOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            if (positions == null) throw new ArgumentNullException("positions");
            if (steps == null) throw new ArgumentNullException("steps");
            if (remaining == null) throw new ArgumentNullException("remaining");
            int count = positions.Count;
            if (steps.Length < count || remaining.Length < count)
                throw new ArgumentException(count + " units need steps and remaining of " + count + " items; they hold " + steps.Length
                    + " and " + remaining.Length + ".", "steps");
            options = options ?? new PathOptions();
            bool triples = Triples(MapName(options), options, AnyFloor(goals) || AnyFloor(positions));
            // next_steps' positions are float32 whatever the space (a unit stands anywhere in its
            // cell); on floors, arrays of [x, y, floor] (a request's bins hold pairs only).
            object sent = triples ? (object)PointsToWire(positions, "positions") : PointsToBin(positions, false, false);
            var body = NextStepsBody(goals, unitSize, sent, options, triples);
            return SendAsync(body, options.Timeout, ct, (id, reply) => ParseNextStepPoints(reply, id, count, steps, remaining));
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
            // Pairs, or triples on a map of several floors: one cell a cost says which.
            bool triples = cells != null && costs != null && costs.Length > 0 && cells.Length == costs.Length * 3;
            if (costs == null || cells == null || costs.Length % 4 != 0 || (!triples && cells.Length != costs.Length * 2))
                throw new PathServerException(PathServerErrorCodes.BadReply, "reachable reply: \"cells\" and \"costs\" are not bins of int32 pairs (or triples) and float32",
                    null, false, null, id);
            var result = new ReachableResult { Raw = reply, Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id) };
            result.Count = costs.Length / 4;
            result.Costs = Float32Values(costs);
            result.Cells = new int[result.Count * 2];
            if (!triples)
            {
                CopyLittleEndian(cells, result.Cells, cells.Length);
                return result;
            }
            result.Floors = new int[result.Count];
            for (int i = 0; i < result.Count; i++)
            {
                result.Cells[2 * i] = (int)UInt32At(cells, 12 * i);
                result.Cells[2 * i + 1] = (int)UInt32At(cells, 12 * i + 4);
                result.Floors[i] = (int)UInt32At(cells, 12 * i + 8);
            }
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
            field.Floors = FloorsFromWire(reply);
            var cost = MsgPack.Get(reply, "cost") as byte[];
            if (cost == null || cost.Length != (long)field.Width * field.Height * field.Floors * 4)
                throw new PathServerException(PathServerErrorCodes.BadReply, "field reply: \"cost\" is not " + field.Width + " x " + field.Height + " x "
                    + field.Floors + " float32 of bin", null, false, null, id);
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

        // The PathPoint overload's answer: steps as a bin of float32 pairs, or triples on a map
        // of several floors (one step a unit says which).
        internal static NextStepsResult ParseNextStepPoints(IDictionary<string, object> reply, long id, int count,
            PathPoint[] steps, float[] remaining)
        {
            var remainingBytes = MsgPack.Get(reply, "remaining") as byte[];
            var stepItems = MsgPack.Get(reply, "steps") as object[];
            if (stepItems != null)
            {
                // Positions sent as arrays (points on floors) come back as arrays of [x, y, floor].
                if (stepItems.Length != count || remainingBytes == null || remainingBytes.Length != count * 4)
                    throw new PathServerException(PathServerErrorCodes.BadReply, "next_steps reply: \"steps\" and \"remaining\" do not hold "
                        + count + " points and floats", null, false, null, id);
                for (int i = 0; i < count; i++) steps[i] = PointFromWire(stepItems[i], "steps[" + i + "]");
                CopyLittleEndian(remainingBytes, remaining, remainingBytes.Length);
                return new NextStepsResult { Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id), Count = count, Points = steps, Remaining = remaining };
            }
            var stepBytes = MsgPack.Get(reply, "steps") as byte[];
            bool triples = stepBytes != null && count > 0 && stepBytes.Length == 12 * count;
            int size = triples ? 12 : 8;
            if (stepBytes == null || remainingBytes == null || stepBytes.Length != count * size || remainingBytes.Length != count * 4)
                throw new PathServerException(PathServerErrorCodes.BadReply, "next_steps reply: \"steps\" and \"remaining\" are not bins of "
                    + count + " float32 " + (triples ? "triples" : "pairs") + " and floats", null, false, null, id);
            ReadPoints(stepBytes, false, triples, steps, 0, count);
            CopyLittleEndian(remainingBytes, remaining, remainingBytes.Length);
            return new NextStepsResult { Map = MsgPack.Get(reply, "map") as string, Gen = GenOf(reply, id), Count = count, Points = steps, Remaining = remaining };
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

        // [x, y, w, h] on floor 0, [x, y, w, h, floor] on another.
        internal static object[] RectToWire(GridRect rect)
        {
            if (rect.Floor == 0) return new object[] { (long)rect.X, (long)rect.Y, (long)rect.Width, (long)rect.Height };
            return new object[] { (long)rect.X, (long)rect.Y, (long)rect.Width, (long)rect.Height, (long)rect.Floor };
        }

        // A region: [x, y, w, h], the same window on every floor.
        internal static object[] RegionToWire(GridRect region, string name)
        {
            if (region.Floor != 0)
                throw new ArgumentException("A region is the same window on every floor: give it no floor.", name);
            return RectToWire(region);
        }

        // Whole numbers go out as ints, as coordinates do.
        internal static object NumberToWire(double value)
        {
            if (value == Math.Floor(value) && Math.Abs(value) < 1e15) return (long)value;
            return value;
        }

        #endregion
    }
}
