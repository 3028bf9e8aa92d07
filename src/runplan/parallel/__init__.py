"""Parallel layout solver: memory and time of a layout, and the exhaustive vectorized search over layouts."""
