"""A call, as the server carries it: one driver per way a call lives.

Every call of a tool or a prompt is a :class:`runtime.call.machine.CallMachine`
(the call's life, written once, sans-IO); this folder holds the thin drivers
that carry its commands out on the server, and what they share:

* ``live``: a 2025-11-25 call driven by its session, with no task of its own
  while it waits on the client (written down ahead in a store when the session
  is durable);
* ``rounds``: a 2026-07-28 round, which goes as far as it can without the
  client and stops at the first question the client has not answered
  (``input_required``);
* ``work``: the work a call waits on besides the client (its steps, and the
  samples the server's own model answers), run in a nursery its owner closes;
* ``outcome``: what a finished call answers, in both eras.

The tasks extension's driver is :mod:`bridge.server.tasks`. It does not decide
what an effect means (the machine does), speak JSON-RPC (the session does) or
keep records (:mod:`bridge.durable`).
"""
