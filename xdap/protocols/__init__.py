"""Exchange protocols, each ``(Distribution, Parts)`` <-> another library's
objects: the Distributed Array Protocol (``dap``, with its dimension
dictionaries in ``dap_dims``), ``__partitioned__`` (``partitioned``), Apache
Arrow (``arrow``) and Awkward Array (``awkward``)."""
