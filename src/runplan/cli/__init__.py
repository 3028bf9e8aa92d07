"""Command-line layer: parse flags, call a stage, render. No formulas live here."""
