"""The tests of ``numpyro_ugm.network``, a package of tests: their modules and conftest are
named ``network.test_...`` and ``network.conftest``."""
