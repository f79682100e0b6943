"""The grounding kit every programmatic domain builds on.

Domain-neutral pieces of programmatic synthesis: count buckets, controls and the candidate loop
(:mod:`.grounding`), screening and rejection (:mod:`.screen`), the scripted dialogue
(:mod:`.dialogue`, :mod:`.acting`) and its seeded phrase grammar (:mod:`.grammar`,
:mod:`.phrasing`). A domain's ``generator.py`` and ``teacher.py`` import from here, never
from another domain.
"""
