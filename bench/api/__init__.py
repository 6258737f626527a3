"""Helpers for bench/api_load.py: a minimal HTTP client, a server launcher and the in-process baseline."""
