"""osmeter: microbenchmarks that characterize a machine's hardware and OS."""

__version__ = "0.1.0"
