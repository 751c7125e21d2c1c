"""The ``active-memory`` command line: thin click commands over the library."""
