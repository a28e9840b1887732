"""Writing configs: materialise teacher-written attributes and rubrics (``coeval generate``),
build a config interactively (``coeval wizard``), describe one as HTML (``coeval describe``)."""
