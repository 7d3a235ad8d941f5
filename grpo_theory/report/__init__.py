"""The paper-ready report: :mod:`.build` (``build_report``) and :mod:`.figures`."""
