"""The kernel tracer: tracefs sessions, traces read into per-thread timelines, where a sample's time
went in the kernel (kernel paths), and kernel virtual timers."""
