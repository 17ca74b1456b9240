// Demo.cs: the C# client from a console, the way a game would use it.
//
//     mcs -out:Demo.exe Runtime/PathServerClient*.cs 'Tests~/Demo.cs'      (from engine_clients/csharp)
//     mono Demo.exe [tcp://127.0.0.1:5555] [MAP]
//
// 1. await one path per unit size (async/await style);
// 2. a "game loop" at 60 frames per second: 180 units ask with RequestPath, and the answers
//    arrive as PathFound events raised by DrainMainThreadQueue() at the start of each frame;
// 3. the same 180 questions as one batch (FindPathsAsync), one round trip.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using PathServer;

static class Demo
{
    static int Main(string[] args)
    {
        string endpoint = args.Length > 0 ? args[0] : "tcp://127.0.0.1:5555";
        string mapName = args.Length > 1 ? args[1] : null;
        try
        {
            return RunAsync(endpoint, mapName).GetAwaiter().GetResult();
        }
        catch (PathServerException e)
        {
            Console.Error.WriteLine("demo: " + e.Message);
            return 1;
        }
    }

    static async Task<int> RunAsync(string endpoint, string mapName)
    {
        using (var client = new PathServerClient(endpoint))
        {
            client.Log = message => Console.Error.WriteLine(message);
            if (!await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)))
            {
                Console.Error.WriteLine("demo: no pathserver at " + endpoint + " (start one: python -m pathserver serve)");
                return 1;
            }
            Console.WriteLine("connected to " + endpoint + ", ping " + (await client.PingAsync()).TotalMilliseconds.ToString("0.00", CultureInfo.InvariantCulture) + " ms");

            var maps = await client.MapsAsync();
            foreach (var info in maps) Console.WriteLine("  map " + info);
            var map = maps.FirstOrDefault(m => m.Name == (mapName ?? "example")) ?? maps.FirstOrDefault();
            if (map == null)
            {
                Console.Error.WriteLine("demo: the server serves no maps");
                return 1;
            }
            client.DefaultMap = map.Name;

            // World coordinates (the default): the centres of two opposite corner cells.
            var from = CellCentre(map, 0, 0);
            var to = CellCentre(map, map.Width - 1, map.Height - 1);
            var snapping = new PathOptions { Snap = true, AllowPartial = true };
            Console.WriteLine();
            Console.WriteLine("1. await FindPathAsync on " + map.Name + ", " + from + " -> " + to + " (world units)");
            foreach (var size in new UnitSize[] { 1, 2, new UnitSize(3, 2) })
            {
                var clock = Stopwatch.StartNew();
                var result = await client.FindPathAsync(from, to, size, snapping);
                Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
                    "   unit {0}: {1}, {2} waypoints, length {3:0.0}, {4} nodes expanded, gen {5}, {6:0.0} ms",
                    size, result.StatusText, result.Path.Length, result.Length, result.Expanded, result.Gen, clock.Elapsed.TotalMilliseconds));
                Console.WriteLine("      " + string.Join(" ", result.Path.Take(8).Select(p => p.ToString()))
                    + (result.Path.Length > 8 ? " ..." : ""));
            }

            try
            {
                await client.FindPathAsync(from, to, 1, new PathOptions { Map = "no_such_map" });
            }
            catch (PathServerException e)
            {
                Console.WriteLine("   an error carries its code: Code=" + e.Code + " At=" + e.At + " Message=\"" + e.Message + "\"");
            }

            // 180 units, as in the seed design: each asks once; answers are handled per frame.
            var random = new Random(7);
            var requests = Enumerable.Range(0, 180).Select(i => new PathRequest(
                CellCentre(map, random.Next(map.Width), random.Next(map.Height)),
                CellCentre(map, random.Next(map.Width), random.Next(map.Height)))).ToList();

            Console.WriteLine();
            Console.WriteLine("2. a 60 fps loop: 180 RequestPath calls, answers as PathFound events drained each frame");
            client.DrainMainThreadQueue();  // step 1's PathFound / PathFailed events, unobserved
            int answered = 0;
            int failed = 0;
            var perFrame = new List<int>();
            client.PathFound += (sender, e) => answered++;
            client.PathFailed += (sender, e) => { answered++; failed++; };
            var frameClock = Stopwatch.StartNew();
            for (int i = 0; i < requests.Count; i++) client.RequestPath(requests[i].Start, requests[i].Goal, 1, snapping, i);
            while (answered < requests.Count && frameClock.Elapsed < TimeSpan.FromSeconds(10))
            {
                perFrame.Add(client.DrainMainThreadQueue());  // what Update() / _Process() does
                Thread.Sleep(16);
            }
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
                "   {0} answers ({1} failed) over {2} frames, {3:0.0} ms; per frame: {4}",
                answered, failed, perFrame.Count, frameClock.Elapsed.TotalMilliseconds, string.Join(" ", perFrame)));

            Console.WriteLine();
            Console.WriteLine("3. the same 180 questions in one batch (FindPathsAsync)");
            var batchClock = Stopwatch.StartNew();
            var batch = await client.FindPathsAsync(requests, 1, snapping);
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "   {0} results in {1:0.0} ms: {2}",
                batch.Length, batchClock.Elapsed.TotalMilliseconds,
                string.Join(", ", batch.GroupBy(r => r.StatusText).Select(g => g.Count() + " " + g.Key))));
            return 0;
        }
    }

    static PathPoint CellCentre(MapInfo map, int x, int y)
    {
        return new PathPoint((float)(map.Origin.X + (x + 0.5) * map.CellSize), (float)(map.Origin.Y + (y + 0.5) * map.CellSize));
    }
}
