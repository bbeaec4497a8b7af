"""The machine measured, as a run sets it up and leaves it: what it is, how a probe process is started
on it, the conditions set and undone (isolation, no halt, RAM devices), the counters of what else
ran, and what killed runs left."""
