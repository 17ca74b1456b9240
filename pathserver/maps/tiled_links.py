"""Tiled's object layers of links (issue #35): an object layer named ``links`` holds
polylines (or lines) from one end of a link to the other, with the properties ``cost``,
``two_way``, ``tag``, ``from_floor`` and ``to_floor``; read as ``put_map``'s links, and
written back from a map's. The links themselves are checked where every map's are
(:func:`pathserver.floors.check_links`, through GridMap); a problem there is reported at
the object (``layers[3].objects[0]``), which :func:`read_links` tells the loader.
"""

from __future__ import annotations

import numpy as np

from pathserver.hexes import cell_at, world_centre
from pathserver.maps.files import is_number, map_error, tile_sizes, tiled_objects, tiled_properties

#: Object layers of this name hold links (polylines), see :func:`read_links`.
LINKS_LAYER = "links"


def pixel_cells(path, document: dict, orientation: str, layout: str | None, tiled_hex: tuple | None):
    """A function of Tiled pixel positions ``(px, py)`` (arrays) to the cells holding
    them: orthogonal ``px // tilewidth``, ``py // tileheight``; isometric both by
    ``tileheight`` (Tiled's object coordinates on those maps); hexagonal through the
    transform Tiled draws with (``tiled_hex``: ``(origin, tile size)``, from
    :func:`pathserver.maps.tiled.hex_transform`)."""
    if layout is not None:
        origin, tile_size = tiled_hex
        return lambda px, py: cell_at(layout, px, py, origin, tile_size)
    tile_w, tile_h = tile_sizes(path, document, "a map with links")
    across = tile_h if orientation == "isometric" else tile_w
    return lambda px, py: (np.floor(np.asarray(px) / across).astype(np.int64),
                           np.floor(np.asarray(py) / tile_h).astype(np.int64))


def read_links(path, link_layers: list, to_cell) -> tuple[list[dict], list[str]]:
    """The links the polylines of the ``links`` object layers draw, as ``put_map`` takes
    them, and the field of each (its object); see docs/guide.md, "Floors and links"."""
    links, fields = [], []
    for where, layer, floor in link_layers:
        for obj_where, obj in tiled_objects(path, layer.get("objects", []), f"{where}.objects"):
            ends = _polyline_ends(path, obj, obj_where)
            (ax, bx), (ay, by) = (v.tolist() for v in to_cell(ends[:, 0], ends[:, 1]))
            props = tiled_properties(path, obj, obj_where)
            link = {"from": [ax, ay, props.get("from_floor", floor or 0)],
                    "to": [bx, by, props.get("to_floor", floor or 0)], "two_way": props.get("two_way", True)}
            if "cost" in props:
                link["cost"] = props["cost"]
            if props.get("tag", "") != "":
                link["tag"] = props["tag"]
            links.append(link)
            fields.append(obj_where)
    return links, fields


def _polyline_ends(path, obj: dict, where: str) -> np.ndarray:
    """float64 (2, 2): the pixel positions of a polyline object's first and last points
    (its points are relative to the object's position, turned by its ``rotation``)."""
    points = obj.get("polyline")
    shape = ("a link is a polyline (or a line) from one end to the other, its properties cost, two_way, tag, "
             "from_floor, to_floor")
    if not isinstance(points, list) or len(points) < 2:
        raise map_error(path, f"field '{where}'", shape)
    ends = []
    for point in (points[0], points[-1]):
        if not isinstance(point, dict) or not all(is_number(point.get(axis)) for axis in "xy"):
            raise map_error(path, f"field '{where}.polyline'", "points must be {x, y} of finite numbers")
        ends.append((point["x"], point["y"]))
    for key in ("x", "y", "rotation"):
        if not is_number(obj.get(key, 0)):
            raise map_error(path, f"field '{where}.{key}'", f"must be a finite number, got {obj.get(key)!r:.40}")
    ends = np.array(ends, dtype=np.float64)
    angle = np.radians(obj.get("rotation", 0))
    if angle:  # Tiled turns clockwise on screen, y pointing down
        turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        ends = ends @ turn.T
    return ends + np.array([obj.get("x", 0), obj.get("y", 0)], dtype=np.float64)


def link_objects(gridmap, tile_width: int, tile_height: int, tiled_hex: tuple | None) -> list[dict]:
    """The map's links as Tiled polyline objects from the centre of the ``from`` cell to
    the ``to`` cell's (in the pixels of the tile size written), their properties as
    :func:`read_links` reads them; ``tiled_hex``: a hex map's ``(origin, tile size)`` in
    Tiled's pixels (:func:`pathserver.maps.tiled.hex_transform`)."""
    if not len(gridmap.links):
        return []
    ends = gridmap.links.ends.astype(np.float64)
    if gridmap.hex:
        origin, tile_size = tiled_hex
        px, py = world_centre(gridmap.layout, ends[:, :, 0], ends[:, :, 1], origin, tile_size)
    else:
        px, py = (ends[:, :, 0] + 0.5) * tile_width, (ends[:, :, 1] + 0.5) * tile_height
    objects = []
    for k, tag in enumerate(gridmap.links.tags):
        properties = [{"name": "cost", "type": "float", "value": float(gridmap.links.cost[k])},
                      {"name": "two_way", "type": "bool", "value": bool(gridmap.links.two_way[k])}]
        if gridmap.floors > 1:
            properties += [{"name": "from_floor", "type": "int", "value": int(gridmap.links.ends[k, 0, 2])},
                           {"name": "to_floor", "type": "int", "value": int(gridmap.links.ends[k, 1, 2])}]
        if tag is not None:
            properties.append({"name": "tag", "type": "string", "value": tag})
        x, y = float(px[k, 0]), float(py[k, 0])
        objects.append({"height": 0, "id": k + 1, "name": tag or "", "polyline": [
            {"x": 0, "y": 0}, {"x": float(px[k, 1]) - x, "y": float(py[k, 1]) - y}],
            "properties": properties, "rotation": 0, "type": "link", "visible": True, "width": 0, "x": x, "y": y})
    return objects
