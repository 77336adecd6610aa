"""The tests of ``numpyro_ugm.network.estimation``, a package of tests: their modules and conftest are
named ``network.estimation.test_...`` and ``network.estimation.conftest``."""
