// PathServerClient.Options.cs: PathOptions, the optional settings of a request, for the pathserver
// C# client (PathServerClient.cs lists its files).

using System;
using System.Collections.Generic;

namespace PathServer
{
    /// <summary>
    /// Optional settings of a request: null members are not sent, so the server's defaults apply
    /// (Defaults lists them); Space goes out as "world" unless Grid. An option set for a request
    /// that does not take it (Requests) throws ArgumentException before anything is sent.
    /// </summary>
    public sealed class PathOptions
    {
        static readonly string[] PathOps = { "path", "paths" };
        static readonly string[] SearchOps = { "path", "paths", "reachable", "field", "next_steps" };
        static readonly string[] EveryOp = { "path", "paths", "reachable", "field", "next_steps", "check_block" };

        // The options, one row each, in the order a request writes them: the wire name, the
        // requests (wire ops) that take it, what a request gets when it is left null (the
        // server's default, but for "space"), and how a PathOptions writes it (null when unset).
        // Rows without a writer are the methods' parameters, which the request builders write.
        static readonly Option[] Table =
        {
            Option.Parameter("unit_size", EveryOp),
            new Option("space", EveryOp, "world", o => o.Space == CoordinateSpace.World ? "world" : null),
            new Option("smooth", PathOps, "los", o => o.Smooth),
            new Option("allow_partial", PathOps, false, o => o.AllowPartial),
            new Option("snap", EveryOp, true, o => o.Snap),
            new Option("max_expansions", PathOps, null, o => o.MaxExpansions.HasValue ? (object)(long)o.MaxExpansions.Value : null),
            new Option("heuristic", PathOps, null, o => o.Heuristic),
            new Option("diagonal", EveryOp, "no_corner_cutting", o => o.Diagonal),
            new Option("max_climb", SearchOps, null, o => o.MaxClimb),
            new Option("algorithm", PathOps, "auto", o => o.Algorithm),
            new Option("weight", PathOps, 1.0, o => o.Weight),
            new Option("line_of_sight", PathOps, true, o => o.LineOfSight),
            Option.Parameter("goals", new[] { "path", "paths", "field", "next_steps" }),
            Option.Parameter("budget", new[] { "reachable" }),
            new Option("max_cost", new[] { "field", "next_steps" }, null, o => o.MaxCost),
            new Option("region", new[] { "field" }, null, o => o.Region.HasValue ? PathServerClient.RegionToWire(o.Region.Value, "Region") : null),
            new Option("lookahead", new[] { "next_steps" }, "cell", o => o.Lookahead),
            new Option("avoid", SearchOps, null, (o, triples) => o.Avoid != null ? o.Avoid.ToWire(triples) : null),
            new Option("avoid_cost", SearchOps, null, o => o.AvoidCost),
            new Option("traversal", EveryOp, null, o => o.Traversal != null ? o.Traversal.ToWire() : null),
        };

        /// <summary>
        /// What a request gets for each option left null, by wire name: the server's default
        /// (null: no limit, or the server chooses), but for "space", this client's own: "world".
        /// </summary>
        public static readonly IReadOnlyDictionary<string, object> Defaults = DefaultsOf(Table);

        /// <summary>
        /// The requests (wire ops) each option goes with, by wire name: the properties' options
        /// and the methods' parameters ("unit_size", "goals", "budget"). A property set for a
        /// request that does not take it throws ArgumentException before anything is sent.
        /// </summary>
        public static readonly IReadOnlyDictionary<string, IReadOnlyList<string>> Requests = RequestsOf(Table);

