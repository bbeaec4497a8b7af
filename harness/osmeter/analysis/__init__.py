"""Runs set against each other: compare's model, verdicts and output formats, the run-to-run stability
of every id, and a fleet's hosts side by side."""
