"""What the suite measures: the probe model, the registry that collects the declarations, one module
per area (areas/) with its probes, derived figures and figures, and the cache levels read off a
latency curve."""
