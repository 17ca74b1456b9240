// Tests.Conformance.cs: the C# client's tests (Tests.cs runs them) of the shared scenarios
// of engine_clients/conformance.json.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- conformance

    /// <summary>
    /// The shared scenarios of engine_clients/conformance.json, one test each, through the public
    /// API (FindPathAsync, RequestAsync): the outcome must be the scenario's expectation, as for
    /// the Python and GDScript clients (engine_clients/conformance.py describes its shape).
    /// </summary>
    static void RunConformance()
    {
        string path = _conformance ?? (_protocolDoc == null ? null
            : Path.Combine(Path.Combine(Path.GetDirectoryName(Path.GetDirectoryName(_protocolDoc)), "engine_clients"), "conformance.json"));
        List<object> scenarios = null;
        string problem = null;
        try
        {
            scenarios = (List<object>)((Dictionary<string, object>)Json.Parse(File.ReadAllText(path)))["scenarios"];
        }
        catch (Exception e)
        {
            problem = "cannot read the scenarios from " + (path ?? "(no path: pass --conformance)") + ": " + e.Message;
        }
        if (scenarios == null)
        {
            Run("conformance: the scenarios", () => { throw new TestFailure(problem); });
            return;
        }
        foreach (Dictionary<string, object> scenario in scenarios)
        {
            Run("conformance: " + (string)scenario["name"], async () =>
            {
                var wrong = ConformanceMismatches((Dictionary<string, object>)scenario["expect"], await ConformanceOutcome(scenario));
                Check(wrong.Count == 0, string.Join("; ", wrong));
            });
        }
    }

    /// <summary>What this client reports for one scenario (its before requests, its request, its after requests), in the shape of its expectation.</summary>
    static async Task<Dictionary<string, object>> ConformanceOutcome(Dictionary<string, object> scenario)
    {
        await RequireServer();
        var request = (Dictionary<string, object>)scenario["request"];
        string endpoint = _endpoint;
        if (Equals(JsonGet(scenario, "server"), "silent"))
        {
            Check(_silentEndpoint != null, "this scenario needs --silent-endpoint (a peer that never answers)");
            endpoint = _silentEndpoint;
        }
        using (var client = NewClient(endpoint))
        {
            // A scenario's timeout is about a server that does not answer, not one not there yet.
            Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected to " + endpoint);
            Dictionary<string, object> got = null;
            try
            {
                foreach (Dictionary<string, object> step in (List<object>)JsonGet(scenario, "before") ?? new List<object>())
                {
                    got = await ConformanceStep(client, step);
                    if (got.ContainsKey("error")) return got;
                }
                return await ConformanceStep(client, request);
            }
            finally
            {
                foreach (Dictionary<string, object> step in (List<object>)JsonGet(scenario, "after") ?? new List<object>())
                    await ConformanceStep(client, step);
            }
        }
    }

    /// <summary>One request of a scenario through this client's public API.</summary>
    static async Task<Dictionary<string, object>> ConformanceStep(PathServerClient client, Dictionary<string, object> request)
    {
        string op = (string)JsonGet(request, "op") ?? "path";
        try
        {
            // An op alone goes out as it is, required fields missing included.
            switch (op != "path" && request.Count == 1 ? "" : op)
            {
                case "path":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    if (request.ContainsKey("timeout_ms")) options.Timeout = TimeSpan.FromMilliseconds((double)request["timeout_ms"]);
                    var unitSize = ScenarioUnitSize(request);
                    var goals = JsonGet(request, "goals");
                    var result = goals == null
                        ? await client.FindPathAsync(ScenarioPoint(request["start"]), ScenarioPoint(request["goal"]), unitSize, options)
                        : await client.FindPathToAnyAsync(ScenarioPoint(request["start"]), ScenarioPoints(goals), unitSize, options);
                    var got = new Dictionary<string, object>
                    {
                        { "status", result.StatusText }, { "cost", result.Cost },
                        { "start", new List<object> { (double)result.Start.X, (double)result.Start.Y } },
                        { "goal", new List<object> { (double)result.Goal.X, (double)result.Goal.Y } },
                        { "start_floor", (double)result.Start.Floor }, { "goal_floor", (double)result.Goal.Floor },
                        { "waypoints", (double)result.Path.Length },
                        { "start_snapped", result.StartSnapped }, { "goal_snapped", result.GoalSnapped },
                        { "links", result.Links.Select(step => (object)new List<object> { (double)step.PathIndex, (double)step.Link }).ToList() },
                    };
                    if (goals != null) got["goal_index"] = result.GoalIndex.HasValue ? (object)(double)result.GoalIndex.Value : null;
                    return got;
                }
                case "reachable":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var reply = await client.ReachableAsync(ScenarioPoint(request["start"]), (double)request["budget"], ScenarioUnitSize(request), options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" }, { "count", (double)reply.Count },
                        { "first", reply.Count == 0 ? null : new List<object> { (double)reply.Cells[0], (double)reply.Cells[1] } },
                        { "last_cost", reply.Count == 0 ? null : (object)(double)reply.Costs[reply.Count - 1] },
                    };
                }
                case "field":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var field = await client.DistanceFieldAsync(ScenarioPoints(request["goals"]), ScenarioUnitSize(request), options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" }, { "width", (double)field.Width }, { "height", (double)field.Height },
                        { "origin", new List<object> { (double)field.Region.X, (double)field.Region.Y } },
                        { "cost", ScenarioListed(field.Costs, field.Costs.Length) },
                    };
                }
                case "next_steps":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var positions = ScenarioPoints(request["positions"]).SelectMany(p => new[] { p.X, p.Y }).ToArray();
                    int count = positions.Length / 2;
                    var steps = new float[2 * count];
                    var remaining = new float[count];
                    await client.NextStepsAsync(ScenarioPoints(request["goals"]), ScenarioUnitSize(request), positions, steps, remaining, options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" },
                        { "steps", Enumerable.Range(0, count).Select(i => (object)new List<object> { (double)steps[2 * i], (double)steps[2 * i + 1] }).ToList() },
                        { "remaining", ScenarioListed(remaining, count) },
                    };
                }
                case "check_block":
                {
                    var options = ScenarioOptions((Dictionary<string, object>)JsonGet(request, "options") ?? new Dictionary<string, object>());
                    options.Map = (string)request["map"];
                    var rects = JsonGet(request, "rects") == null ? null : ScenarioRects(request["rects"]);
                    var cells = JsonGet(request, "cells") == null ? null : ScenarioPoints(request["cells"]);
                    var block = await client.CheckBlockAsync(ScenarioPoints(request["points"]), rects, cells, ScenarioUnitSize(request), options);
                    return new Dictionary<string, object>
                    {
                        { "status", "ok" },
                        { "disconnected", block.Disconnected.Select(pair => (object)new List<object> { (double)pair.First, (double)pair.Second }).ToList() },
                    };
                }
                case "put_map":
                {
                    int width = (int)(double)request["width"], height = (int)(double)request["height"];
                    var cells = ((List<object>)request["cells"]).Select(v => (byte)(double)v).ToArray();
                    var origin = JsonGet(request, "origin") == null ? (PathPoint?)null : ScenarioPoint(request["origin"]);
                    var cellSize = JsonGet(request, "cell_size") == null ? (double?)null : (double)request["cell_size"];
                    var tags = JsonGet(request, "tags") == null ? null : ((List<object>)request["tags"]).Select(v => (byte)(double)v).ToArray();
                    var tagNames = JsonGet(request, "tag_names") == null ? null
                        : ((Dictionary<string, object>)request["tag_names"]).ToDictionary(pair => pair.Key, pair => (int)(double)pair.Value);
                    var classes = JsonGet(request, "classes") == null ? null
                        : ((Dictionary<string, object>)request["classes"]).ToDictionary(pair => pair.Key, pair => ScenarioRules(pair.Value));
                    var floors = JsonGet(request, "floors") == null ? (int?)null : (int)(double)request["floors"];
                    var links = JsonGet(request, "links") == null ? null : ((List<object>)request["links"]).Select(ScenarioLink).ToList();
                    await client.PutMapAsync((string)request["map"], width, height, cells, ScenarioFloats(JsonGet(request, "costs")),
                        ScenarioFloats(JsonGet(request, "heights")), tags, origin, cellSize, tagNames: tagNames, classes: classes,
                        floors: floors, links: links);
                    return new Dictionary<string, object> { { "status", "ok" }, { "width", (double)width }, { "height", (double)height } };
                }
                case "get_map":
                {
                    var region = (List<object>)JsonGet(request, "region");
                    GridRect? rect = null;
                    if (region != null) rect = new GridRect((int)(double)region[0], (int)(double)region[1], (int)(double)region[2], (int)(double)region[3]);
                    MapData map = await client.GetMapAsync((string)request["map"], rect);
                    var got = new Dictionary<string, object>
                    {
                        { "status", "ok" }, { "width", (double)map.Width }, { "height", (double)map.Height },
                        { "region", new List<object> { (double)map.Region.X, (double)map.Region.Y, (double)map.Region.Width, (double)map.Region.Height } },
                        { "cells", map.Cells.Select(b => (object)(double)b).ToList() },
                    };
                    if (map.Costs != null) got["costs"] = map.Costs.Select(c => (object)(double)c).ToList();
                    return got;
                }
                case "drop_map":
                    await client.DropMapAsync((string)request["map"]);
                    return new Dictionary<string, object> { { "status", "ok" } };
                case "update":
                {
                    var rects = ((List<object>)request["rects"]).Select(r => (List<object>)r)
                        .Select(r => new GridRect((int)(double)r[0], (int)(double)r[1], (int)(double)r[2], (int)(double)r[3])).ToList();
                    await client.UpdateAsync((string)request["map"], rects, (bool?)JsonGet(request, "solid"),
                        (double?)JsonGet(request, "cost"), default(CancellationToken),
                        JsonGet(request, "if_gen") == null ? (long?)null : (long)(double)request["if_gen"]);
                    return new Dictionary<string, object> { { "status", "ok" } };
                }
                default:
                    await client.RequestAsync(op);
                    return new Dictionary<string, object> { { "status", "ok" } };
            }
        }
        catch (PathServerException e)
        {
            return new Dictionary<string, object> { { "error", e.Code }, { "at", e.At } };
        }
    }

    /// <summary>A scenario's list of numbers ("nan" and "inf" included) as float32, or null.</summary>
    static float[] ScenarioFloats(object values)
    {
        var list = values as List<object>;
        if (list == null) return null;
        return list.Select(v => v is string ? float.Parse((string)v == "nan" ? "NaN" : ((string)v).Replace("inf", "Infinity"), CultureInfo.InvariantCulture) : (float)(double)v).ToArray();
    }

    /// <summary>
    /// A scenario's wire options as PathOptions: the known ones typed, the rest in Extra. A
    /// scenario speaks the wire, so no "space" is the wire's default, Grid (not this client's World).
    /// </summary>
    static PathOptions ScenarioOptions(Dictionary<string, object> wire)
    {
        var options = new PathOptions { Space = CoordinateSpace.Grid };
        foreach (var pair in wire)
        {
            object value = pair.Value;
            switch (pair.Key)
            {
                case "space": options.Space = (string)value == "grid" ? CoordinateSpace.Grid : CoordinateSpace.World; break;
                case "smooth": options.Smooth = (string)value; break;
                case "diagonal": options.Diagonal = (string)value; break;
                case "heuristic": options.Heuristic = (string)value; break;
                case "algorithm": options.Algorithm = (string)value; break;
                case "snap": options.Snap = (bool)value; break;
                case "allow_partial": options.AllowPartial = (bool)value; break;
                case "line_of_sight": options.LineOfSight = (bool)value; break;
                case "max_expansions": options.MaxExpansions = (int)(double)value; break;
                case "weight": options.Weight = (double)value; break;
                case "max_climb": options.MaxClimb = (double)value; break;
                case "max_cost": options.MaxCost = (double)value; break;
                case "lookahead": options.Lookahead = (string)value; break;
                case "avoid_cost": options.AvoidCost = (double)value; break;
                case "region":
                {
                    var rect = ScenarioRects(new List<object> { value })[0];
                    options.Region = rect;
                    break;
                }
                case "avoid":
                {
                    var avoid = new AvoidSet();
                    var map = (Dictionary<string, object>)value;
                    foreach (var cell in ScenarioPoints(JsonGet(map, "cells") ?? new List<object>())) avoid.AddCell((int)cell.X, (int)cell.Y);
                    foreach (var rect in ScenarioRects(JsonGet(map, "rects") ?? new List<object>())) avoid.AddRect(rect);
                    options.Avoid = avoid;
                    break;
                }
                case "traversal":
                    options.Traversal = value is string ? (Traversal)(string)value : ScenarioRules(value);
                    break;
                default:
                    if (options.Extra == null) options.Extra = new Dictionary<string, object>();
                    options.Extra[pair.Key] = value;
                    break;
            }
        }
        return options;
    }

    static UnitSize ScenarioUnitSize(Dictionary<string, object> request)
    {
        var size = JsonGet(request, "unit_size") ?? 1.0;
        var sizes = size as List<object>;
        return sizes != null ? new UnitSize((int)(double)sizes[0], (int)(double)sizes[1]) : new UnitSize((int)(double)size, (int)(double)size);
    }

    static List<PathPoint> ScenarioPoints(object rows)
    {
        return ((List<object>)rows).Select(ScenarioPoint).ToList();
    }

    static List<GridRect> ScenarioRects(object rows)
    {
        return ((List<object>)rows).Select(row => ((List<object>)row).Select(v => (int)(double)v).ToArray())
            .Select(r => new GridRect(r[0], r[1], r[2], r[3])).ToList();
    }

    static TraversalRules ScenarioRules(object value)
    {
        var rules = new TraversalRules();
        foreach (var pair in (Dictionary<string, object>)value) rules[pair.Key] = pair.Value == null ? (double?)null : (double)pair.Value;
        return rules;
    }

    /// <summary>Floats as a scenario lists them: "inf" for +infinity (conformance.py's _listed).</summary>
    static List<object> ScenarioListed(float[] values, int count)
    {
        return values.Take(count).Select(v => float.IsPositiveInfinity(v) ? (object)"inf" : (double)v).ToList();
    }

    /// <summary>A scenario's [x, y]: numbers, or "nan" / "inf" / "-inf" (JSON has no such floats).</summary>
    static PathPoint ScenarioPoint(object pair)
    {
        var xy = ((List<object>)pair).Select(v => v is string ? float.Parse((string)v == "nan" ? "NaN" : ((string)v).Replace("inf", "Infinity"), CultureInfo.InvariantCulture) : (float)(double)v).ToArray();
        return xy.Length == 3 ? new PathPoint(xy[0], xy[1], (int)xy[2]) : new PathPoint(xy[0], xy[1]);
    }

    /// <summary>A scenario's link, as the wire writes it: from, to, cost, two_way (true when absent), tag.</summary>
    static MapLink ScenarioLink(object value)
    {
        var link = (Dictionary<string, object>)value;
        return new MapLink(ScenarioPoint(link["from"]), ScenarioPoint(link["to"]), (double)link["cost"],
            JsonGet(link, "two_way") == null || (bool)link["two_way"], (string)JsonGet(link, "tag"));
    }

    /// <summary>How got differs from expect: numbers to 1e-6, the rest exactly; for a path, start_snapped and goal_snapped are false unless expected true.</summary>
    static List<string> ConformanceMismatches(Dictionary<string, object> expect, Dictionary<string, object> got)
    {
        var keys = expect.Keys.ToList();
        if (new[] { "found", "partial", "no_path" }.Contains(JsonGet(expect, "status") as string)) keys.AddRange(new[] { "start_snapped", "goal_snapped" }.Where(key => !expect.ContainsKey(key)));
        var wrong = new List<string>();
        foreach (var key in keys)
        {
            object wanted = expect.ContainsKey(key) ? expect[key] : false;
            object value = got.ContainsKey(key) ? got[key] : null;
            if (!SameValue(wanted, value)) wrong.Add(key + ": expected " + Json.Write(wanted) + ", got " + Json.Write(value));
        }
        return wrong;
    }

    static bool SameValue(object wanted, object value)
    {
        if (wanted is double) return value is double && Math.Abs((double)wanted - (double)value) <= 1e-6;
        var items = wanted as List<object>;
        if (items != null)
        {
            var others = value as List<object>;
            return others != null && others.Count == items.Count && items.Zip(others, SameValue).All(same => same);
        }
        return Equals(wanted, value);
    }

    static object JsonGet(Dictionary<string, object> map, string key)
    {
        object value;
        return map.TryGetValue(key, out value) ? value : null;
    }

    /// <summary>PascalCase to the wire's snake_case: AllowPartial -> allow_partial.</summary>
    static string SnakeCase(string name)
    {
        return Regex.Replace(name, "(?<=[a-z])([A-Z])", "_$1").ToLowerInvariant();
    }
}
