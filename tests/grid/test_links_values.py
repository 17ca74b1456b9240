"""A map's floors and links checked where they come in (pathserver.grid.links): every bad
value refused with its field in ``at``, good ones as read-only arrays."""

import math

import numpy as np
import pytest

from pathserver.errors import NonFiniteError, OutOfBoundsError, RequestError, TooLargeError
from pathserver.grid.links import MAX_FLOORS, MAX_LINKS, NO_LINKS, check_floors, check_links


def test_floors():
    assert check_floors(None) == 1 and check_floors(3) == 3
    for bad in (0, MAX_FLOORS + 1, 2.5, True, "2"):
        with pytest.raises(RequestError) as error:
            check_floors(bad)
        assert error.value.at == "floors"


def test_good_links_become_arrays():
    links = check_links([{"from": [1, 2], "to": [3, 4, 1], "cost": 0},
                         {"from": [0, 0, 1], "to": [0, 0], "cost": 2.5, "two_way": False, "tag": "drop"}],
                        2, 5, 6)
    assert links.ends.tolist() == [[[1, 2, 0], [3, 4, 1]], [[0, 0, 1], [0, 0, 0]]]
    assert links.cost.tolist() == [0.0, 2.5] and links.two_way.tolist() == [True, False]
    assert links.tags == (None, "drop") and not links.ends.flags.writeable
    assert check_links(links.to_wire(2), 2, 5, 6).ends.tolist() == links.ends.tolist()
    assert check_links(None, 1, 5, 6) is NO_LINKS


@pytest.mark.parametrize("links, error, at", [
    ("ladder", RequestError, "links"),
    (["x"], RequestError, "links[0]"),
    ([{"from": [0, 0], "cost": 1}], RequestError, "links[0].to"),
    ([{"from": [0, 0], "to": [9, 0], "cost": 1}], OutOfBoundsError, "links[0].to"),
    ([{"from": [0, 0, 2], "to": [1, 0], "cost": 1}], OutOfBoundsError, "links[0].from[2]"),
    ([{"from": [0, 0.5], "to": [1, 0], "cost": 1}], RequestError, "links[0].from[1]"),
    ([{"from": [0, 0], "to": [1, math.nan], "cost": 1}], NonFiniteError, "links[0].to[1]"),
    ([{"from": [0, 0], "to": [1, 0], "cost": -1}], RequestError, "links[0].cost"),
    ([{"from": [0, 0], "to": [1, 0], "cost": math.inf}], NonFiniteError, "links[0].cost"),
    ([{"from": [0, 0], "to": [1, 0]}], RequestError, "links[0].cost"),
    ([{"from": [0, 0], "to": [1, 0], "cost": 1, "two_way": 1}], RequestError, "links[0].two_way"),
    ([{"from": [0, 0], "to": [1, 0], "cost": 1, "tag": ""}], RequestError, "links[0].tag"),
    ([{"from": [0, 0], "to": [1, 0], "cost": 1, "speed": 2}], RequestError, "links[0].speed"),
])
def test_bad_links_are_refused_at_their_field(links, error, at):
    with pytest.raises(error) as raised:
        check_links(links, 2, 5, 6)
    assert raised.value.at == at


def test_too_many_links():
    with pytest.raises(TooLargeError) as error:
        check_links([{"from": [0, 0], "to": [1, 0], "cost": 1}] * (MAX_LINKS + 1), 1, 5, 6)
    assert error.value.at == "links"
    assert len(check_links(np.zeros(0).tolist(), 1, 5, 6)) == 0
