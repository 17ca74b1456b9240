// PathServerClient.Options.cs: PathOptions, the optional settings of a request, for the pathserver
// C# client (PathServerClient.cs lists its files).

using System;
using System.Collections.Generic;

namespace PathServer
{
    /// <summary>
    /// Optional settings of a request (a path, a batch or one of the queries beyond one path).
    /// Null members are left out of the request, so the server's defaults apply (Defaults lists
    /// them); Space goes out as "world" unless set to Grid (the wire's default). Requests says
    /// which requests take each option; one set for a request that does not take it throws
    /// ArgumentException before anything is sent.
    /// </summary>
    public sealed class PathOptions
    {
        /// <summary>
        /// What a request gets for each option left null, by wire name: the client's own default
        /// for "space" (game positions are world coordinates; the server's default is "grid"), the
        /// server's for the others (null: no limit, or the server chooses). Tests.cs checks every
        /// name and value against the server's one definition, `pathserver options --json`.
        /// </summary>
        public static readonly IReadOnlyDictionary<string, object> Defaults = new Dictionary<string, object>
        {
            { "space", "world" },
            { "smooth", "los" },
            { "diagonal", "no_corner_cutting" },
            { "snap", true },
            { "allow_partial", false },
            { "max_expansions", null },
            { "heuristic", null },
            { "weight", 1.0 },
            { "max_climb", null },
            { "algorithm", "auto" },
            { "line_of_sight", true },
            { "max_cost", null },
            { "region", null },
            { "lookahead", "cell" },
            { "avoid", null },
            { "avoid_cost", null },
            { "traversal", null },
        };

        static readonly IReadOnlyList<string> PathOps = Array.AsReadOnly(new[] { "path", "paths" });
        static readonly IReadOnlyList<string> SearchOps = Array.AsReadOnly(new[] { "path", "paths", "reachable", "field", "next_steps" });
        static readonly IReadOnlyList<string> EveryOp = Array.AsReadOnly(new[] { "path", "paths", "reachable", "field", "next_steps", "check_block" });

        /// <summary>
        /// The requests (wire ops) each option goes with, by wire name, as this client sends them:
        /// the PathOptions properties, and the options the methods take as parameters ("unit_size":
        /// unitSize; "goals": FindPathToAnyAsync's, DistanceFieldAsync's and NextStepsAsync's goals,
        /// a PathRequest's Goals; "budget": ReachableAsync's budget). A property set for a request
        /// that does not take it throws ArgumentException before anything is sent. Tests.cs checks
        /// this table, op by op, against the server's (`pathserver options --json`, each option's
        /// "ops"); "update" takes "space" there, and UpdateAsync sends grid cells (GridRect) only.
        /// </summary>
        public static readonly IReadOnlyDictionary<string, IReadOnlyList<string>> Requests = new Dictionary<string, IReadOnlyList<string>>
        {
            { "unit_size", EveryOp },
            { "space", EveryOp },
            { "smooth", PathOps },
            { "allow_partial", PathOps },
            { "snap", EveryOp },
            { "max_expansions", PathOps },
            { "heuristic", PathOps },
            { "weight", PathOps },
            { "diagonal", EveryOp },
            { "max_climb", SearchOps },
            { "algorithm", PathOps },
            { "line_of_sight", PathOps },
            { "goals", Array.AsReadOnly(new[] { "path", "paths", "field", "next_steps" }) },
            { "budget", Array.AsReadOnly(new[] { "reachable" }) },
            { "max_cost", Array.AsReadOnly(new[] { "field", "next_steps" }) },
            { "region", Array.AsReadOnly(new[] { "field" }) },
            { "lookahead", Array.AsReadOnly(new[] { "next_steps" }) },
            { "avoid", SearchOps },
            { "avoid_cost", SearchOps },
            { "traversal", EveryOp },
        };

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
        /// <summary>DistanceFieldAsync: the window of grid cells returned (inside the map); the whole map when null.</summary>
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

        // Writes the options set, for request op. "space" is left out when Grid, the wire's default
        // (so the requests of docs/protocol.md's golden vectors come out byte for byte).
        internal void WriteTo(MsgPackMap body, string op)
        {
            if (Space == CoordinateSpace.World) body.Add("space", "world");
            Put(body, op, "smooth", Smooth);
            Put(body, op, "allow_partial", AllowPartial);
            Put(body, op, "snap", Snap);
            Put(body, op, "max_expansions", MaxExpansions.HasValue ? (object)(long)MaxExpansions.Value : null);
            Put(body, op, "heuristic", Heuristic);
            Put(body, op, "diagonal", Diagonal);
            Put(body, op, "max_climb", MaxClimb);
            Put(body, op, "algorithm", Algorithm);
            Put(body, op, "weight", Weight);
            Put(body, op, "line_of_sight", LineOfSight);
            Put(body, op, "max_cost", MaxCost);
            Put(body, op, "region", Region.HasValue ? PathServerClient.RectToWire(Region.Value) : null);
            Put(body, op, "lookahead", Lookahead);
            Put(body, op, "avoid", Avoid != null ? Avoid.ToWire() : null);
            Put(body, op, "avoid_cost", AvoidCost);
            Put(body, op, "traversal", Traversal != null ? Traversal.ToWire() : null);
            if (Extra != null)
            {
                foreach (var pair in Extra) body.Add(pair.Key, pair.Value);
            }
        }

        static void Put(MsgPackMap body, string op, string name, object value)
        {
            if (value == null) return;
            var ops = Requests[name];
            bool taken = false;
            for (int i = 0; i < ops.Count && !taken; i++) taken = ops[i] == op;
            if (!taken)
                throw new ArgumentException("PathOptions' \"" + name + "\" is not an option of \"" + op + "\" requests; it goes with "
                    + string.Join(", ", Requests[name]) + ".", "options");
            body.Add(name, value);
        }
    }
}
