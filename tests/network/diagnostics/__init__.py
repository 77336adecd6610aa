"""The tests of ``numpyro_ugm.network.diagnostics``, a package of tests: their modules and conftest are
named ``network.diagnostics.test_...`` and ``network.diagnostics.conftest``."""
