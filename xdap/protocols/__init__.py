"""Exchange protocols: the Distributed Array Protocol (``dap``) and
``__partitioned__`` (``partitioned``)."""
