"""Running probes: the options of a run, its plan, the launch of each probe's processes and the passes
after them (more processes for precision, kernel paths, sentinels), the finished run's summary,
campaigns of several runs and ab's interleaved ones."""
