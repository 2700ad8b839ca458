"""Tests of ``bridge/server/tasks``: the tasks extension."""
