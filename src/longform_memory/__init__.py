"""Compatibility name for :mod:`membrane.longform`."""
