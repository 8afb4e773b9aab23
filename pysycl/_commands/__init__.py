"""Command groups: handler, typed commands, launch preparation, queue, event, host tasks."""
