"""The ways to a verdict, one room each, and what they share.

- `protocol.py`: the route protocol (`Route`, `RouteRunner`, `ROUTES`: how `auto` chooses).
- `core.py`: the task, the grade's lifecycle (`Grade`), how a stage fails (`StageFailed`), how
  the grade's commands run (`CommandEnv`).
- `steps.py`: the steps the routes share: the guard and the toolchain (all), the fresh package
  and the submission's build (the replay routes).
- `replay.py`: the replay judge both replay routes share.
- `export.py`: the export route (only text crosses into the verdict process).
- `olean.py`: the olean route (the weaker boundary).
- `comparator/`: the toolchain's own `lake comparator`.
- `checkers.py`: the extra kernels of `kernels = all`, on the export route.

Imports run one way: protocol, core, steps, replay, then the routes; no route imports another
route (the export route calls `checkers.py`), and nothing here imports `pipeline.py`.
"""
