"""Setup: init, the bundled demo and the cron schedule."""
