// PathServerClient.cs: the C# client for pathserver (wire protocol: docs/protocol.md): the
// client's properties and public API. The client is the PathServerClient*.cs files together,
// one partial class PathServerClient over several files, one concern a file (listed below).
//
// Drop those files into a Unity project (Assets/) or a Godot 4 .NET project. They use the base
// class library only (System.Net.Sockets, System.Threading.Tasks): no NuGet packages, no native
// plugins. The client speaks ZeroMQ's wire protocol (ZMTP 3.x, NULL mechanism, as a DEALER
// socket) over a TcpClient and a msgpack subset (nil, bool, int, float32/64, str, bin, array,
// map; ext is decoded opaquely).
//
//     using PathServer;
//     var client = new PathServerClient("tcp://127.0.0.1:5555") { DefaultMap = "example" };
//     PathResult result = await client.FindPathAsync(new PathPoint(1, 1), new PathPoint(30, 12), 2);
//     foreach (PathPoint p in result.Path) { ... }
//
// The files:
//   PathServerClient.cs           the client: its properties, events and public API (this file).
//   PathServerClient.Values.cs    what goes into a request and comes out of a reply: PathPoint,
//                                 UnitSize, GridRect, CoordinateSpace, PathStatus, PathRequest,
//                                 PathResult, PackedPaths, PackedStatus, MapInfo, MapData; the
//                                 values of the queries beyond one path (AvoidSet, TraversalRules,
//                                 Traversal, IndexPair, ReachableResult, DistanceField,
//                                 NextStepsResult, CheckBlockResult); errors (PathServerErrorCodes,
//                                 PathServerException); the EventArgs of PathFound, PathFailed
//                                 and ConnectionChanged.
//   PathServerClient.Hexes.cs     hex maps: MapShape, HexLayout, HexShape (PutMapAsync's hex) and
//                                 PathServerHexes, the coordinate helpers (offset <-> axial and
//                                 cube, distance, neighbours, centres, the cell holding a point).
//   PathServerClient.Floors.cs    maps of several floors and their links: MapLink (PutMapAsync's
//                                 and UpdateAsync's links), LinkStep (PathResult.Links), and the
//                                 floors the client knows each map to have (KnownFloors).
//   PathServerClient.Options.cs   PathOptions and its option table, one row an option.
//   PathServerClient.Queries.cs   packed answers and the synchronous calls (FindPath,
//                                 FindPathsPacked: they block up to the timeout and return a
//                                 result that says why it failed); the queries beyond one path
//                                 (FindPathToAnyAsync, ReachableAsync, DistanceFieldAsync,
//                                 NextStepsAsync, CheckBlockAsync).
//   PathServerClient.Requests.cs  the main-thread event queue; requests (ids, timeouts, replies)
//                                 and the reading of replies.
//   PathServerClient.Zmtp.cs      the connection (reader and writer threads, handshake,
//                                 heartbeats, reconnects) and Zmtp (internal): ZMTP 3.x framing
//                                 with the NULL mechanism.
//   PathServerClient.MsgPack.cs   MsgPack (internal): the msgpack encoder and decoder.
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
// Converting vectors (these files reference no engine assembly):
//     Unity:  new PathPoint(v.x, v.y)      and back: new Vector2(p.X, p.Y)
//     Godot:  new PathPoint(v.X, v.Y)      and back: new Vector2(p.X, p.Y)

using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;

namespace PathServer
{
    /// <summary>
    /// A pathserver client: many requests in flight over one connection, replies matched by id,
    /// reconnects with back-off and re-sends what was in flight (the ZeroMQ Guide's Lazy Pirate).
    /// Thread-safe. Set the properties before the first request; Dispose() when done.
    /// </summary>
    public sealed partial class PathServerClient : IDisposable
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
        /// Ask for packed answers (docs/protocol.md): paths come as one bin, read straight into the
        /// PathPoint arrays; a packed batch's results lack Length, Expanded, the snapped flags and
        /// GoalIndex. Off by default (older servers refuse it); the synchronous calls and
        /// FindPathsPackedAsync always ask.
        /// </summary>
        public bool PackedAnswers { get; set; }
        /// <summary>Queue events for DrainMainThreadQueue() (default) instead of raising them on a background thread.</summary>
        public bool DispatchEventsOnMainThread { get; set; } = true;
        /// <summary>Diagnostics (connects, disconnects, unmatched replies, dropped events); called from background threads.</summary>
        public Action<string> Log { get; set; }

