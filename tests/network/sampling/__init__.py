"""The tests of ``numpyro_ugm.network.sampling``, a package of tests: their modules and conftest are
named ``network.sampling.test_...`` and ``network.sampling.conftest``."""
