"""Campaigns: the one engine (engine.py) and the kinds it runs behind one interface (kind.py): timing
(timing.py, iterations of wall time) and load (load.py, servers under constant-rate load). kinds.py finds a
kind by name or by a stored campaign; config.py is a campaign's stored config as one typed value."""
