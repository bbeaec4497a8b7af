"""Other machines over OpenSSH: the one ssh transport, the machine measured here or on a thin host (and
the agent that serves it there), and the network peer."""
