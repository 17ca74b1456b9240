// Tests.Hexes.cs: the C# client's tests (Tests.cs runs them) of hex maps: PathServerHexes against
// the golden values Godot gave (tests/data/hex_godot.json, written by
// engine_clients/godot/tests/hex_golden.gd) and against breadth-first search, PutMapAsync's hex
// fields, and against a server that takes hex maps, an upload read back and a path on it.

using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- hex maps

    static readonly HexLayout[] AllLayouts = { HexLayout.OddR, HexLayout.EvenR, HexLayout.OddQ, HexLayout.EvenQ };

    static Dictionary<string, object> HexGolden()
    {
        string path = _hexGolden ?? Path.Combine(Path.Combine(Path.Combine(RepositoryDir(), "tests"), "data"), "hex_godot.json");
        return (Dictionary<string, object>)Json.Parse(File.ReadAllText(path));
    }

    static HexLayout LayoutOf(object name)
    {
        HexLayout layout;
        Check(PathServerHexes.TryParse(name as string, out layout), "a wire layout: " + name);
        return layout;
    }

    static int Int(object value) { return (int)(double)value; }

    // Godot's map_to_local, local_to_map and get_surrounding_cells for the four wire layouts and
    // four tile sizes: WorldCenter, CellAt and Neighbors give the same.
    static async Task HexesMatchGodot()
    {
        await Task.Yield();
        var golden = HexGolden();
        var cases = (List<object>)golden["cases"];
        Equal(16, cases.Count, "golden cases");
        foreach (Dictionary<string, object> item in cases)
        {
            var layout = LayoutOf(item["layout"]);
            var size = (List<object>)item["tile_size"];
            double w = (double)size[0], h = (double)size[1];
            var cells = (List<object>)item["cells"];
            var centres = (List<object>)item["centres"];
            for (int i = 0; i < cells.Count; i++)
            {
                var cell = (List<object>)cells[i];
                var centre = (List<object>)centres[i];
                var got = PathServerHexes.WorldCenter(layout, Int(cell[0]), Int(cell[1]), new PathPoint(0, 0), w, h);
                Equal(new PathPoint((float)(double)centre[0], (float)(double)centre[1]), got,
                    item["layout"] + " " + w + "x" + h + " centre of " + Json.Write(cell));
            }
            var points = (List<object>)item["points"];
            var pointsCells = (List<object>)item["points_cells"];
            for (int i = 0; i < points.Count; i++)
            {
                var point = (List<object>)points[i];
                var expected = (List<object>)pointsCells[i];
                int x, y;
                PathServerHexes.CellAt(layout, (double)point[0], (double)point[1], new PathPoint(0, 0), w, h, out x, out y);
                Equal(Int(expected[0]) + "," + Int(expected[1]), x + "," + y,
                    item["layout"] + " " + w + "x" + h + " cell of " + Json.Write(point));
            }
        }
        foreach (Dictionary<string, object> entry in (List<object>)golden["neighbours"])
        {
            var layout = LayoutOf(entry["layout"]);
            var cells = (List<object>)entry["cells"];
            var surrounding = (List<object>)entry["surrounding"];
            for (int i = 0; i < cells.Count; i++)
            {
                var cell = (List<object>)cells[i];
                var expected = ((List<object>)surrounding[i]).Select(p => Int(((List<object>)p)[0]) + "," + Int(((List<object>)p)[1])).OrderBy(s => s);
                var around = PathServerHexes.Neighbors(layout, Int(cell[0]), Int(cell[1]));
                var got = Enumerable.Range(0, 6).Select(k => around[2 * k] + "," + around[2 * k + 1]).OrderBy(s => s);
                Equal(string.Join(" ", expected), string.Join(" ", got), entry["layout"] + " neighbours of " + Json.Write(cell));
            }
        }
    }

    // Offset <-> axial round trips (negative cells too), distance = breadth-first distance over
    // Neighbors, neighbours symmetric, the layouts' wire names.
    static async Task HexHelpers()
    {
        await Task.Yield();
        foreach (var layout in AllLayouts)
        {
            HexLayout parsed;
            Check(PathServerHexes.TryParse(PathServerHexes.ToWire(layout), out parsed) && parsed == layout, "wire name of " + layout);
            for (int y = -9; y <= 9; y++)
                for (int x = -9; x <= 9; x++)
                {
                    int q, r, s, bx, by;
                    PathServerHexes.ToCube(layout, x, y, out q, out r, out s);
                    PathServerHexes.FromAxial(layout, q, r, out bx, out by);
                    Check(bx == x && by == y && q + r + s == 0, layout + ": axial round trip of " + x + "," + y);
                    var around = PathServerHexes.Neighbors(layout, x, y);
                    for (int k = 0; k < 6; k++)
                    {
                        var back = PathServerHexes.Neighbors(layout, around[2 * k], around[2 * k + 1]);
                        bool found = false;
                        for (int j = 0; j < 6; j++) found |= back[2 * j] == x && back[2 * j + 1] == y;
                        Check(found, layout + ": neighbours are symmetric at " + x + "," + y);
                    }
                }
            foreach (var start in new[] { new[] { 0, 0 }, new[] { 1, 1 }, new[] { -3, 2 } })
            {
                var steps = new Dictionary<long, int>();
                var queue = new Queue<int[]>();
                Func<int, int, long> key = (x, y) => ((long)x << 32) ^ (uint)y;
                steps[key(start[0], start[1])] = 0;
                queue.Enqueue(start);
                while (queue.Count > 0)
                {
                    var cell = queue.Dequeue();
                    int d = steps[key(cell[0], cell[1])];
                    Equal(d, PathServerHexes.Distance(layout, start[0], start[1], cell[0], cell[1]), layout + ": distance to " + cell[0] + "," + cell[1]);
                    if (d == 6) continue;
                    var around = PathServerHexes.Neighbors(layout, cell[0], cell[1]);
                    for (int k = 0; k < 6; k++)
                    {
                        if (steps.ContainsKey(key(around[2 * k], around[2 * k + 1]))) continue;
                        steps[key(around[2 * k], around[2 * k + 1])] = d + 1;
                        queue.Enqueue(new[] { around[2 * k], around[2 * k + 1] });
                    }
                }
                Equal(3 * 6 * 7 + 1, steps.Count, layout + ": cells within 6 steps");
            }
        }
    }

    // PutMapAsync's hex goes out as "shape", "layout" and cell_size [w, h]; a cellSize beside it
    // is refused before sending.
    static async Task HexPutMapEncoding()
    {
        await Task.Yield();
        var body = PathServerClient.PutMapBody("hexes", 3, 2, new byte[] { 1, 1, 0, 1, 2, 1 }, origin: new PathPoint(5, 6),
            hex: new HexShape(HexLayout.EvenQ, 64, 74));
        Equal("op map width height cells shape layout origin cell_size", string.Join(" ", body.Select(pair => pair.Key)), "put_map's keys");
        var fields = body.ToDictionary(pair => pair.Key, pair => pair.Value);
        Equal("hex even-q", fields["shape"] + " " + fields["layout"], "shape and layout");
        Equal("64 74", string.Join(" ", (object[])fields["cell_size"]), "cell_size is the tile size");
        try
        {
            PathServerClient.PutMapBody("hexes", 3, 2, new byte[6], cellSize: 16, hex: new HexShape(HexLayout.OddR, 16, 16));
            throw new TestFailure("a cellSize beside hex was not refused");
        }
        catch (ArgumentException) { }
    }

    // Why the server does not take hex maps, or null when it does (a probe upload, dropped).
    static string HexRefusal()
    {
        using (var client = NewClient())
        {
            try
            {
                client.PutMapAsync("csharp_hex_probe", 2, 2, new byte[] { 1, 1, 1, 1 }, hex: new HexShape(HexLayout.OddR, 16, 16)).Wait();
                client.DropMapAsync("csharp_hex_probe").Wait();
                return null;
            }
            catch (AggregateException e)
            {
                var refused = e.InnerException as PathServerException;
                if (refused != null && refused.Code == PathServerErrorCodes.InvalidRequest
                    && (refused.At == null || refused.At == "shape" || refused.At == "layout" || refused.At == "cell_size"))
                    return refused.Code + " at " + refused.At + ": " + refused.Message;
                throw;
            }
        }
    }

    // A hex map uploaded and read back (shape, layout, tile size), and a path on it in world
    // space: tile centres, each a neighbour of the one before, as many steps as breadth-first
    // search around the wall takes.
    static async Task HexUploadAndPath()
    {
        await RequireServer();
        const int width = 6, height = 5;
        var cells = Enumerable.Repeat((byte)1, width * height).ToArray();
        foreach (var wall in new[] { 2 + 0 * width, 2 + 1 * width, 2 + 2 * width, 2 + 3 * width }) cells[wall] = 0;
        var origin = new PathPoint(10, 20);
        using (var client = NewClient())
        {
            foreach (var layout in AllLayouts)
            {
                await client.PutMapAsync("csharp_hexes", width, height, cells, origin: origin, hex: new HexShape(layout, 64, 74));
                try
                {
                    MapData map = await client.GetMapAsync("csharp_hexes");
                    Equal(MapShape.Hex + " " + layout + " 64 74", map.Shape + " " + map.Layout + " " + map.CellWidth + " " + map.CellHeight,
                        "get_map: shape, layout, tile size");
                    var start = PathServerHexes.WorldCenter(layout, 0, 0, origin, 64, 74);
                    var goal = PathServerHexes.WorldCenter(layout, 4, 0, origin, 64, 74);
                    var path = await client.FindPathAsync(start, goal, 1, new PathOptions { Map = "csharp_hexes", Smooth = "none" });
                    Equal(PathStatus.Found, path.Status, layout + ": a path around the wall");
                    int px = 0, py = 0;
                    for (int i = 0; i < path.Path.Length; i++)
                    {
                        int x, y;
                        PathServerHexes.CellAt(layout, path.Path[i].X, path.Path[i].Y, origin, 64, 74, out x, out y);
                        Equal(PathServerHexes.WorldCenter(layout, x, y, origin, 64, 74), path.Path[i], layout + ": waypoint " + i + " is a tile centre");
                        Check(cells[y * width + x] != 0, layout + ": waypoint " + i + " is walkable");
                        if (i > 0) Equal(1, PathServerHexes.Distance(layout, px, py, x, y), layout + ": waypoint " + i + " is next to the one before");
                        px = x;
                        py = y;
                    }
                    Equal(HexSteps(layout, cells, width, height, 0, 0, 4, 0), path.Path.Length - 1, layout + ": as many steps as breadth-first search");
                }
                finally
                {
                    await client.DropMapAsync("csharp_hexes");
                }
            }
        }
    }

    // Breadth-first steps from (sx, sy) to (gx, gy) over walkable cells of a hex map; -1 when none.
    static int HexSteps(HexLayout layout, byte[] cells, int width, int height, int sx, int sy, int gx, int gy)
    {
        var steps = Enumerable.Repeat(-1, width * height).ToArray();
        var queue = new Queue<int>();
        steps[sy * width + sx] = 0;
        queue.Enqueue(sy * width + sx);
        while (queue.Count > 0)
        {
            int at = queue.Dequeue();
            var around = PathServerHexes.Neighbors(layout, at % width, at / width);
            for (int k = 0; k < 6; k++)
            {
                int x = around[2 * k], y = around[2 * k + 1];
                if (x < 0 || y < 0 || x >= width || y >= height || cells[y * width + x] == 0 || steps[y * width + x] >= 0) continue;
                steps[y * width + x] = steps[at] + 1;
                queue.Enqueue(y * width + x);
            }
        }
        return steps[gy * width + gx];
    }
}
