// Tests.Options.cs: the C# client's tests (Tests.cs runs them) of PathOptions against the
// server's option list (`pathserver options --json`), offline and on the wire.

using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- options

    /// <summary>
    /// The options this client exposes and documents, against the server's one definition
    /// (`pathserver options --json`): every PathOptions property that is a wire option must be one
    /// of the server's and every server option a property or one of the methods' parameters
    /// (unit_size, goals, budget); the choices each property's documentation lists must be the
    /// server's; PathOptions.Defaults must hold the server's wire_default, but for Space, the
    /// client's own default (World), which must be one of the server's choices; and, op by op,
    /// the options PathOptions.Requests sends with each request must be the ones the server lists
    /// for it (its "ops"), but update's space (UpdateAsync sends grid cells only).
    /// </summary>
    static async Task OptionsMatchTheServer()
    {
        await Task.Yield();
        var server = ServerOptions();
        var clientSide = new HashSet<string> { "Map", "Timeout", "Extra" };
        var properties = typeof(PathOptions).GetProperties().Where(p => !clientSide.Contains(p.Name)).ToList();
        var names = properties.Select(p => SnakeCase(p.Name)).ToList();
        var unknown = names.Where(name => !server.ContainsKey(name)).ToList();
        Check(unknown.Count == 0, "PathOptions properties the server does not know: " + string.Join(", ", unknown));
        var parameters = new[] { "unit_size", "goals", "budget" };
        var missing = server.Keys.Where(name => !parameters.Contains(name) && !names.Contains(name)).ToList();
        Check(missing.Count == 0, "server options PathOptions lacks: " + string.Join(", ", missing));
        foreach (var name in parameters) Check(server.ContainsKey(name), "the server's options include " + name + " (a parameter here)");
        Equal(string.Join(",", names.OrderBy(n => n)), string.Join(",", PathOptions.Defaults.Keys.OrderBy(n => n)), "PathOptions.Defaults covers every option");

        foreach (var pair in PathOptions.Defaults)
        {
            var option = server[pair.Key];
            var choices = JsonGet(option, "choices") as List<object>;
            if (pair.Key == "space")
            {
                Equal("world", (string)pair.Value, "the client's own default for space");
                Equal(CoordinateSpace.World, new PathOptions().Space, "the Space a new PathOptions holds");
                Check(choices == null || choices.Contains(pair.Value), "space's default is one of the server's choices");
                continue;
            }
            object wanted = JsonGet(option, "wire_default");
            object ours = pair.Value is int || pair.Value is long ? (object)Convert.ToDouble(pair.Value) : pair.Value;
            Check(SameValue(wanted, ours), "PathOptions.Defaults[\"" + pair.Key + "\"] is " + Json.Write(ours) + ", the server's wire_default " + Json.Write(wanted));
        }
        var spaces = ((List<object>)JsonGet(server["space"], "choices") ?? new List<object> { "grid", "world" }).Cast<string>().ToList();
        foreach (CoordinateSpace space in Enum.GetValues(typeof(CoordinateSpace)))
            Check(spaces.Contains(space.ToString().ToLowerInvariant()), "CoordinateSpace." + space + " is one of the server's spaces");

        // The choices each property's summary lists ("los", "corners" or "none") are the server's.
        var source = File.ReadAllText(PackageFile("Runtime", "PathServerClient.Options.cs"));
        var optionsClass = Regex.Match(source, @"public sealed class PathOptions\b(.*?)internal void WriteTo", RegexOptions.Singleline).Groups[1].Value;
        int listed = 0;
        foreach (Match documented in Regex.Matches(optionsClass, @"/// <summary>(.*?)</summary>\s*public \S+ (\w+) \{ get; set; \}", RegexOptions.Singleline))
        {
            string name = SnakeCase(documented.Groups[2].Value);
            var choices = server.ContainsKey(name) ? JsonGet(server[name], "choices") as List<object> : null;
            if (choices == null || (string)server[name]["kind"] != "enum") continue;
            var quoted = Regex.Matches(documented.Groups[1].Value, "\"([a-z_]+)\"").Cast<Match>().Select(m => m.Groups[1].Value).ToList();
            Equal(string.Join(",", choices.Cast<string>().OrderBy(c => c)), string.Join(",", quoted.OrderBy(c => c)), "the choices PathOptions." + documented.Groups[2].Value + " documents");
            listed++;
        }
        Equal(server.Values.Count(o => (string)o["kind"] == "enum"), listed, "enum options whose choices PathOptions documents");

        // Op by op: the options the server takes for each request, and the ones this client sends with it.
        Equal(string.Join(",", server.Keys.OrderBy(n => n)), string.Join(",", PathOptions.Requests.Keys.OrderBy(n => n)), "PathOptions.Requests covers every option");
        var ops = server.Values.SelectMany(o => ((List<object>)o["ops"]).Cast<string>()).Distinct().Where(op => op != "update").OrderBy(op => op).ToList();
        Equal(string.Join(",", ops), string.Join(",", PathOptions.Requests.Values.SelectMany(v => v).Distinct().OrderBy(op => op)), "the requests options go with");
        foreach (var op in ops)
        {
            var theirs = server.Values.Where(o => ((List<object>)o["ops"]).Contains(op)).Select(o => (string)o["name"]).OrderBy(n => n);
            var ours = PathOptions.Requests.Where(pair => pair.Value.Contains(op)).Select(pair => pair.Key).OrderBy(n => n);
            Equal(string.Join(", ", theirs), string.Join(", ", ours), "the options of \"" + op + "\" requests");
        }
        var update = server.Values.Where(o => ((List<object>)o["ops"]).Contains("update")).Select(o => (string)o["name"]).ToList();
        Equal("space", string.Join(",", update), "update's options (UpdateAsync sends grid cells, no space)");
        Console.WriteLine("     | " + names.Count + " options checked against " + _optionsFile);
    }

    /// <summary>
    /// Every PathOptions property set alone, with a valid value, for each request the client
    /// sends: where PathOptions.Requests says it goes with that op, the server answers it (the
    /// traversal sample is refused for naming a tag the map lacks: the field was read); where it
    /// does not go, the client throws ArgumentException before sending anything.
    /// </summary>
    static async Task OptionsPerRequestOnTheWire()
    {
        await RequireServer();
        var samples = OptionSamples;
        var names = typeof(PathOptions).GetProperties().Select(p => SnakeCase(p.Name))
            .Where(name => PathOptions.Defaults.ContainsKey(name) && name != "space").OrderBy(n => n).ToList();
        Equal(string.Join(",", names), string.Join(",", samples.Keys.OrderBy(n => n)), "a sample value for every option property");
        var ops = new[] { "path", "paths", "reachable", "field", "next_steps", "check_block" };
        int sent = 0, refused = 0;
        using (var client = NewClient())
        {
            foreach (var option in samples)
            {
                foreach (var op in ops)
                {
                    var options = new PathOptions { Map = _mapName, Space = CoordinateSpace.Grid };
                    option.Value(options);
                    Func<Task> send = SendFor(client, op, options);
                    if (!PathOptions.Requests[option.Key].Contains(op))
                    {
                        bool threw = false;
                        try { await send(); }
                        catch (ArgumentException) { threw = true; }
                        Check(threw, option.Key + " on " + op + ": ArgumentException before sending");
                        refused++;
                        continue;
                    }
                    try { await send(); }
                    catch (PathServerException e)
                    {
                        // The one refusal expected: the sample rules name a tag this map does not have.
                        Check(option.Key == "traversal" && e.At == "traversal.water", option.Key + " on " + op + ": " + e.Message);
                    }
                    sent++;
                }
            }
        }
        Console.WriteLine("     | " + sent + " option and request pairs sent, " + refused + " refused by the client");
    }

    /// <summary>A valid value for each PathOptions property that is a wire option (but Space), by wire name.</summary>
    static readonly Dictionary<string, Action<PathOptions>> OptionSamples = new Dictionary<string, Action<PathOptions>>
    {
        { "smooth", o => o.Smooth = "los" }, { "allow_partial", o => o.AllowPartial = true }, { "snap", o => o.Snap = true },
        { "max_expansions", o => o.MaxExpansions = 100000 }, { "heuristic", o => o.Heuristic = "octile" }, { "weight", o => o.Weight = 1.5 },
        { "diagonal", o => o.Diagonal = "never" }, { "max_climb", o => o.MaxClimb = 1 }, { "algorithm", o => o.Algorithm = "astar" },
        { "line_of_sight", o => o.LineOfSight = false }, { "max_cost", o => o.MaxCost = 50 }, { "region", o => o.Region = new GridRect(0, 0, 2, 2) },
        { "lookahead", o => o.Lookahead = "los" }, { "avoid", o => o.Avoid = new AvoidSet().AddCell(5, 5) }, { "avoid_cost", o => o.AvoidCost = 2 },
        { "traversal", o => o.Traversal = new TraversalRules { { "water", null } } },
    };

    /// <summary>
    /// PathOptions' option table, row by row, against the server's list: each property set alone
    /// writes one field, named as the server names that option, for each request that takes it,
    /// with a value of the server's kind (a bool, an int, a float, one of the choices, a
    /// rectangle, cells, a traversal); Space writes "space": "world" for World and nothing for
    /// Grid. A row that wrote another property, or under another name, would show here.
    /// </summary>
    static async Task OptionsWriteTheirOwnFields()
    {
        await Task.Yield();
        var server = ServerOptions();
        int written = 0;
        foreach (var sample in OptionSamples)
        {
            string name = sample.Key;
            Check(server.ContainsKey(name), "the server has the option " + name);
            foreach (var op in PathOptions.Requests[name])
            {
                var options = new PathOptions { Space = CoordinateSpace.Grid };
                sample.Value(options);
                var body = new MsgPackMap();
                options.WriteTo(body, op);
                Equal(name, string.Join(",", body.Select(pair => pair.Key)), "the fields PathOptions writes for \"" + op + "\" with only its " + name + " set");
                string why = WireKindProblem(server[name], body[0].Value);
                Check(why == null, name + " is written as the server's " + (string)server[name]["kind"] + ": " + why);
                written++;
            }
        }
        var world = new MsgPackMap();
        new PathOptions().WriteTo(world, "path");
        Equal("space: \"world\"", string.Join(", ", world.Select(pair => pair.Key + ": " + MsgPack.ToDebugString(pair.Value))), "what a new PathOptions writes");
        Check(((List<object>)server["space"]["choices"]).Contains("world"), "world is one of the server's spaces");
        var grid = new MsgPackMap();
        new PathOptions { Space = CoordinateSpace.Grid }.WriteTo(grid, "path");
        Equal(0, grid.Count, "fields a PathOptions with Space Grid and nothing else writes");
        Console.WriteLine("     | " + written + " option and request pairs written, each its own field");
    }

    /// <summary>Why value is not of option's kind (the server's "kind": bool, int, float, enum, rect, cells, traversal); null when it is.</summary>
    static string WireKindProblem(Dictionary<string, object> option, object value)
    {
        string kind = (string)option["kind"];
        switch (kind)
        {
            case "bool": return value is bool ? null : "not a bool: " + Show(value);
            case "int": return value is long ? null : "not an int: " + Show(value);
            case "float": return value is double ? null : "not a float64: " + Show(value);
            case "enum":
                var choices = ((List<object>)option["choices"]).Cast<string>().ToList();
                return value is string && choices.Contains((string)value) ? null : Show(value) + " is not one of " + string.Join(", ", choices);
            case "rect":
                var rect = value as object[];
                return rect != null && rect.Length == 4 && rect.All(v => v is long) ? null : "not [x, y, w, h] ints: " + MsgPack.ToDebugString(value);
            case "cells":
                var cells = value as MsgPackMap;
                return cells != null && cells.Count > 0 && cells.All(pair => pair.Key == "cells" || pair.Key == "rects") ? null
                    : "not a map of cells and rects: " + MsgPack.ToDebugString(value);
            case "traversal":
                return value is string || value is MsgPackMap ? null : "not a unit class or a map of rules: " + MsgPack.ToDebugString(value);
            default: return "a kind this test does not know";
        }
    }

    /// <summary>The server's options by name, from --options (the output of `pathserver options --json`).</summary>
    static Dictionary<string, Dictionary<string, object>> ServerOptions()
    {
        Check(_optionsFile != null && File.Exists(_optionsFile),
            "the server's options are needed (--options: the output of `pathserver options --json`); got " + (_optionsFile ?? "none"));
        var server = new Dictionary<string, Dictionary<string, object>>();
        foreach (Dictionary<string, object> option in (List<object>)((Dictionary<string, object>)Json.Parse(File.ReadAllText(_optionsFile)))["options"])
            server[(string)option["name"]] = option;
        return server;
    }

    static Func<Task> SendFor(PathServerClient client, string op, PathOptions options)
    {
        var goals = new[] { Corner(3) };
        switch (op)
        {
            case "path": return () => client.FindPathAsync(Corner(0), Corner(3), 1, options);
            case "paths": return () => client.FindPathsAsync(new[] { new PathRequest(Corner(0), Corner(3)) }, 1, options);
            case "reachable": return () => client.ReachableAsync(Corner(0), 3, 1, options);
            case "field": return () => client.DistanceFieldAsync(goals, 1, options);
            case "next_steps": return () => client.NextStepsAsync(goals, 1, new float[] { 1, 1 }, options);
            default: return () => client.CheckBlockAsync(new[] { Corner(0), Corner(3) }, new[] { new GridRect(5, 5, 1, 1) }, null, 1, options);
        }
    }
}
