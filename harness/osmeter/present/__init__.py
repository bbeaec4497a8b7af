"""How figures are shown: values with their units, text, Markdown and LaTeX tables, the rows every
output of a run shows, the shared plot style and kinds, lmbench's tables, and a LaTeX document and its PDF."""
