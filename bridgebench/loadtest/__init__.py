"""Servers under load (DESIGN §1's second path): server.py starts, checks and stops a server mechanism;
driver/ is the open-model constant-rate load driver (a Go command)."""
