// Tests.Server.cs: the C# client's tests (Tests.cs runs them) against the server: paths,
// batches, packed answers, errors, events, a live edit, uploads.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
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
}
