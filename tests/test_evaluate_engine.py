"""The enumeration engine (evaluate/_engine.py): plans that sum a layer out in closed form
when that pays, chunks that decode an integer index into each configuration exactly once,
and the checks of the chunk size and of the sum-out mode. (The sums against brute force:
test_evaluate_enumeration.py.)"""

import jax.numpy as jnp
import numpy as np
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.evaluate._engine import check_size, chunk_states, chunks, make_plan


def test_plans_of_an_rbm():
    """RBM 3×2: its visible layer is the larger set of non-interacting variables; summed
    out it leaves the 2² hidden configurations (a reduction of 8 ≥ 4, so "auto" does it
    too); without summing out, all 2⁵ configurations in mixed radix."""
    target = ugm.UGM(ugm.models.rbm, 3, 2).target()
    for mode in (True, "auto"):
        plan = make_plan(target, ("v", "h"), mode)
        assert plan.summed == {"v": None} and plan.num_configurations == 4
        assert plan.segments == (("h", None, 2, 2),)
    full = make_plan(target, ("v", "h"), False)
    assert full.summed == {} and full.num_configurations == 32
    np.testing.assert_array_equal(full.radices, [2] * 5)
    np.testing.assert_array_equal(full.strides, [1, 2, 4, 8, 16])
    with pytest.raises(ValueError, match="sum_out must be True, False or 'auto'"):
        make_plan(target, ("v", "h"), "always")


def test_chunks_visit_every_configuration_once():
    """Chunks of 7 over 32 configurations: 5 chunks, the last holding 4 valid ones; the
    valid states of all chunks are the 32 configurations of the 5 binary units, each once."""
    target = ugm.UGM(ugm.models.rbm, 3, 2).target()
    plan = make_plan(target, ("v", "h"), False)
    assert chunks(plan, 7) == (7, 5) and chunks(plan, 100) == (32, 1)
    base = {"v": jnp.zeros(3), "h": jnp.zeros(2)}
    seen = []
    for c in range(5):
        states, valid = chunk_states(plan, target.state_sites, base, jnp.asarray(c), 7)
        valid = np.asarray(valid)
        assert valid.sum() == (4 if c == 4 else 7)
        rows = np.concatenate([np.asarray(states["v"]), np.asarray(states["h"])], 1)[valid]
        seen += [tuple(r) for r in rows]
    assert len(seen) == 32 and len(set(seen)) == 32
    assert set(v for r in seen for v in r) == {0.0, 1.0}
    check_size(plan, 7, "log_partition")  # small: no error
    with pytest.raises(ValueError, match="^log_partition: chunk_size must be an integer"):
        check_size(plan, 0, "log_partition")
