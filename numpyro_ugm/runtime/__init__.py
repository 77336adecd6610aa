"""The runtime every layer may use: argument checks, the cache of compiled programs,
sharding over devices, processes under jax.distributed, checkpoints and the chunked run
loop."""
