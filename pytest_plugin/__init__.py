"""The tnsai-eval pytest plugin (registered through the ``pytest11`` entry point)."""

__all__: list[str] = []
