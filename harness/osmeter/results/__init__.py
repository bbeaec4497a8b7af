"""A results directory: its layout and readers (store), its writer (writer), and what its recorded
interference readings say (readings)."""
