"""bridgebench: what does it cost to run user code through each embedding mechanism, and is the difference real?"""

__version__ = "0.1.0"
