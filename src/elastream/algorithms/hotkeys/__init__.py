"""Hot-key detection: SpaceSaving top-k, FISH's epoch counters (Algorithm 1), CHK (Algorithm 2)."""
