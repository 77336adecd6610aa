"""SMC with MALA moves on a 2-D energy-based model: the kernel's acceptance at each
tempering step against its target (0.574), and SMC's log Z against quadrature.

The model is the 8-Gaussians EBM of ``examples/ebm_2d.py`` in closed form (standardized
coordinates): f(x) = logsumexp_k(−|x − r u_k|² / (2 w²)) − |x|² / (2 · 3²), u_k the 8
unit vectors at multiples of 45°, r = 1.4, at two widths: w = 0.14 (the data's radius 2
and spread 0.2 over its standard deviation), modes much narrower than the base Normal
the particles start from, where MALA's step size must shrink about a hundredfold along
the path; and w = 0.6, a smooth density reached in two or three steps, where the step
size must grow from its initial 0.1 at once (the issue's case: acceptance 0.89-0.97).

For each number of MALA steps per β, ``temper`` (the engine of ``ugm.SMC`` and
``ugm.PSMC``) runs ``--particles`` particles from the base Normal to p(x), ESS fraction
0.9 per step, over ``--runs`` keys; printed: the mean acceptance of each tempering step
(first run), the last step's acceptance (mean and range over the runs) and log Z
against the quadrature value (mean error over the runs and its standard error). One
``ugm.SMC`` update (the learner's estimator, 2 MALA steps per β) reports its
``final_acceptance`` too.

Run: ``python benchmarks/bench_smc_mala.py [--particles 256] [--runs 20]``
"""

import argparse
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from _report import report

import numpyro_ugm as ugm
from numpyro_ugm.estimators.tempering import temper

TARGET = 0.574  # MALA's target acceptance


def eight_gaussians():
    """The EBM: a mixture of 8 narrow Gaussians on a circle, inside a wide envelope."""
    radius = numpyro.param("radius", 1.4)
    width = numpyro.param("width", 0.14)
    x = numpyro.sample("x", ugm.Real(2, loc=0.0, scale=1.0))
    angles = jnp.arange(8) * jnp.pi / 4
    means = radius * jnp.stack([jnp.cos(angles), jnp.sin(angles)], 1)
    energy = jax.nn.logsumexp(-jnp.sum((x - means) ** 2, -1) / (2 * width ** 2))
    numpyro.factor("energy", energy - jnp.sum(x ** 2) / (2 * 3.0 ** 2))


def run_temper(target, params, num_particles, num_steps, keys):
    """``temper`` from the base Normal to p(x) under each key (vmapped)."""
    f = target.logdensity_fn(params)
    kernel = ugm.kernels.mala().build(target)

    def one(key):
        init_key, key = jax.random.split(key)
        position = target.random_state(init_key, (num_particles,))
        weights = jnp.full((num_particles,), 1.0 / num_particles)
        return temper(kernel, key, position, weights, target.base_logdensity_fn(),
                      target.excess(f), target_ess=0.9, num_mcmc_steps=num_steps,
                      record_path=True)

    return jax.jit(jax.vmap(one))(keys)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=256)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    warnings.simplefilter("ignore", RuntimeWarning)  # temper's off-target warning
    model = ugm.UGM(eight_gaussians)
    target = model.target()
    keys = jax.random.split(jax.random.PRNGKey(0), args.runs)
    for width in (0.14, 0.6):
        params = {"radius": jnp.float32(1.4), "width": jnp.float32(width)}
        exact = ugm.quadrature.log_partition(model, params, bounds=(-4.0, 4.0),
                                             num_points=801)
        print(f"w = {width}: log Z by quadrature {exact.value:.4f} (error {exact.error:.1e})")
        for steps in (1, 2):
            case(target, params, exact.value, args, keys, f"w={width} MALA x{steps}", steps)
        smc = ugm.SMC(args.particles, num_mcmc_steps=2, kernel=ugm.kernels.mala())
        _, _, info = jax.jit(lambda k: smc.update(
            k, smc.init(None, target, params, None), target, params, None))(
            jax.random.PRNGKey(1))
        report(f"w={width} ugm.SMC update (MALA x2): final_acceptance",
               f"{float(info.final_acceptance):.3f}",
               f"log Z {float(info.log_z):.3f} vs {exact.value:.3f}")


def case(target, params, exact, args, keys, name, steps):
    """Run ``temper`` under every key and print and report the acceptance and log Z."""
    r = run_temper(target, params, args.particles, steps, keys)
    n = int(r.num_betas[0])
    path = np.asarray(r.step_acceptance[0, :n])
    print(f"{name} per beta, {n} tempering steps, acceptance per step "
          f"(run 0): " + " ".join(f"{a:.2f}" for a in path))
    final = np.asarray(r.final_acceptance)
    off = np.abs(final - TARGET)
    err = np.asarray(r.log_z_increment) - exact
    print(f"  last step's acceptance: mean {final.mean():.3f}, range "
          f"[{final.min():.3f}, {final.max():.3f}] over {args.runs} runs; "
          f"log Z error {err.mean():+.3f} ± {err.std(ddof=1) / np.sqrt(len(err)):.3f}"
          f" (sd {err.std(ddof=1):.3f}); tempering steps {np.mean(r.num_betas):.1f}")
    report(f"SMC {name}: last tempering step's acceptance (target {TARGET})",
           f"{final.mean():.3f}", f"range {final.min():.3f}-{final.max():.3f}, "
           f"{args.runs} runs of {args.particles} particles")
    report(f"SMC {name}: runs ending within 0.1 of target",
           f"{np.mean(off <= 0.1):.2f}", f"{args.runs} runs")
    report(f"SMC {name}: log Z error vs quadrature",
           f"{err.mean():+.3f}", f"sd {err.std(ddof=1):.3f} over {args.runs} runs; "
           f"mean steps {np.mean(r.num_betas):.1f}")


if __name__ == "__main__":
    main()
