"""Helpers of the test suite, one module per concern (import them as
``from helpers.models import ...``)."""
