"""The words and numbers every stage shares: the errors a command ends with, the units, the statistics
(within a run and between runs), and iogen's histogram geometry."""
