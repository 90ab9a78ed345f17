"""runtimes."""
