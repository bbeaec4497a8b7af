"""The documents of a results directory: the LaTeX report and its PDF, the executed notebook, and the
estimates both set against the measurements."""
