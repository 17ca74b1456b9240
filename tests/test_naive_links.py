"""The links-and-floors reference (tests/naive_links.py) on maps small enough to check by
hand: what issue #35's tests will hold the product to."""

import math

import numpy as np

import naive_links


def two_floors():
    """Two 5 x 3 floors, every cell open, each step costing 1 (diagonals sqrt 2)."""
    passable = [np.ones((3, 5), np.uint8), np.ones((3, 5), np.uint8)]
    cost = [np.ones((3, 5)), np.ones((3, 5))]
    return passable, cost


def test_floors_join_only_through_links():
    passable, cost = two_floors()
    assert naive_links.cost(passable, cost, [], (0, 0), (4, 0, 1)) == math.inf
    ladder = {"from": [2, 1], "to": [2, 1, 1], "cost": 5}
    # Two steps to the ladder, 5 to climb, two steps on: 2 + 5 + 2.
    assert naive_links.cost(passable, cost, [ladder], (0, 1), (4, 1, 1)) == 9
    # Two-way by default: back down too.
    assert naive_links.cost(passable, cost, [ladder], (4, 1, 1), (0, 1)) == 9


def test_one_way_links_and_zero_cost_teleporters():
    passable, cost = two_floors()
    drop = {"from": [0, 0, 1], "to": [0, 0], "cost": 1, "two_way": False}
    assert naive_links.cost(passable, cost, [drop], (0, 0, 1), (1, 0)) == 2
    assert naive_links.cost(passable, cost, [drop], (1, 0), (0, 0, 1)) == math.inf
    # A teleporter of cost 0 beats the walk across the floor.
    portal = {"from": [0, 1], "to": [4, 1], "cost": 0}
    assert naive_links.cost(passable, cost, [portal], (0, 1), (4, 1)) == 0
    assert naive_links.cost(passable, cost, [portal], (1, 1), (4, 1)) == 1


def test_tags_traversal_and_blocked_ends():
    passable, cost = two_floors()
    ladder = {"from": [2, 1], "to": [2, 1, 1], "cost": 5, "tag": "ladder"}
    assert naive_links.cost(passable, cost, [ladder], (2, 1), (2, 1, 1), rules={"ladder": None}) == math.inf
    assert naive_links.cost(passable, cost, [ladder], (2, 1), (2, 1, 1), rules={"ladder": 3.0}) == 15
    # An avoided (blocked) end bars the link.
    passable[1][1, 2] = 0
    assert naive_links.cost(passable, cost, [ladder], (2, 1), (3, 1, 1)) == math.inf
    path = [(2, 1, 0), (2, 1, 1)]
    passable[1][1, 2] = 1
    assert naive_links.path_is_valid(passable, [ladder], path, {0: 0})
    assert not naive_links.path_is_valid(passable, [ladder], path, {})
