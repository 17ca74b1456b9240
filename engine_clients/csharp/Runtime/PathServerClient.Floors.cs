// PathServerClient.Floors.cs: maps of several floors and their links in the pathserver C# client
// (PathServerClient.cs lists its files): MapLink (a ladder, stairs, a teleporter, a one-way drop:
// PutMapAsync's and UpdateAsync's links, MapData.Links), LinkStep (a path's move through one,
// PathResult.Links), their wire forms, and what the client knows of each map's floors, which
// decides whether it sends a request's points as bins of pairs (floor 0) or as arrays of
// [x, y, floor] (docs/protocol.md, "Floors and links").

using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Globalization;

namespace PathServer
{
    /// <summary>
    /// A link between two cells of a map (grid cells, whatever a request's space; each on its
    /// PathPoint.Floor): one move From -> To, and back when TwoWay, costing exactly Cost (>= 0;
    /// terrain does not multiply it). A unit takes it when its footprint fits at both ends. Tag,
    /// one of the map's tag names, lets PathOptions.Traversal bar the link or price it as it
    /// does cells of that tag. default(MapLink) is one-way: build links with the constructor.
    /// </summary>
    public struct MapLink : IEquatable<MapLink>
    {
        public PathPoint From { get; }
        public PathPoint To { get; }
        public double Cost { get; }
        /// <summary>The move goes To -> From too (the constructor's default).</summary>
        public bool TwoWay { get; }
        /// <summary>One of the map's tag names, or null.</summary>
        public string Tag { get; }

        public MapLink(PathPoint from, PathPoint to, double cost, bool twoWay = true, string tag = null)
        {
            From = from;
            To = to;
            Cost = cost;
            TwoWay = twoWay;
            Tag = tag;
        }

        public bool Equals(MapLink other)
        {
            return From == other.From && To == other.To && Cost.Equals(other.Cost) && TwoWay == other.TwoWay && Tag == other.Tag;
        }

        public override bool Equals(object obj) { return obj is MapLink && Equals((MapLink)obj); }
        public override int GetHashCode() { return (From.GetHashCode() * 397 ^ To.GetHashCode()) * 397 ^ Cost.GetHashCode(); }

        /// <summary>"(1, 2) -> (1, 2, 1) cost 3", "&lt;-&gt;" when two-way, then the tag if any.</summary>
        public override string ToString()
        {
            return From + (TwoWay ? " <-> " : " -> ") + To + " cost " + Cost.ToString("R", CultureInfo.InvariantCulture)
                + (Tag == null ? "" : " " + Tag);
        }

        // {"from", "to", "cost", "two_way", "tag"?}, as docs/protocol.md lists them.
        internal MsgPackMap ToWire()
        {
            var wire = new MsgPackMap
            {
                { "from", PathServerClient.PointToWire(From) }, { "to", PathServerClient.PointToWire(To) },
                { "cost", PathServerClient.NumberToWire(Cost) }, { "two_way", TwoWay },
            };
            if (Tag != null) wire.Add("tag", Tag);
            return wire;
        }

        internal static MapLink FromWire(object value, string field, long id)
        {
            var map = value as IDictionary<string, object>;
            object cost = MsgPack.Get(map, "cost");
            if (map == null || !MsgPack.IsNumber(cost))
                throw new PathServerException(PathServerErrorCodes.BadReply, field + " is not a link with a cost", null, false, null, id);
            return new MapLink(PathServerClient.PointFromWire(MsgPack.Get(map, "from"), field + ".from"),
                PathServerClient.PointFromWire(MsgPack.Get(map, "to"), field + ".to"), MsgPack.ToDouble(cost),
                !false.Equals(MsgPack.Get(map, "two_way")), MsgPack.Get(map, "tag") as string);
        }
    }

    /// <summary>A path's move through a link: from Path[PathIndex] to Path[PathIndex + 1] by the map's link Link.</summary>
    public struct LinkStep : IEquatable<LinkStep>
    {
        /// <summary>The index in PathResult.Path of the point the link leaves from.</summary>
        public int PathIndex { get; }
        /// <summary>The link's index in the map's links (PutMapAsync's or UpdateAsync's list, MapData.Links).</summary>
        public int Link { get; }

        public LinkStep(int pathIndex, int link)
        {
            PathIndex = pathIndex;
            Link = link;
        }

