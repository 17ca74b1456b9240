// Tests.Queries.cs: the C# client's tests (Tests.cs runs them) of the queries beyond one
// path: goals, reachable, field, next_steps, check_block, their errors, traversal and avoid.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- queries beyond one path

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
}
