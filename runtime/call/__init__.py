"""The call core: one call's life as a sans-IO machine, and its commands."""
