"""xdap's public functions, one module per category of the Array API
standard (as array-api-strict lays them out): ``creation``,
``data_types``, ``elementwise``, ``indexing``, ``linear_algebra``,
``manipulation``, ``searching``, ``sets``, ``sorting``, ``statistical``,
``utility`` -- NumPy's statistics beyond the standard (``numpy_statistics``:
histogram, bincount, cov, corrcoef) -- and for what distributed arrays add, ``exchange`` (the
protocols, files, gathering) and ``movement`` (redistribution, halos,
migration).

Every function declares its contract (``xdap.contract``): ``@local`` --
no MPI call, checks on agreed state only -- or ``@collective`` -- every
argument checked and agreed in one vote before anything moves.  The
DistArray class (``xdap.array``) is a thin facade over these functions;
they reach DistArrays through ``xdap.arraylike`` and never import it.
"""
