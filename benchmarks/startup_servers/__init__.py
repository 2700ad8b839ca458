"""The one-tool servers ``benchmarks/startup.py`` spawns: ours, the official
SDK's and fastmcp's, each run as its own users run it."""
