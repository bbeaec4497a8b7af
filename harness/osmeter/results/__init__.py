"""A results directory: its layout and readers (store), the types its records are read as (model), the one
bounded reader of what others made (reader), its writer (writer), and what its recorded interference readings
say (readings)."""
