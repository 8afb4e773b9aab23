"""Command groups: handler, typed commands, queue, event, scheduler."""
