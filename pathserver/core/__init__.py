"""Numba kernels: arrays and scalars in, arrays and an int status out.

Nothing here validates its inputs: the public wrappers in :mod:`pathserver.grid` validate
once, and the kernels trust them. Every kernel is compiled with ``cache=True, nogil=True``
so searches run truly in parallel on a thread pool. Where numba caches them is the
program's choice, made before these modules are imported (:mod:`pathserver.kernel_cache`).
"""
