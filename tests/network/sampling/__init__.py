"""Needed: makes the conftest.py here a module of its own (``network.sampling.conftest``), so that it
does not replace the top conftest that other tests import (``from conftest import ...``)."""
