"""Engine-free vocabulary of every layer: key groups, slots, routing, loads, plans, windows."""
