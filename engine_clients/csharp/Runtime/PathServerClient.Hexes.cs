// PathServerClient.Hexes.cs: hex maps in the pathserver C# client (PathServerClient.cs lists its
// files): their shape and layout values, and PathServerHexes, the coordinate helpers (offset <->
// axial and cube, distance, neighbours, cell centres, the cell holding a world point), the same
// as the Python package's pathserver.hexes and the Godot addon's PathServerHexes. All three are
// pinned to values Godot gives (tests/data/hex_godot.json).

using System;

namespace PathServer
{
    /// <summary>A map's shape: square cells (the default) or hexagons (MapData.Layout says how).</summary>
    public enum MapShape
    {
        Square,
        Hex,
    }

    /// <summary>
    /// How a hex map's cells (x, y) = (column, row) sit on the plane (Red Blob Games' offset
    /// coordinates): OddR / EvenR pointy-top hexes with the odd / even rows shoved right by half a
    /// hex (Godot: a hexagon TileSet, TILE_OFFSET_AXIS_HORIZONTAL, TILE_LAYOUT_STACKED /
    /// TILE_LAYOUT_STACKED_OFFSET); OddQ / EvenQ flat-top hexes with columns shoved down
    /// (TILE_OFFSET_AXIS_VERTICAL). On the wire "odd-r", "even-r", "odd-q", "even-q".
    /// </summary>
    public enum HexLayout
    {
        OddR,
        EvenR,
        OddQ,
        EvenQ,
    }

    /// <summary>
    /// What makes an upload a hex map (PutMapAsync's hex): its layout and its tile size, the
    /// hexagon's bounding box in world units (Godot's TileSet tile_size times the layer's scale).
    /// </summary>
    public struct HexShape
    {
        public HexLayout Layout { get; }
        public double TileWidth { get; }
        public double TileHeight { get; }

        public HexShape(HexLayout layout, double tileWidth, double tileHeight)
        {
            Layout = layout;
            TileWidth = tileWidth;
            TileHeight = tileHeight;
        }
    }

    /// <summary>
    /// Hex map coordinates as the server has them. A cell's world centre is origin + Center(layout,
    /// x, y) * (tileWidth, tileHeight), where TileMapLayer.map_to_local puts it; CellAt is the
    /// hexagon holding a point, with local_to_map's choices on shared edges. Neighbors and moves go
    /// through axial coordinates (q, r): r is the row on -r layouts, q the column on -q ones.
    /// </summary>
    public static class PathServerHexes
    {
        /// <summary>Rows (-r) or columns (-q) are this many tile heights (widths) apart.</summary>
        public const double Overlap = 0.75;

        static readonly string[] WireNames = { "odd-r", "even-r", "odd-q", "even-q" };

        /// <summary>
        /// The six axial directions (dq, dr), in the order Neighbors lists them: counter-clockwise
        /// on screen, from east on -r layouts, from south-east on -q ones.
        /// </summary>
        public static readonly int[,] Directions = { { 1, 0 }, { 1, -1 }, { 0, -1 }, { -1, 0 }, { -1, 1 }, { 0, 1 } };

        /// <summary>The layout's wire name: "odd-r", "even-r", "odd-q" or "even-q".</summary>
        public static string ToWire(HexLayout layout) { return WireNames[(int)layout]; }

        /// <summary>The layout of a wire name; false for anything else.</summary>
        public static bool TryParse(string name, out HexLayout layout)
        {
            int index = Array.IndexOf(WireNames, name);
            layout = index < 0 ? HexLayout.OddR : (HexLayout)index;
            return index >= 0;
        }

        /// <summary>True for OddR and EvenR (pointy-top, rows shoved).</summary>
        public static bool IsPointy(HexLayout layout) { return layout == HexLayout.OddR || layout == HexLayout.EvenR; }

        /// <summary>1 when row (-r) or column (-q) index is shoved by half a hex, else 0.</summary>
        public static int Shoved(HexLayout layout, int index)
        {
            bool odd = layout == HexLayout.OddR || layout == HexLayout.OddQ;
            return odd ? index & 1 : 1 - (index & 1);
        }

        // How far the shoved coordinate moves the other between offset and axial; the numerator is
        // even, so integer division is exact.
        static int Half(HexLayout layout, int index)
        {
            bool odd = layout == HexLayout.OddR || layout == HexLayout.OddQ;
            return odd ? (index - (index & 1)) / 2 : (index + (index & 1)) / 2;
        }