        /// <summary>
        /// The most events (and Posted actions) the main-thread queue holds: DefaultEventQueueCapacity
        /// unless set, at least 1. When it is full the oldest is dropped, counted in DroppedEventCount
        /// and logged. Awaited tasks never go through the queue.
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
            bool anyFloor = false;
            for (int i = 0; i < items.Length; i++)
            {
                var goals = requests[i].Goals;
                items[i] = goals == null
                    ? new MsgPackMap { { "start", PointToWire(requests[i].Start) }, { "goal", PointToWire(requests[i].Goal) } }
                    : new MsgPackMap { { "start", PointToWire(requests[i].Start) }, { "goals", PointsToWire(goals, "goals") } };
                anyFloor |= requests[i].Start.Floor != 0 || requests[i].Goal.Floor != 0 || AnyFloor(goals);
            }
            string map = MapName(options);
            var body = new MsgPackMap { { "op", "paths" }, { "map", map }, { "unit_size", unitSize.ToWire() } };
            options.WriteTo(body, "paths", Triples(map, options, anyFloor));
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
                for (int i = 0; i < maps.Length; i++)
                {
                    list[i] = ParseMapInfo(maps[i] as IDictionary<string, object>);
                    RememberFloors(list[i].Name, list[i].Floors);
                }
                return list;
            });
        }

        /// <summary>
        /// A live edit (op "update", idempotent): makes rects' cells (grid cells, each rectangle on
        /// its Floor) solid or open, sets their cost, or both (solid false and a cost); and/or, with
        /// links, replaces the map's links by that whole list (empty: none), as a door or a lift
        /// opens and closes; rects may then be null. Returns the map's new generation. With ifGen
        /// it applies only at that generation, else throws "conflict" with Gen the current one.
        /// </summary>
        public Task<long> UpdateAsync(string map, IEnumerable<GridRect> rects, bool? solid = null, double? cost = null,
            CancellationToken ct = default(CancellationToken), long? ifGen = null, IList<MapLink> links = null)
        {
            return SendAsync(UpdateBody(map ?? DefaultMap, rects, solid, cost, ifGen, links), null, ct, (id, reply) => GenOf(reply, id));
        }

        // The body of an update request, without its id, in the key order of docs/protocol.md.
        internal static MsgPackMap UpdateBody(string map, IEnumerable<GridRect> rects, bool? solid, double? cost, long? ifGen,
            IList<MapLink> links)
        {
            if (rects == null && links == null) throw new ArgumentNullException("rects", "Give rects to edit, links to replace, or both.");
            if (rects != null && !solid.HasValue && !cost.HasValue) throw new ArgumentException("Give solid, cost or both.");
            if (rects == null && (solid.HasValue || cost.HasValue)) throw new ArgumentException("solid and cost edit rects: give rects.");
            if (solid == true && cost.HasValue) throw new ArgumentException("A solid cell has no cost: give solid false with a cost.");
            var body = new MsgPackMap { { "op", "update" }, { "map", map } };
            if (rects != null)
            {
                var wireRects = new List<object>();
                foreach (var r in rects) wireRects.Add(RectToWire(r));
                body.Add("rects", wireRects);
            }
            if (solid.HasValue) body.Add("solid", solid.Value);
            if (cost.HasValue) body.Add("cost", cost.Value);
            if (links != null) body.Add("links", LinksToWire(links));
            if (ifGen.HasValue) body.Add("if_gen", ifGen.Value);
            return body;
        }

        // tagNames and classes come after ct so that earlier positional calls keep compiling.
        /// <summary>
        /// Uploads a map of width x height cells under name (op "put_map"); returns its generation.
        /// cells: a byte a cell, row-major (y * width + x), 0 blocked, 1..255 the terrain cost; costs,
        /// heights and tags are optional layers of width * height; origin and cellSize place it in
        /// the world; tagNames and classes name tags and unit classes for PathOptions.Traversal.
        /// hex makes it a hex map: its layout and tile size (which then goes as cell_size; give no
        /// cellSize with it). floors (1 to 16) makes a map of several storeys: cells and every
        /// other layer then hold floors layers of width * height, floor 0 first (cell (x, y) of
        /// floor f at (f * height + y) * width + x); links (ladders, teleporters, one-way drops)
        /// join cells, of one floor or two. Uploading a name again replaces the map; a map file's
        /// name throws "conflict".
        /// </summary>
        public Task<long> PutMapAsync(string name, int width, int height, byte[] cells, float[] costs = null,
            float[] heights = null, byte[] tags = null, PathPoint? origin = null, double? cellSize = null,
            TimeSpan? timeout = null, CancellationToken ct = default(CancellationToken),
            IDictionary<string, int> tagNames = null, IDictionary<string, TraversalRules> classes = null,
            HexShape? hex = null, int? floors = null, IList<MapLink> links = null)
        {
            if (cells == null) throw new ArgumentNullException("cells");
            name = name ?? DefaultMap;
            var body = PutMapBody(name, width, height, cells, costs, heights, tags, origin, cellSize, tagNames, classes, hex, floors, links);
            return SendAsync(body, timeout, ct, (id, reply) =>
            {
                long gen = GenOf(reply, id);
                RememberFloors(name, floors ?? 1);
                return gen;
            });
        }

        // The body of a put_map request, without its id, in the key order of docs/protocol.md.
        internal static MsgPackMap PutMapBody(string name, int width, int height, byte[] cells, float[] costs = null,
            float[] heights = null, byte[] tags = null, PathPoint? origin = null, double? cellSize = null,
            IDictionary<string, int> tagNames = null, IDictionary<string, TraversalRules> classes = null,
            HexShape? hex = null, int? floors = null, IList<MapLink> links = null)
        {
            if (hex.HasValue && cellSize.HasValue)
                throw new ArgumentException("A hex map's cell size is its tile size: give hex or cellSize, not both.", "cellSize");
            var body = new MsgPackMap { { "op", "put_map" }, { "map", name }, { "width", (long)width },
                { "height", (long)height } };
            if (floors.HasValue) body.Add("floors", (long)floors.Value);
            body.Add("cells", cells);
            if (costs != null) body.Add("costs", Float32Bytes(costs));
            if (heights != null) body.Add("heights", Float32Bytes(heights));
            if (hex.HasValue)
            {
                body.Add("shape", "hex");
                body.Add("layout", PathServerHexes.ToWire(hex.Value.Layout));
            }
            if (origin.HasValue) body.Add("origin", new object[] { (double)origin.Value.X, (double)origin.Value.Y });
            if (cellSize.HasValue) body.Add("cell_size", cellSize.Value);
            if (hex.HasValue) body.Add("cell_size", new object[] { hex.Value.TileWidth, hex.Value.TileHeight });
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
            if (links != null) body.Add("links", LinksToWire(links));
            return body;
        }

        /// <summary>
        /// The cells of a map (op "get_map"), uploaded or served from a file, live edits included: the
        /// whole map, or region (which must lie inside the map, else "out_of_bounds" at "region"; on
        /// a map of several floors, the same window on each), its floors and links too.
        /// </summary>
        public Task<MapData> GetMapAsync(string name, GridRect? region = null, TimeSpan? timeout = null,
            CancellationToken ct = default(CancellationToken))
        {
            var body = new MsgPackMap { { "op", "get_map" }, { "map", name ?? DefaultMap } };
            if (region.HasValue) body.Add("region", RegionToWire(region.Value, "region"));
            return SendAsync(body, timeout, ct, (id, reply) =>
            {
                var map = ParseMapData(reply, id);
                RememberFloors(map.Name, map.Floors);
                return map;
            });
        }

        /// <summary>
        /// Stops serving an uploaded map (op "drop_map"); returns the generation dropped. Requests
        /// already in flight on it finish. An unknown name throws "unknown_map", a map file's name
        /// "conflict".
        /// </summary>
        public Task<long> DropMapAsync(string name, CancellationToken ct = default(CancellationToken))
        {
            name = name ?? DefaultMap;
            var body = new MsgPackMap { { "op", "drop_map" }, { "map", name } };
            return SendAsync(body, null, ct, (id, reply) =>
            {
                long gen = GenOf(reply, id);
                RememberFloors(name, 1);
                return gen;
            });
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
    }
}
