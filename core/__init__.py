"""labtui's research engine. Knows nothing of Textual: it emits events and asks checkpoints."""

__version__ = "0.1.0"
