"""The ``membrane`` command: compile a prompt locally and show where its tokens went.

Nothing here calls a model. ``inspect`` prints the compiled messages region by region with
their token counts, the citation map and the trimming and caching evidence (``--json`` for
machines, ``--html`` for a picture); ``quote`` prices the same compile; ``profile explain``
describes a memory profile preset. The region accounting behind these views is library API in
:mod:`membrane.anatomy`; this package only parses arguments and prints.

Exit codes: 0 on success, 2 for bad arguments or input, 1 for any other Membrane error.
"""

from __future__ import annotations

from membrane.cli._main import main

__all__ = ["main"]
