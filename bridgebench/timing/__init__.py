"""The timing kind's parts, as loadtest/ holds the load kind's: iterations of each process execution turned
into warm-up classes, steady states, ratios and verdicts (analysis.py, result.py), lock-step blocks of stepped
processes taking turns apart or together, and drawn layouts (lockstep.py, stepped.py, together.py, layout.py),
what LuaJIT's compiler did (jitdiag.py), counts beside time (time_beside_counts.py), the diff (diff_sides.py
gathers, diff_rules.py judges), and the reports (report/).
The Kind itself, what the engine calls, is campaign/timing.py."""
