"""A machine's runs over time: every run indexed in SQLite, the change points across them, and a page to see them."""
