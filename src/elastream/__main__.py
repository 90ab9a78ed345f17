"""``python -m elastream``, and the file ``spark-submit`` runs.

``spark-submit [OPTIONS] …/elastream/__main__.py run [OPTIONS]``; ``python -c "import
elastream.__main__ as m; print(m.__file__)"`` prints the path.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file (spark-submit), Python put this package's folder first on the path, where
    # its sub-packages (core, cli, …) would shadow any top-level modules of those names.
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    from elastream.cli.main import main

    sys.exit(main())