        /// <summary>Offset cell (x, y) -> axial (q, r).</summary>
        public static void ToAxial(HexLayout layout, int x, int y, out int q, out int r)
        {
            if (IsPointy(layout)) { q = x - Half(layout, y); r = y; }
            else { q = x; r = y - Half(layout, x); }
        }

        /// <summary>Axial (q, r) -> offset cell (x, y); the inverse of ToAxial.</summary>
        public static void FromAxial(HexLayout layout, int q, int r, out int x, out int y)
        {
            if (IsPointy(layout)) { x = q + Half(layout, r); y = r; }
            else { x = q; y = r + Half(layout, q); }
        }

        /// <summary>Offset cell (x, y) -> cube (q, r, s), q + r + s = 0.</summary>
        public static void ToCube(HexLayout layout, int x, int y, out int q, out int r, out int s)
        {
            ToAxial(layout, x, y, out q, out r);
            s = -q - r;
        }

        /// <summary>Hex steps between cells (ax, ay) and (bx, by).</summary>
        public static int Distance(HexLayout layout, int ax, int ay, int bx, int by)
        {
            int qa, ra, qb, rb;
            ToAxial(layout, ax, ay, out qa, out ra);
            ToAxial(layout, bx, by, out qb, out rb);
            int dq = qa - qb, dr = ra - rb;
            return (Math.Abs(dq) + Math.Abs(dr) + Math.Abs(dq + dr)) / 2;
        }

        /// <summary>The six cells next to (x, y) in Directions' order, as x, y pairs (12 ints; no map bounds).</summary>
        public static int[] Neighbors(HexLayout layout, int x, int y)
        {
            int q, r;
            ToAxial(layout, x, y, out q, out r);
            var cells = new int[12];
            for (int i = 0; i < 6; i++)
                FromAxial(layout, q + Directions[i, 0], r + Directions[i, 1], out cells[2 * i], out cells[2 * i + 1]);
            return cells;
        }

        /// <summary>The centre of cell (x, y) in tile units (TileMapLayer.map_to_local / tile_size).</summary>
        public static void Center(HexLayout layout, int x, int y, out double cx, out double cy)
        {
            if (IsPointy(layout)) { cx = x + 0.5 + 0.5 * Shoved(layout, y); cy = Overlap * y + 0.5; }
            else { cx = Overlap * x + 0.5; cy = y + 0.5 + 0.5 * Shoved(layout, x); }
        }

        /// <summary>The centre of cell (x, y) in world units.</summary>
        public static PathPoint WorldCenter(HexLayout layout, int x, int y, PathPoint origin, double tileWidth, double tileHeight)
        {
            double cx, cy;
            Center(layout, x, y, out cx, out cy);
            return new PathPoint((float)(origin.X + cx * tileWidth), (float)(origin.Y + cy * tileHeight));
        }

        /// <summary>
        /// The cell whose hexagon contains the world point (px, py) (maybe outside the map). On a
        /// shared edge it picks as Godot's local_to_map does: -r: the hexagon right of a vertical
        /// edge, above an upper-left edge (and a top corner), below an upper-right edge; -q: the
        /// hexagon below a horizontal edge, left of a lower-left edge (and a left corner), right
        /// of an upper-left edge.
        /// </summary>
        public static void CellAt(HexLayout layout, double px, double py, PathPoint origin, double tileWidth, double tileHeight,
            out int x, out int y)
        {
            double u = (px - origin.X) / tileWidth, v = (py - origin.Y) / tileHeight;
            bool pointy = IsPointy(layout);
            double along = pointy ? u : v;
            double across = (pointy ? v : u) / Overlap;
            // Rows (columns) as unit bands; in a band a cell's box is a unit square whose two
            // corners on the previous band's side belong to that band's cells.
            int band = (int)Math.Floor(across);
            int shift = Shoved(layout, band);
            double shifted = along - 0.5 * shift;
            int line = (int)Math.Floor(shifted);
            double insideAcross = across - band;
            double insideAlong = shifted - line - 0.5;
            double slope = 1.0 / Overlap - 1.0;
            bool first, second;
            if (pointy)
            {
                first = insideAlong * slope + 0.5 * insideAcross <= 0;
                second = insideAlong * slope - 0.5 * insideAcross > 0;
            }
            else
            {
                first = -0.5 * insideAcross - insideAlong * slope > 0;
                second = 0.5 * insideAcross - insideAlong * slope <= 0;
            }
            if (first) { line += shift - 1; band -= 1; }
            else if (second) { line += shift; band -= 1; }
            x = pointy ? line : band;
            y = pointy ? band : line;
        }
    }
}