        public bool Equals(LinkStep other) { return PathIndex == other.PathIndex && Link == other.Link; }
        public override bool Equals(object obj) { return obj is LinkStep && Equals((LinkStep)obj); }
        public override int GetHashCode() { return PathIndex * 397 ^ Link; }
        /// <summary>"[i, k]", as the wire writes it.</summary>
        public override string ToString() { return "[" + PathIndex + ", " + Link + "]"; }
    }

    public sealed partial class PathServerClient
    {
        /// <summary>The most links a map takes.</summary>
        public const int MaxLinks = 65536;

        // The floors of each map as this client last saw them: its uploads (PutMapAsync), its
        // reads (GetMapAsync, MapsAsync) and its drops. A map absent here is taken to have one.
        readonly ConcurrentDictionary<string, int> _floors = new ConcurrentDictionary<string, int>();

        /// <summary>
        /// How many floors this client knows map to have: from its PutMapAsync, GetMapAsync and
        /// MapsAsync; 1 for a map it has not seen. It decides whether a request's points (a packed
        /// batch's starts and goals, next_steps' positions, avoid's cells) go as bins of pairs
        /// (floor 0) or as arrays of [x, y, floor], as a map of several floors needs: call
        /// MapsAsync once before such requests on a map file with floors (a point on a floor
        /// above 0 makes arrays too). Another client's upload under the same name is not seen.
        /// </summary>
        public int KnownFloors(string map)
        {
            int floors;
            return map != null && _floors.TryGetValue(map, out floors) ? floors : 1;
        }

        void RememberFloors(string map, int floors)
        {
            if (map == null) return;
            if (floors > 1) _floors[map] = floors;
            else
            {
                int ignored;
                _floors.TryRemove(map, out ignored);
            }
        }

        // Whether a request's points go as arrays of [x, y, floor], not bins of pairs, decided once
        // for all of them: the map has floors, as far as this client knows, or a point of the
        // request (anyFloor, or one of options' avoided cells) is on a floor above 0.
        bool Triples(string map, PathOptions options, bool anyFloor)
        {
            return anyFloor || (options.Avoid != null && options.Avoid.HasFloors) || KnownFloors(map) > 1;
        }

        static bool AnyFloor(IList<PathPoint> points)
        {
            if (points == null) return false;
            for (int i = 0; i < points.Count; i++)
                if (points[i].Floor != 0) return true;
            return false;
        }

        internal static object[] LinksToWire(IList<MapLink> links)
        {
            if (links.Count > MaxLinks) throw new ArgumentException("at most " + MaxLinks + " links, not " + links.Count + ".", "links");
            var wire = new object[links.Count];
            for (int i = 0; i < wire.Length; i++) wire[i] = links[i].ToWire();
            return wire;
        }

        static MapLink[] LinksFromWire(object value, string field, long id)
        {
            if (value == null) return new MapLink[0];
            var items = value as object[];
            if (items == null) throw new PathServerException(PathServerErrorCodes.BadReply, field + " is not a list of links", null, false, null, id);
            var links = new MapLink[items.Length];
            for (int i = 0; i < links.Length; i++) links[i] = MapLink.FromWire(items[i], field + "[" + i + "]", id);
            return links;
        }

        // A path reply's "links": [[i, k], ...]; none when absent.
        static LinkStep[] LinkStepsFromWire(object value, long id)
        {
            if (value == null) return new LinkStep[0];
            var items = value as object[];
            if (items == null) throw new PathServerException(PathServerErrorCodes.BadReply, "a path's \"links\" is not a list", null, false, null, id);
            var steps = new LinkStep[items.Length];
            for (int i = 0; i < steps.Length; i++)
            {
                var pair = items[i] as object[];
                if (pair == null || pair.Length != 2 || !Array.TrueForAll(pair, MsgPack.IsNumber))
                    throw new PathServerException(PathServerErrorCodes.BadReply, "links[" + i + "] is not an [i, k] pair", null, false, null, id);
                steps[i] = new LinkStep((int)MsgPack.ToLong(pair[0]), (int)MsgPack.ToLong(pair[1]));
            }
            return steps;
        }

        // A reply's "floors": 1 when absent.
        static int FloorsFromWire(IDictionary<string, object> reply)
        {
            object value = MsgPack.Get(reply, "floors");
            return MsgPack.IsNumber(value) ? (int)MsgPack.ToLong(value) : 1;
        }
    }
}
