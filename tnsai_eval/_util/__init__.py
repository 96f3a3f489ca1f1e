"""Small private helpers shared across the core, each written once.

Nothing here is public API; the public packages re-export what users need.
"""
