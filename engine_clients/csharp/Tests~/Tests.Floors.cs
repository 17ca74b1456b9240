// Tests.Floors.cs: the C# client's tests (Tests.cs runs them) of maps with floors and links
// (docs/protocol.md, "Floors and links"): what PutMapAsync, UpdateAsync and the requests send
// (points and rectangles with a floor, links, points on floors as arrays), how replies with floors are read
// (points, a path's links, packed paths, reachable, field, get_map), and, against a server that
// takes floors, a tower of two floors with a ladder and a one-way drop on every op.

using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- floors and links

    static string Wire(object value) { return MsgPack.ToDebugString(value); }

    static Dictionary<string, object> Fields(MsgPackMap body)
    {
        return body.ToDictionary(pair => pair.Key, pair => pair.Value);
    }

    static string Keys(MsgPackMap body) { return string.Join(" ", body.Select(pair => pair.Key)); }

    // Little-endian int32s (or float32s) as a bin.
    static byte[] Int32Bin(params int[] values)
    {
        var bytes = new byte[4 * values.Length];
        for (int i = 0; i < values.Length; i++) PathServerClient.WriteInt32(bytes, 4 * i, values[i]);
        return bytes;
    }

    static byte[] Float32Bin(params float[] values) { return PathServerClient.Float32Bytes(values); }

    // PathPoint, GridRect, MapLink and LinkStep: floors in values, equality and text; the wire
    // forms of points, rectangles, links, put_map's floors and links and update's links.
    static async Task FloorsEncoding()
    {
        await Task.Yield();
        Equal("(1, 2) (1, 2, 1)", new PathPoint(1, 2) + " " + new PathPoint(1, 2, 1), "a point on floor 0 reads as before; another floor shows");
        Check(new PathPoint(1, 2) == new PathPoint(1, 2, 0) && new PathPoint(1, 2) != new PathPoint(1, 2, 1), "the floor is part of a point's equality");
        Equal("[1, 2] [1.5, 2, 3]", Wire(PathServerClient.PointToWire(new PathPoint(1, 2))) + " " + Wire(PathServerClient.PointToWire(new PathPoint(1.5f, 2, 3))),
            "points on the wire: [x, y] on floor 0, [x, y, floor] above");
        Equal("[0, 1, 2, 3] [0, 1, 2, 3, 1]", Wire(PathServerClient.RectToWire(new GridRect(0, 1, 2, 3))) + " " + Wire(PathServerClient.RectToWire(new GridRect(0, 1, 2, 3, 1))),
            "rectangles on the wire: [x, y, w, h] on floor 0, [x, y, w, h, floor] above");
        Check(Throws<ArgumentException>(() => PathServerClient.RegionToWire(new GridRect(0, 0, 1, 1, 1), "region")), "a region with a floor is refused before sending");

        var ladder = new MapLink(new PathPoint(0, 0), new PathPoint(0, 0, 1), 1, tag: "ladder");
        var drop = new MapLink(new PathPoint(4, 2, 1), new PathPoint(4, 2), 0.5, false);
        Check(ladder.TwoWay && !drop.TwoWay && drop.Tag == null, "TwoWay defaults to true; Tag to null");
        Equal("(0, 0) <-> (0, 0, 1) cost 1 ladder; (4, 2, 1) -> (4, 2) cost 0.5", ladder + "; " + drop, "MapLink's text");
        Equal("[2, 0]", new LinkStep(2, 0).ToString(), "LinkStep's text, as the wire's [i, k]");

        var cells = Enumerable.Repeat((byte)1, 2 * 5 * 3).ToArray();
        var body = PathServerClient.PutMapBody("tower", 5, 3, cells, floors: 2, links: new[] { ladder, drop });
        Equal("op map width height floors cells links", Keys(body), "put_map's keys with floors and links");
        var fields = Fields(body);
        Equal("2 30", fields["floors"] + " " + ((byte[])fields["cells"]).Length, "floors, and cells of both floors");
        Equal("[{\"from\": [0, 0], \"to\": [0, 0, 1], \"cost\": 1, \"two_way\": true, \"tag\": \"ladder\"}, "
            + "{\"from\": [4, 2, 1], \"to\": [4, 2], \"cost\": 0.5, \"two_way\": false}]", Wire(fields["links"]), "links on the wire");
        Equal("op map width height cells", Keys(PathServerClient.PutMapBody("flat", 2, 1, new byte[] { 1, 1 })), "no floors or links: put_map as before");
        Check(Throws<ArgumentException>(() => PathServerClient.LinksToWire(new MapLink[PathServerClient.MaxLinks + 1])), "more than 65 536 links refused before sending");

        body = PathServerClient.UpdateBody("tower", null, null, null, null, new[] { drop });
        Equal("op map links", Keys(body), "update with links alone");
        body = PathServerClient.UpdateBody("tower", new[] { new GridRect(1, 1, 1, 1, 1) }, true, null, 7, new MapLink[0]);
        Equal("op map rects solid links if_gen | [[1, 1, 1, 1, 1]] []", Keys(body) + " | " + Wire(Fields(body)["rects"]) + " " + Wire(Fields(body)["links"]),
            "update with a cell edit on floor 1 and no links left");
        Check(Throws<ArgumentException>(() => PathServerClient.UpdateBody("tower", null, null, null, null, null)), "update with neither rects nor links refused");
        Check(Throws<ArgumentException>(() => PathServerClient.UpdateBody("tower", null, true, null, null, new[] { drop })), "solid without rects refused");

        // A request's bins of points hold pairs (points on floor 0); where a point of the request
        // is on a floor above 0 (or the client knows the map has floors) they go as arrays of
        // [x, y, floor] instead, the avoided cells' too (docs/protocol.md, "Floors and links").
        using (var client = new PathServerClient("tcp://127.0.0.1:1", "tower"))
        {
            var options = new PathOptions { Space = CoordinateSpace.Grid, Avoid = new AvoidSet().AddCell(1, 2) };
            var flat = Fields(client.PathRequestBody(new PathPoint(4, 0), new PathPoint(3, 0), 1, options));
            Equal(Hex(Int32Bin(1, 2)), Hex((byte[])((MsgPackMap)flat["avoid"])[0].Value), "avoid's cells as pairs on a map of one floor");
            var up = Fields(client.PathRequestBody(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1, options));
            Equal("[4, 0] [4, 0, 1] [[1, 2, 0]]", Wire(up["start"]) + " " + Wire(up["goal"]) + " " + Wire(((MsgPackMap)up["avoid"])[0].Value),
                "a goal on floor 1: avoid's cells as [x, y, floor]");
            var upstairs = new PathOptions { Space = CoordinateSpace.Grid, Avoid = new AvoidSet().AddCell(1, 2, 1).AddRect(new GridRect(0, 0, 1, 1, 1)) };
            var avoid = (MsgPackMap)Fields(client.PathRequestBody(new PathPoint(4, 0), new PathPoint(3, 0), 1, upstairs))["avoid"];
            Equal("[[1, 2, 1]] [[0, 0, 1, 1, 1]]", Wire(avoid[0].Value) + " " + Wire(avoid[1].Value), "avoided cells and rectangles on floor 1");

            var packed = Fields(client.PackedPathsBody(new[] { new PathPoint(4, 0) }, new[] { new PathPoint(4, 0, 1) }, 1,
                new PathOptions { Space = CoordinateSpace.Grid }));
            var entry = Fields((MsgPackMap)((object[])packed["requests"])[0]);
            Equal("[4, 0] [4, 0, 1] True", Wire(entry["start"]) + " " + Wire(entry["goal"]) + " " + !packed.ContainsKey("starts"),
                "a packed batch with a point on floor 1: its entries as requests (no starts bin), the reply packed");
            Equal(1, client.KnownFloors("tower"), "a map the client has not seen has one floor");
            // next_steps' float overloads carry no floors: refused where floors are needed.
            Check(Throws<ArgumentException>(() => client.NextStepsAsync(new[] { new PathPoint(1, 1, 1) }, 1, new float[] { 0, 0 }, options).Wait()),
                "next_steps with float positions and a goal on floor 1: refused before sending");
        }
    }

    // Replies with floors: points with a third number, a path's links, packed paths of triples
    // (one path, a batch), reachable's cells, a field of two floors, get_map's floors and links.
    static async Task FloorsDecoding()
    {
        await Task.Yield();
        Func<int, int, int, object[]> point = (x, y, f) => new object[] { (long)x, (long)y, (long)f };
        var reply = new Dictionary<string, object>
        {
            { "id", 1L }, { "ok", true }, { "status", "found" },
            { "path", new object[] { point(4, 0, 0), point(0, 0, 0), point(0, 0, 1), point(4, 0, 1) } },
            { "cost", 9.0 }, { "start", point(4, 0, 0) }, { "goal", point(4, 0, 1) }, { "gen", 3L },
            { "links", new object[] { new object[] { 1L, 0L } } },
        };
        var path = PathServerClient.ParsePathReply(reply, 1);
        Equal("(4, 0) (0, 0) (0, 0, 1) (4, 0, 1) | [1, 0] | (4, 0, 1)", string.Join(" ", path.Path) + " | " + string.Join(" ", path.Links) + " | " + path.Goal,
            "a path across floors: its points' floors and the link it takes");
        reply["path"] = Int32Bin(4, 0, 0, 0, 0, 0, 0, 0, 1, 4, 0, 1);
        path = PathServerClient.ParsePathReply(reply, 1, CoordinateSpace.Grid);
        Equal("(4, 0) (0, 0) (0, 0, 1) (4, 0, 1)", string.Join(" ", path.Path), "a packed path of 4 triples (48 bytes, 6 pairs' length too): start says triples");
        reply["path"] = Float32Bin(19, 1, 0, 11, 1, 0, 11, 1, 1, 19, 1, 1);
        reply["start"] = new object[] { 19.0, 1.0, 0L };
        path = PathServerClient.ParsePathReply(reply, 1, CoordinateSpace.World);
        Equal("(19, 1) (11, 1) (11, 1, 1) (19, 1, 1)", string.Join(" ", path.Path), "a packed world path of float32 triples");
        reply.Remove("links");
        Equal(0, PathServerClient.ParsePathReply(reply, 1, CoordinateSpace.World).Links.Length, "no links: an empty Links");

        var batch = new Dictionary<string, object>
        {
            { "id", 2L }, { "ok", true }, { "gen", 3L }, { "status", new byte[] { 0, 2 } }, { "cost", Float32Bin(1, 0) },
            { "count", Int32Bin(2, 0) }, { "points", Int32Bin(0, 0, 0, 0, 0, 1) }, { "errors", new Dictionary<string, object>() },
        };
        var packed = PathServerClient.ParsePackedPaths(batch, 2, CoordinateSpace.Grid, 2);
        Equal("(0, 0) (0, 0, 1)", string.Join(" ", packed.PathOf(0)), "a packed batch of triples: the counts say 12 bytes a point");
        batch["points"] = Int32Bin(0, 0, 0, 0, 0);
        Check(Throws(() => PathServerClient.ParsePackedPaths(batch, 2, CoordinateSpace.Grid, 2)) == PathServerErrorCodes.BadReply,
            "points of neither pairs nor triples: bad_reply");

        var reachable = PathServerClient.ParseReachable(new Dictionary<string, object>
        {
            { "map", "tower" }, { "gen", 3L }, { "cells", Int32Bin(0, 0, 0, 1, 0, 0, 0, 0, 1) }, { "costs", Float32Bin(0, 1, 1) },
        }, 3);
        Equal("3: 0,0 1,0 0,0 on 0 0 1", reachable.Count + ": " + string.Join(" ", Enumerable.Range(0, 3).Select(i => reachable.Cells[2 * i] + "," + reachable.Cells[2 * i + 1]))
            + " on " + string.Join(" ", reachable.Floors), "reachable's cells as triples: Cells as pairs, Floors beside");
        Check(PathServerClient.ParseReachable(new Dictionary<string, object> { { "gen", 1L }, { "cells", Int32Bin(0, 0) }, { "costs", Float32Bin(0) } }, 4).Floors == null,
            "one floor: Floors is null");

        var field = PathServerClient.ParseField(new Dictionary<string, object>
        {
            { "gen", 3L }, { "width", 2L }, { "height", 1L }, { "origin", new object[] { 3L, 0L } }, { "floors", 2L }, { "cost", Float32Bin(1, 0, 6, 5) },
        }, 5);
        Equal("2 0 5", field.Floors + " " + field[1, 0] + " " + field[1, 0, 1], "a field of two floors: this[x, y, floor]");

        var map = PathServerClient.ParseMapData(new Dictionary<string, object>
        {
            { "map", "tower" }, { "gen", 3L }, { "width", 2L }, { "height", 1L }, { "region", new object[] { 0L, 0L, 2L, 1L } },
            { "cells", new byte[] { 1, 2, 3, 0 } }, { "floors", 2L },
            { "links", new object[] { new Dictionary<string, object> { { "from", new object[] { 0L, 0L } }, { "to", point(1, 0, 1) }, { "cost", 1L },
                { "two_way", false }, { "tag", "ladder" } } } },
        }, 6);
        Equal("2: 2 0 | (0, 0) -> (1, 0, 1) cost 1 ladder", map.Floors + ": " + map[1, 0] + " " + map[1, 0, 1] + " | " + string.Join(", ", map.Links),
            "get_map: two floors' cells and the links");
    }

    // Why the server does not take floors, or null when it does (a probe upload, dropped).
    static string FloorsRefusal()
    {
        using (var client = NewClient())
        {
            try
            {
                client.PutMapAsync("csharp_floors_probe", 1, 1, new byte[] { 1, 1 }, floors: 2,
                    links: new[] { new MapLink(new PathPoint(0, 0), new PathPoint(0, 0, 1), 1) }).Wait();
                client.DropMapAsync("csharp_floors_probe").Wait();
                return null;
            }
            catch (AggregateException e)
            {
                var refused = e.InnerException as PathServerException;
                if (refused != null && (refused.At == "floors" || refused.At == "links" || refused.At == "cells"))
                    return refused.Code + " at " + refused.At + ": " + refused.Message;
                throw;
            }
        }
    }

    // The tower: two floors of 5 x 3 open cells, a ladder (two-way, cost 1, tagged "ladder")
    // between (0, 0) on each, and a one-way drop from (4, 2) upstairs to (4, 2) downstairs.
    const int TowerWidth = 5, TowerHeight = 3;
    static readonly MapLink Ladder = new MapLink(new PathPoint(0, 0), new PathPoint(0, 0, 1), 1, tag: "ladder");
    static readonly MapLink Drop = new MapLink(new PathPoint(4, 2, 1), new PathPoint(4, 2), 0.5, false);

    static Task<long> PutTower(PathServerClient client, string name, IList<MapLink> links)
    {
        var cells = Enumerable.Repeat((byte)1, 2 * TowerWidth * TowerHeight).ToArray();
        return client.PutMapAsync(name, TowerWidth, TowerHeight, cells, tags: new byte[cells.Length], origin: new PathPoint(10, 0), cellSize: 2,
            tagNames: new Dictionary<string, int> { { "ladder", 1 } }, floors: 2, links: links);
    }

    // Each LinkStep's two points are the ends of the link it names, the way the link goes.
    static void TakesLinks(PathResult path, IList<MapLink> links, string what)
    {
        foreach (var step in path.Links)
        {
            Check(step.PathIndex >= 0 && step.PathIndex + 1 < path.Path.Length && step.Link >= 0 && step.Link < links.Count, what + ": link step " + step + " in range");
            var link = links[step.Link];
            var from = path.Path[step.PathIndex];
            var to = path.Path[step.PathIndex + 1];
            Check((from == link.From && to == link.To) || (link.TwoWay && from == link.To && to == link.From),
                what + ": " + from + " -> " + to + " is link " + step.Link + ", " + link);
        }
    }

    static void Near(double expected, double actual, string what)
    {
        Check(Math.Abs(expected - actual) < 1e-4, what + ": expected " + expected + ", got " + actual);
    }

    // The tower uploaded for one test and dropped after it; the client knows it has two floors.
    static async Task WithTower(Func<PathServerClient, PathOptions, long, Task> test)
    {
        await RequireServer();
        const string name = "csharp_tower";
        using (var client = NewClient())
        {
            long gen = await PutTower(client, name, new[] { Ladder, Drop });
            try
            {
                Equal(2, client.KnownFloors(name), "the client knows its upload has two floors");
                await test(client, new PathOptions { Map = name, Space = CoordinateSpace.Grid }, gen);
            }
            finally
            {
                await client.DropMapAsync(name);
            }
            Equal(1, client.KnownFloors(name), "dropped: the client forgets its floors");
        }
    }

    // Up the ladder and down the drop (never up it), with their links; the same points packed
    // (one path, a batch), in a batch of results and in world space.
    static Task FloorsPaths()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var links = new[] { Ladder, Drop };
            var up = await client.FindPathAsync(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1, grid);
            Equal(PathStatus.Found, up.Status, "up: found");
            Near(9, up.Cost, "up: 4 cells, the ladder (1), 4 cells");
            Equal("[1, 0]", string.Join(" ", up.Links), "up: the ladder, from the path's second point");
            Equal("(4, 0) (0, 0) (0, 0, 1) (4, 0, 1)", string.Join(" ", up.Path), "up: the ladder's ends are waypoints");
            TakesLinks(up, links, "up");

            var down = await client.FindPathAsync(new PathPoint(4, 2, 1), new PathPoint(4, 2), 1, grid);
            Near(0.5, down.Cost, "down: the drop");
            Equal("(4, 2, 1) (4, 2) | [0, 1]", string.Join(" ", down.Path) + " | " + string.Join(" ", down.Links), "down: the drop is link 1");
            var back = await client.FindPathAsync(new PathPoint(4, 2), new PathPoint(4, 2, 1), 1, grid);
            Near(4 + 4 * Math.Sqrt(2) + 1, back.Cost, "back up: the drop is one-way, so by the ladder");
            Equal("0", string.Join(" ", back.Links.Select(step => step.Link)), "back up: the ladder only");
            TakesLinks(back, links, "back up");

            var world = await client.FindPathAsync(new PathPoint(19, 1), new PathPoint(19, 1, 1), 1, new PathOptions { Map = grid.Map });
            Equal("(19, 1) (11, 1) (11, 1, 1) (19, 1, 1) | [1, 0]", string.Join(" ", world.Path) + " | " + string.Join(" ", world.Links),
                "world space: cell centres, each with its floor");
            var packed = client.FindPath(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1, grid);
            Equal(string.Join(" ", up.Path) + " | [1, 0]", string.Join(" ", packed.Path) + " | " + string.Join(" ", packed.Links),
                "the synchronous (packed) path: the same triples and links");
            var results = await client.FindPathsAsync(new[] { new PathRequest(new PathPoint(4, 0), new PathPoint(4, 0, 1)),
                new PathRequest(new PathPoint(4, 2, 1), new PathPoint(4, 2)) }, 1, grid);
            Equal("[1, 0] | [0, 1]", string.Join(" ", results[0].Links) + " | " + string.Join(" ", results[1].Links), "a batch: each result's links");
            var batch = await client.FindPathsPackedAsync(new[] { new PathPoint(4, 0), new PathPoint(4, 2, 1) }, new[] { new PathPoint(4, 0, 1), new PathPoint(4, 2) }, 1, grid);
            Equal(string.Join(" ", up.Path) + " | " + string.Join(" ", down.Path), string.Join(" ", batch.PathOf(0)) + " | " + string.Join(" ", batch.PathOf(1)),
                "a packed batch: entries sent as requests (points on floors), paths read as triples");
        });
    }

    // Goals on floors: the cheapest by a link, alone and as a batch entry.
    static Task FloorsGoals()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var goals = new[] { new PathPoint(0, 2), new PathPoint(4, 2) };
            var nearest = await client.FindPathToAnyAsync(new PathPoint(4, 2, 1), goals, 1, grid);
            Equal("[0, 1] goal 1", string.Join(" ", nearest.Links) + " goal " + nearest.GoalIndex, "goals: the nearer, by the drop");
            var batch = await client.FindPathsAsync(new[] { new PathRequest(new PathPoint(4, 2, 1), goals) }, 1, grid);
            Equal("[0, 1] goal 1", string.Join(" ", batch[0].Links) + " goal " + batch[0].GoalIndex, "a batch entry with goals");
        });
    }

    // get_map and maps: the floors, both floors' cells, the links as uploaded.
    static Task FloorsReadBack()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var map = await client.GetMapAsync(grid.Map);
            Equal("2 30 | " + Ladder + ", " + Drop, map.Floors + " " + map.Cells.Length + " | " + string.Join(", ", map.Links), "get_map: floors, both floors' cells, the links");
            Equal(1, (int)map[4, 2, 1], "map[x, y, floor]");
            var info = (await client.MapsAsync()).First(m => m.Name == grid.Map);
            Equal(2, info.Floors, "maps: the tower's floors");
        });
    }

    // reachable and field across the ladder.
    static Task FloorsReachableAndField()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var range = await client.ReachableAsync(new PathPoint(0, 0), 1, 1, grid);
            var upstairs = Enumerable.Range(0, range.Count).Where(i => range.Floors[i] == 1).Select(i => range.Cells[2 * i] + "," + range.Cells[2 * i + 1] + " " + range.Costs[i]);
            Equal("0,0 1", string.Join(" ", upstairs), "reachable for 1 from the ladder's foot: its top, upstairs");
            var field = await client.DistanceFieldAsync(new[] { new PathPoint(4, 0, 1) }, 1, grid);
            Equal("2 5x3", field.Floors + " " + field.Width + "x" + field.Height, "a field of both floors");
            Near(0, field[4, 0, 1], "the field at its goal");
            Near(9, field[4, 0, 0], "the field downstairs at (4, 0): up the ladder");
        });
    }

    // next_steps with PathPoint positions (points on floors go as arrays).
    static Task FloorsNextSteps()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var steps = new PathPoint[2];
            var remaining = new float[2];
            var next = await client.NextStepsAsync(new[] { new PathPoint(4, 0, 1) }, 1, new[] { new PathPoint(0.5f, 0.5f), new PathPoint(4.5f, 2.5f, 1) },
                steps, remaining, grid);
            Check(ReferenceEquals(steps, next.Points), "next_steps writes the caller's PathPoints");
            Equal("(0, 0, 1)", steps[0].ToString(), "next_steps: the unit at the ladder's foot climbs it");
            Equal(1, steps[1].Floor, "next_steps: the unit upstairs stays upstairs");
            Near(5, remaining[0], "next_steps: the ladder's foot is 5 from the goal (the ladder, 4 cells)");
        });
    }

    // check_block with points and rectangles on floors: a link keeps two points joined.
    static Task FloorsCheckBlock()
    {
        return WithTower(async (client, grid, gen) =>
        {

            var points = new[] { new PathPoint(4, 0), new PathPoint(4, 0, 1) };
            var cut = await client.CheckBlockAsync(points, new[] { new GridRect(0, 0, 1, 1) }, null, 1, grid);
            Equal("", string.Join(" ", cut.Disconnected), "check_block: without the ladder's foot, the drop still joins the floors");
            cut = await client.CheckBlockAsync(points, new[] { new GridRect(4, 2, 1, 1, 1), new GridRect(0, 0, 1, 1) }, null, 1, grid);
            Equal("[0, 1]", string.Join(" ", cut.Disconnected), "check_block: without the drop's top and the ladder's foot, they part");
        });
    }

    // Avoid on a link's end (its cell as an array with its floor) and traversal on its tag bar it.
    static Task FloorsAvoidAndTraversal()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var barred = await client.FindPathAsync(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1,
                new PathOptions { Map = grid.Map, Space = CoordinateSpace.Grid, Traversal = new TraversalRules { { "ladder", null } } });
            Equal(PathStatus.NoPath, barred.Status, "traversal bars the links tagged ladder");
            var avoided = await client.FindPathAsync(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1,
                new PathOptions { Map = grid.Map, Space = CoordinateSpace.Grid, Avoid = new AvoidSet().AddCell(0, 0, 1) });
            Equal(PathStatus.NoPath, avoided.Status, "avoid on the ladder's top ([x, y, floor]) bars the ladder");
        });
    }

    // update replacing the links, alone and with a cell edit: the answers change.
    static Task FloorsUpdateLinks()
    {
        return WithTower(async (client, grid, gen) =>
        {
            // A lift replaces the ladder, the drop becomes two-way: one update, a new generation.
            var lift = new MapLink(new PathPoint(4, 0), new PathPoint(4, 0, 1), 3);
            var opened = new[] { new MapLink(Drop.From, Drop.To, Drop.Cost), lift };
            long edited = await client.UpdateAsync(grid.Map, null, links: opened);
            Check(edited > gen, "update with links: a new generation");
            var again = await client.FindPathAsync(new PathPoint(4, 2), new PathPoint(4, 2, 1), 1, grid);
            Near(0.5, again.Cost, "the drop both ways now");
            Equal("[0, 0]", string.Join(" ", again.Links), "by link 0 of the new list");
            var lifted = await client.FindPathAsync(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1, grid);
            Equal("3 [0, 1]", lifted.Cost + " " + string.Join(" ", lifted.Links), "the lift, link 1, and no ladder");
            TakesLinks(lifted, opened, "the lift");
            await client.UpdateAsync(grid.Map, new[] { new GridRect(4, 2, 1, 1, 1) }, solid: true, links: new MapLink[0], ifGen: edited);
            var none = await client.FindPathAsync(new PathPoint(4, 2), new PathPoint(4, 0, 1), 1, grid);
            Equal(PathStatus.NoPath, none.Status, "no links left: the floors are apart");
            var map = await client.GetMapAsync(grid.Map);
            Equal("0 0", map.Links.Length + " " + map[4, 2, 1], "get_map: no links, and the drop's top solid");
        });
    }

    // Bad floors and links: a code and the field it is about; the map stays as it was.
    static Task FloorsRefusals()
    {
        return WithTower(async (client, grid, gen) =>
        {
            var e = await Throws(() => client.UpdateAsync(grid.Map, null, links: new[] { Ladder, new MapLink(new PathPoint(1, 1), new PathPoint(2, 2), -1) }),
                PathServerErrorCodes.InvalidRequest);
            Equal("links[1].cost", e.At, "a negative cost");
            e = await Throws(() => client.UpdateAsync(grid.Map, null, links: new[] { new MapLink(new PathPoint(0, 0), new PathPoint(0, 0, 2), 1) }),
                PathServerErrorCodes.OutOfBounds);
            Equal("links[0].to[2]", e.At, "a link to a floor the map does not have");
            e = await Throws(() => client.UpdateAsync(grid.Map, null, links: new[] { new MapLink(new PathPoint(0, 0), new PathPoint(9, 0, 1), 1) }),
                PathServerErrorCodes.OutOfBounds);
            Equal("links[0].to", e.At, "a link off the map");
            e = await Throws(() => client.UpdateAsync(grid.Map, null, links: new[] { new MapLink(new PathPoint(0, 0), new PathPoint(0, 1), 1, tag: "rope") }),
                PathServerErrorCodes.InvalidRequest);
            Equal("links[0].tag", e.At, "a tag the map does not name");
            e = await Throws(() => client.FindPathAsync(new PathPoint(0, 0, 2), new PathPoint(1, 1), 1, grid), PathServerErrorCodes.OutOfBounds);
            Equal("start[2]", e.At, "a start on a floor the map does not have");
            e = await Throws(() => client.PutMapAsync("csharp_bad_floors", 1, 1, new byte[17], floors: 17), PathServerErrorCodes.InvalidRequest);
            Equal("floors", e.At, "17 floors");
            e = await Throws(() => client.PutMapAsync("csharp_bad_floors", 2, 1, new byte[2], floors: 2), PathServerErrorCodes.InvalidRequest);
            Equal("cells", e.At, "cells of one floor for two");
            var map = await client.GetMapAsync(grid.Map);
            Equal(gen + " 2", map.Gen + " " + map.Links.Length, "refused updates leave the map as it was");
        });
    }

    // The README's floors example (its fourth ```text block): the same calls, the same lines.
    static async Task ReadmeFloorsExample()
    {
        await RequireServer();
        var readme = PackageFile("README.md");
        var blocks = Regex.Matches(File.ReadAllText(readme), "```text\n(.*?)```", RegexOptions.Singleline);
        Check(blocks.Count >= 4, "a fourth ```text block (floors) in " + readme);
        var printed = new List<string>();
        using (var client = new PathServerClient(_endpoint, "tower"))
        {
            var cells = Enumerable.Repeat((byte)1, 2 * 5 * 3).ToArray();
            var ladder = new MapLink(new PathPoint(0, 0), new PathPoint(0, 0, 1), 1);
            var drop = new MapLink(new PathPoint(4, 2, 1), new PathPoint(4, 2), 0.5, twoWay: false);
            await client.PutMapAsync("tower", 5, 3, cells, floors: 2, links: new[] { ladder, drop });
            var grid = new PathOptions { Space = CoordinateSpace.Grid };

            PathResult up = await client.FindPathAsync(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1, grid);
            printed.Add("up: " + string.Join(" ", up.Path) + ", cost " + up.Cost);
            foreach (LinkStep step in up.Links)
                printed.Add("  link " + step.Link + " from " + up.Path[step.PathIndex] + " to " + up.Path[step.PathIndex + 1]);
            PathResult down = await client.FindPathAsync(new PathPoint(4, 2, 1), new PathPoint(4, 2), 1, grid);
            printed.Add("down: " + string.Join(" ", down.Path) + ", cost " + down.Cost);

            await client.UpdateAsync("tower", null, links: new[] { drop, new MapLink(new PathPoint(4, 0), new PathPoint(4, 0, 1), 3) });
            up = await client.FindPathAsync(new PathPoint(4, 0), new PathPoint(4, 0, 1), 1, grid);
            printed.Add("up by the lift: " + string.Join(" ", up.Path) + ", cost " + up.Cost + ", links " + string.Join(" ", up.Links));

            try { await client.UpdateAsync("tower", null, links: new[] { new MapLink(new PathPoint(0, 0), new PathPoint(0, 0, 2), 1) }); }
            catch (PathServerException e) { printed.Add(e.Code + " at " + e.At); }
            await client.DropMapAsync("tower");
        }
        Equal(blocks[3].Groups[1].Value.TrimEnd('\n'), string.Join("\n", printed), "README's floors output");
    }
}
