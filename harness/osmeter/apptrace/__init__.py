"""Application I/O recorded by other tools, as iotrace traces: a Darshan log's DXT records (darshan, totrace)."""
