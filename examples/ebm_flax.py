"""Neural energies with flax: the 2-D EBM of ebm_2d.py with its energy network declared as
a flax linen module (``numpyro.contrib.module.flax_module``) or a flax nnx module
(``numpyro.contrib.module.nnx_module``), learned beside ebm_2d's equinox network.

Setup:

* the data sets, the energy f(x) = 10 tanh(g(x) / 10) − |x|² / (2 · 3²), the learner
  (``ugm.MLE`` with Adam on a cosine schedule, minibatches of 200; ``--learner``, by
  default PCD with 5 MALA steps per update) and the evaluation (the exact test
  log-likelihood by ``ugm.quadrature.log_likelihood``) are ebm_2d.py's, imported from it;
* g, a 2 → 64 → 64 → 1 SiLU MLP, written once as a linen module (``--library linen``:
  one ``numpyro.param`` site ``net$params`` holding the dict of ``Dense_i`` kernels and
  biases that ``module.init`` makes) or as an nnx module (``--library nnx``: the site
  holds ``nnx_module``'s pure dict of the module's ``nnx.Param`` arrays);
* the flax network starts at the weights of ebm_2d's equinox MLP (given to the learner
  as ``init_params``; without them it starts at flax's own initialization) and both are
  learned with the same keys: they compute the same function, so any difference in
  the learned test log-likelihood comes from the learner's chains, not the library
  (equinox computes weight @ x, flax x @ kernel: last-bit differences, which a MALA
  accept/reject decision can turn into another chain path; with an unadjusted kernel,
  ``--learner "PCD-5 Langevin eps=0.01"``, the two agree to about 1e-6).

Outputs: the table on stdout (the base Normal fitted to the training data, the truth for
the 8 Gaussians, the flax and the equinox network) and ``<out>/ebm_flax_<library>.json``.

Run: ``python examples/ebm_flax.py --library nnx`` (all three data sets, 6000 steps) or
``--quick`` (8 Gaussians, 300 steps: about a minute on 2 CPU cores). Needs flax and
equinox (``pip install 'numpyro_ugm[nn]'``).
"""

import jax
from ebm_2d import comparison_parser, compare, dense_layers, energy_model, equinox_model
from flax import linen, nnx
from numpyro.contrib.module import flax_module, nnx_module

WIDTH, DEPTH = 64, 2  # ebm_2d's network: two hidden layers of 64


class LinenMLP(linen.Module):
    """g(x): ``depth`` hidden SiLU layers of ``width``, one scalar output."""

    width: int = WIDTH
    depth: int = DEPTH

    @linen.compact
    def __call__(self, x):
        for _ in range(self.depth):
            x = jax.nn.silu(linen.Dense(self.width)(x))
        return linen.Dense(1)(x)[..., 0]


class NnxMLP(nnx.Module):
    """g(x) as an nnx module (its layers made, and initialized, at construction)."""

    def __init__(self, width=WIDTH, depth=DEPTH, *, rngs):
        sizes = [2] + [width] * depth + [1]
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs)
                                for a, b in zip(sizes[:-1], sizes[1:])])

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = jax.nn.silu(layer(x))
        return self.layers[-1](x)[..., 0]


def linen_model(net):
    """The EBM with a linen network, and its parameters at the equinox MLP ``net``'s
    weights (the site ``net$params`` holds what ``LinenMLP().init`` returns under
    ``"params"``)."""
    module = LinenMLP()
    model = energy_model(lambda x: flax_module("net", module, input_shape=(2,))(x))
    weights = {f"Dense_{i}": {"kernel": k, "bias": b}
               for i, (k, b) in enumerate(dense_layers(net))}
    return model, {"net$params": weights}


def nnx_model(net):
    """The EBM with an nnx network, and its parameters at ``net``'s weights (the site
    holds ``nnx.to_pure_dict`` of the module's parameters: ``layers`` -> index ->
    ``kernel``, ``bias``)."""
    module = NnxMLP(rngs=nnx.Rngs(0))
    model = energy_model(lambda x: nnx_module("net", module)(x))
    weights = {"layers": {i: {"kernel": k, "bias": b}
                          for i, (k, b) in enumerate(dense_layers(net))}}
    return model, {"net$params": weights}


if __name__ == "__main__":
    parser = comparison_parser(__doc__.splitlines()[0])
    parser.add_argument("--library", choices=["linen", "nnx"], default="linen")
    args = parser.parse_args()
    flax_way = {"linen": linen_model, "nnx": nnx_model}[args.library]
    compare({f"flax {args.library}": flax_way, "equinox": equinox_model}, args,
            f"ebm_flax_{args.library}")
