"""xdap: typed, distributed scientific arrays (placeholder, filled in below)."""
__version__ = "0.1.0"
