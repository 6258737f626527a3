"""Which teacher a reference names — the one owner for every shell that takes ``--teacher``
(``nerservice distil``, ``nerservice train --final --distil``, the driver of ``spark_jobs/train.py --final
--distil``): a model or ensemble folder, a run folder or a store reference, resolved (``artifacts.resolve``: a
store alias pinned to one version), loaded (its manifest verified) and, with a head, seen as that head
(``distil/head.py``).

On the floor of ``artifacts/resolve`` (docs/ARCHITECTURE.md): resolving may reach the optional model store.
"""
from __future__ import annotations

from nerservice.distil.run import Teacher


def load_teacher(ref: str, *, head: str | None = None, single_as_is: bool = False) -> Teacher:
    """``ref`` resolved, pinned and loaded as a teacher; with ``head``, a multi-corpus teacher seen as that head.
    A single-corpus teacher with ``head`` is ``HeadArtifact``'s coded error (it has no heads), or with
    ``single_as_is`` the teacher itself: --cross-fit teachers of either kind may serve a --teacher-head student."""
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.resolve import resolve
    from nerservice.distil.head import head_teacher
    from nerservice.distil.run import teacher_from

    resolved = resolve(ref)
    teacher = teacher_from(load_model(resolved.path), ref=ref, path=resolved.path, name=resolved.name,
                           version=resolved.version)
    if head is None or (single_as_is and not teacher.multi):
        return teacher
    return head_teacher(teacher, head)
