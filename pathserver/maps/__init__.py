"""Map files (Moving AI ``.map``, PNG, Tiled JSON, sidecars), Moving AI scenarios, and the
folder registry with hot reload."""

from pathserver.maps.formats import load_map, save_map
from pathserver.maps.registry import MapRegistry
from pathserver.maps.scen import Scenario, find_map_for_scen, load_scen, parse_scen

__all__ = ["MapRegistry", "Scenario", "find_map_for_scen", "load_map", "load_scen", "parse_scen", "save_map"]
