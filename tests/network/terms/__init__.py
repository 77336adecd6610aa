"""The tests of ``numpyro_ugm.network.terms``, a package of tests: their modules and conftest are
named ``network.terms.test_...`` and ``network.terms.conftest``."""
