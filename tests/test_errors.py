"""The error tree's messages: what a caller reads when a request is refused."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from pathserver import GridMap, find_path
from pathserver.errors import OutOfBoundsError, PathserverError
from pathserver.maps import MapRegistry
from pathserver.server import handlers


def test_a_huge_number_in_a_message_is_shortened():
    error = OutOfBoundsError(f"goal ({10**300}, 0) is outside the map (64x64)", at="goal")
    assert str(error) == "goal (1.000e300, 0) is outside the map (64x64) (at goal)"
    assert str(PathserverError("-" + "9" * 40)) == "-9.999e39"
    assert str(PathserverError("cells 0..63 x 0..63, gen 12345678901234567890")) == (
        "cells 0..63 x 0..63, gen 12345678901234567890"
    )


@pytest.mark.parametrize("goal", [(1e300, 0.0), (10**300, 0)])
def test_an_out_of_range_goal_is_not_echoed_whole(goal):
    with pytest.raises(OutOfBoundsError) as caught:
        find_path(GridMap(np.ones((4, 4), dtype=bool)), (0, 0), goal)
    assert len(str(caught.value)) < 120 and "e300" in str(caught.value)


def test_an_out_of_range_goal_on_the_wire_is_not_echoed_whole(tmp_path):
    (tmp_path / "m.map").write_text("type octile\nheight 2\nwidth 2\nmap\n..\n..\n")
    registry = MapRegistry(tmp_path)
    registry.load_all()
    body = msgpack.packb({"id": 1, "op": "path", "map": "m", "start": [0, 0], "goal": [1e300, 0]})
    reply = msgpack.unpackb(handlers.respond(body, registry))
    assert reply["error"]["code"] == "out_of_bounds"
    assert len(reply["error"]["message"]) < 120 and "e300" in reply["error"]["message"]