        /// <summary>Map name; null means the client's DefaultMap. Not a wire option.</summary>
        public string Map { get; set; }
        /// <summary>Units of the points sent and returned: World (this client's default) or Grid.</summary>
        public CoordinateSpace Space { get; set; } = CoordinateSpace.World;
        /// <summary>"los", "corners" or "none".</summary>
        public string Smooth { get; set; }
        /// <summary>An unreachable goal gives the path to the reachable cell nearest it (Status Partial).</summary>
        public bool? AllowPartial { get; set; }
        /// <summary>A blocked start or goal moves to the nearest cell the unit fits.</summary>
        public bool? Snap { get; set; }
        /// <summary>Node budget, at least 1; reaching it is "search_limit" unless AllowPartial.</summary>
        public int? MaxExpansions { get; set; }
        /// <summary>"octile", "euclidean", "manhattan" or "chebyshev".</summary>
        public string Heuristic { get; set; }
        /// <summary>Weighted A*: at least 1; above 1 trades optimality for speed.</summary>
        public double? Weight { get; set; }
        /// <summary>"no_corner_cutting", "never" or "always".</summary>
        public string Diagonal { get; set; }
        /// <summary>With a height layer, steeper steps are blocked; at least 0.</summary>
        public double? MaxClimb { get; set; }
        /// <summary>"auto", "astar" or "jps".</summary>
        public string Algorithm { get; set; }
        /// <summary>Take a clear straight line without searching.</summary>
        public bool? LineOfSight { get; set; }
        /// <summary>DistanceFieldAsync and NextStepsAsync: cells dearer than this to a goal stay +inf (it bounds the work); at least 0.</summary>
        public double? MaxCost { get; set; }
        /// <summary>DistanceFieldAsync: the window of grid cells returned (inside the map; the same on every floor); the whole map when null.</summary>
        public GridRect? Region { get; set; }
        /// <summary>NextStepsAsync: "cell" (the neighbouring cell downhill) or "los" (the farthest turn of the descent the footprint sees clearly).</summary>
        public string Lookahead { get; set; }
        /// <summary>Grid cells this request treats as solid (other units standing still); the map is untouched. Not for CheckBlockAsync.</summary>
        public AvoidSet Avoid { get; set; }
        /// <summary>Avoid's cells are not blocked but cost at least this to enter; at least 1.</summary>
        public double? AvoidCost { get; set; }
        /// <summary>A unit class of the map (a string converts: Traversal = "boat") or TraversalRules for its tagged cells.</summary>
        public Traversal Traversal { get; set; }
        /// <summary>Per-request timeout; null means the client's RequestTimeout. Not a wire option.</summary>
        public TimeSpan? Timeout { get; set; }
        /// <summary>Extra request fields sent as they are, for options newer than this client.</summary>
        public IDictionary<string, object> Extra { get; set; }

        // Writes the options set, for request op, then Extra. "space" is left out when Grid, the
        // wire's default (so the requests of docs/protocol.md's golden vectors come out byte for byte).
        // triples: bins of points hold x, y, floor (a map of several floors), not x, y.
        internal void WriteTo(MsgPackMap body, string op, bool triples = false)
        {
            foreach (var option in Table)
            {
                if (option.Write == null) continue;
                object value = option.Write(this, triples);
                if (value == null) continue;
                if (Array.IndexOf(option.Ops, op) < 0)
                    throw new ArgumentException("PathOptions' \"" + option.Name + "\" is not an option of \"" + op + "\" requests; it goes with "
                        + string.Join(", ", option.Ops) + ".", "options");
                body.Add(option.Name, value);
            }
            if (Extra != null)
            {
                foreach (var pair in Extra) body.Add(pair.Key, pair.Value);
            }
        }

        static IReadOnlyDictionary<string, object> DefaultsOf(Option[] table)
        {
            var defaults = new Dictionary<string, object>();
            foreach (var option in table)
                if (option.Write != null) defaults.Add(option.Name, option.Default);
            return defaults;
        }

        static IReadOnlyDictionary<string, IReadOnlyList<string>> RequestsOf(Option[] table)
        {
            var requests = new Dictionary<string, IReadOnlyList<string>>();
            foreach (var option in table) requests.Add(option.Name, Array.AsReadOnly(option.Ops));
            return requests;
        }

        // A row of Table.
        sealed class Option
        {
            public readonly string Name;
            public readonly string[] Ops;
            public readonly object Default;
            // The options' value from a PathOptions and whether bins of points hold triples.
            public readonly Func<PathOptions, bool, object> Write;

            public Option(string name, string[] ops, object defaultValue, Func<PathOptions, object> write)
                : this(name, ops, defaultValue, write == null ? null : (Func<PathOptions, bool, object>)((o, triples) => write(o)))
            {
            }

            public Option(string name, string[] ops, object defaultValue, Func<PathOptions, bool, object> write)
            {
                Name = name;
                Ops = ops;
                Default = defaultValue;
                Write = write;
            }

            public static Option Parameter(string name, string[] ops)
            {
                return new Option(name, ops, null, (Func<PathOptions, bool, object>)null);
            }
        }
    }
}
