"""KV blocks and the three tiers that hold them (hot / warm / cold), behind one small interface."""
