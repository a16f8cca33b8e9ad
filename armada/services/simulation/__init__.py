"""What-if replays of the recorded log through the real scheduling core (``armada simulate``)."""
