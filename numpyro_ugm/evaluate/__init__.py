"""Evaluation of learned models: exact enumeration for small models."""

from . import exact

__all__ = ["exact"]
