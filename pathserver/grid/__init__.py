"""The map model, the per-unit-size cache, and the search wrappers."""
