"""Fleet controls: executor and node cordons, forgetting an executor, and bulk preempt or
cancel on a queue, an executor or a node."""
