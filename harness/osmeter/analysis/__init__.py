"""Runs set against each other: compare's model and verdicts, the run-to-run stability of every id, a
fleet's hosts side by side, and the formats all three are shown in."""
