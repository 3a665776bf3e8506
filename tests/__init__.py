"""The project test suite (a package, so that ``tests.*`` never resolves to a site-packages ``tests``)."""
