"""Scheduling reports: why jobs are (not) running, from the scheduler's bounded cycle history."""
